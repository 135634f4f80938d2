"""What every P5 algorithm shares on the round loop: the context (`context.build_context`),
the view the evaluators read, the per-round communication diagnostics, and, for the ONMF
methods, SNCP's rho continuation and stop rule applied round by round.

Readings (besides those of `onmf`, `sncp`, `fedcavg`, `fedcgds`):
- Common initial points (Sec. V: "10 common, randomly generated initial points"): every ONMF
  algorithm of a seed starts from the same (W0, H0), drawn by `sncp.initial_point` from
  `default_rng([INIT_STREAM, seed])`, a stream no other draw uses; the suite's seeds are
  the trials (the paper averages 10, the paper suite runs 5).
- One round: FedCAvg / FedCGds, one communication round; centralized SNCP, one iteration of
  eq. (3). After it, eps = |F_s - F_{s-1}| / F_{s-1} at the round's rho decides: stop
  (eps < stop_tol), grow rho x growth (eps < grow_tol, only with `continuation`), or go on.
- After the stop rule fires the run stays put: later rounds do no work, upload nothing and
  record the same W, H (the loop has a fixed number of rounds; the curves end flat).
- Uploads: real numbers sent to the server in the round (Sec. V, "Communication cost"):
  FedCAvg M K P, FedCGds (M K + K^2) m, the centralized methods 0.
"""

from abc import abstractmethod
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import torch

from clusterfl.core.options import require
from clusterfl.core.types import SeedInputs, View
from clusterfl.papers.p5.training.context import P5Context, build_context, objective_from_statistics
from clusterfl.papers.p5.training.evaluators import CLUSTERING, OBJECTIVE_EVALUATOR
from clusterfl.papers.p5.training.metrics import CONVERGED, RHO, UPLOAD_FLOATS, UPLOAD_TOTAL
from clusterfl.papers.p5.training.onmf import (
    NU,
    ObjectiveParts,
    SncpSchedule,
    next_rho,
    relative_change,
)
from clusterfl.papers.p5.training.onmf import RHO as RHO0
from clusterfl.papers.p5.training.sncp import initial_point
from clusterfl.training.loop import FederatedAlgorithm

INIT_STREAM = 5  # the common initial point's generator: default_rng([INIT_STREAM, seed])


@dataclass(frozen=True)
class Snapshot:
    """What the view shows: W, H per client (P, K, N_max) and the summed statistics."""

    w: torch.Tensor
    h: torch.Tensor
    hht: torch.Tensor
    xht: torch.Tensor


class HasClusters(Protocol):
    """Every P5 method's hyperparameters name K (None: the dataset's classes)."""

    @property
    def clusters(self) -> int | None: ...


C = TypeVar("C", bound=HasClusters)


class P5Algorithm(FederatedAlgorithm[C]):
    """The context, view and diagnostics of every P5 method; `self.snapshot` is set by
    subclasses."""

    ctx: P5Context
    snapshot: Snapshot
    transient = (*FederatedAlgorithm.transient, "x")  # the centralized methods' data matrix

    @classmethod
    def make_context(cls, run: SeedInputs) -> P5Context:
        return build_context(run)

    def __init__(self, hyper: C, ctx: P5Context) -> None:
        super().__init__(hyper, ctx)
        self.clusters = hyper.clusters or ctx.clusters
        self.used_rho, self.nu = RHO0, NU
        self.uploaded_round = self.uploaded_total = 0
        self.converged = False

    def default_evaluators(self) -> list[str]:
        return [CLUSTERING, OBJECTIVE_EVALUATOR]

    def view(self) -> View:
        s = self.snapshot
        return View(extras={"w": s.w, "h": s.h, "hht": s.hht, "xht": s.xht,
                            "rho": self.used_rho, "nu": self.nu})

    def round_metrics(self) -> dict[str, float]:
        return {UPLOAD_FLOATS.name: self.uploaded_round, UPLOAD_TOTAL.name: self.uploaded_total,
                RHO.name: self.used_rho, CONVERGED.name: float(self.converged)}


@dataclass(frozen=True)
class OnmfHyper:
    """The ONMF model and SNCP schedule (Sec. V): rho0 = 1e-8, nu = 1e-10; rho x 1.5 when
    eps < grow_tol (2e-5 synthetic, 8e-5 MNIST); stop when eps < 1e-8. `continuation: false`
    keeps rho fixed (the convergence runs of Figs. 4-5). `clusters`: K (None: the dataset's
    classes)."""

    clusters: int | None = None
    rho: float = RHO0
    nu: float = NU
    continuation: bool = True
    grow_tol: float = 2e-5
    stop_tol: float = 1e-8
    growth: float = 1.5

    def validate(self, key: str) -> None:
        require(self.clusters is None or self.clusters >= 2, f"{key}.clusters", "must be >= 2")
        require(self.rho > 0, f"{key}.rho", "must be > 0")
        require(self.nu >= 0, f"{key}.nu", "must be >= 0")
        require(self.growth >= 1, f"{key}.growth", "must be >= 1")
        require(0 <= self.stop_tol <= self.grow_tol, f"{key}.stop_tol",
                "must be in [0, grow_tol]")


OH = TypeVar("OH", bound=OnmfHyper)


class OnmfAlgorithm(P5Algorithm[OH]):
    """An ONMF method under SNCP's schedule: subclasses `start` from the common initial
    point, `advance` one round (returning the numbers uploaded) and give their `current`
    snapshot."""

    @abstractmethod
    def start(self, w: torch.Tensor, h: torch.Tensor) -> None:
        """Initial state from W0 (M x K) and H0 stacked per client (P, K, N_max)."""

    @abstractmethod
    def advance(self, clients: torch.Tensor) -> int:
        """One round at rho `self.rho`; the real numbers uploaded."""

    @abstractmethod
    def current(self) -> Snapshot: ...

    def setup(self) -> None:
        fed = self.ctx.fed
        rng = np.random.default_rng([INIT_STREAM, self.ctx.seed])
        w, h = initial_point(fed.features, self.clusters, int(fed.sizes.sum()), self.ctx.bounds,
                             rng)
        device = fed.x.device
        self.rho, self.nu = self.hyper.rho, self.hyper.nu
        self.used_rho = self.rho
        self.schedule = SncpSchedule(self.hyper.grow_tol, self.hyper.stop_tol, self.hyper.growth)
        self.start(w.to(device), fed.padded_h(h.to(device)))
        self.snapshot = self.current()
        self.previous = self.parts()

    def parts(self) -> ObjectiveParts:
        s = self.snapshot
        return objective_from_statistics(self.ctx.data_norm, s.w, s.hht, s.xht, s.h)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        self.uploaded_round = 0
        if self.converged:
            return
        self.used_rho = self.rho
        self.uploaded_round = self.advance(clients)
        self.uploaded_total += self.uploaded_round
        self.snapshot = self.current()
        current = self.parts()
        eps = relative_change(self.previous.value(self.rho, self.nu),
                              current.value(self.rho, self.nu))
        self.previous = current
        if self.hyper.continuation:
            self.rho, self.converged = next_rho(self.rho, eps, self.schedule)
        else:
            self.converged = eps < self.schedule.stop_tol
