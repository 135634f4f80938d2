"""Centralized SNCP, the benchmark of P5 Sec. V-D, and the rho continuation every P5 run uses.

SNCP ([16] = Wang, Chang, Cui, Pang, "Clustering by orthogonal NMF model and non-convex
penalty optimization", arXiv:1906.00570) solves the penalised ONMF problem for a fixed rho,
then multiplies rho by 1.5 and solves again, until the objective stops moving (Sec. V-D).

Readings:
- Inner solver. P5 cites [16, Algorithms 1 & 2] without restating them; [16] solves each
  penalised problem with PALM (Bolte, Sabach & Teboulle 2014): one projected-gradient step on
  H, then one on W at the new H, each at step 1/L of its block (c = L_H(W),
  d = lambda_max(H H^T)), repeated to convergence (`sncp_iteration`). An earlier reading took
  one SNCP iteration as one FedCGds round with all data at one client (Q1 = Q2 = 100 block
  steps at step 2/L, Remark 3's "nothing but" this two-block method); it made FedCGds with
  m = P equal to SNCP seed for seed, so it could never test "FedCGds beats SNCP"
  (`palm_iteration` still takes any Q1, Q2 and step; the paper suite keeps it as the
  `sncp_fedcgds_twin` ablation). FedCGds with P = 1 equals `palm_iteration` with Q1, Q2 and
  step 2/L, step for step.
- Cost. Repeated H steps share W, so they use W^T W and W^T X, computed once per iteration
  (`onmf.h_step_gram`), and the Q2 W steps share H H^T and X H^T: an iteration costs two
  M K N products plus O(Q1 K^2 N + Q2 M K^2), and no M x N residual is ever formed.
  `central_parts` reads F the same way, from ||X||^2 and the two statistics.
- Initial point. Sec. V uses "10 common, randomly generated initial points" and says no
  more. `initial_point` draws W entries uniformly in the box [min X, max X] (the feasible set
  of W, known to a server from the clients' minima and maxima) and H entries uniformly in
  [0, 1]; it needs no sample of any client.
- Where rho is read: see `onmf` (eps compares two objectives at the current rho).
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np
import torch

from clusterfl.papers.p5.training.context import objective_from_statistics
from clusterfl.papers.p5.training.onmf import (
    NU,
    ObjectiveParts,
    SncpSchedule,
    WBounds,
    h_step_gram,
    lipschitz_h,
    lipschitz_w,
    next_rho,
    relative_change,
    w_step,
)


@dataclass(frozen=True)
class CentralState:
    w: torch.Tensor  # M x K centroids
    h: torch.Tensor  # K x N assignments
    rho: float


def initial_point(features: int, clusters: int, samples: int, bounds: WBounds,
                  rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(W0 uniform in the box of W, H0 uniform in [0, 1]), float64."""
    w = rng.uniform(bounds.low, bounds.high, (features, clusters))
    h = rng.uniform(0.0, 1.0, (clusters, samples))
    return torch.as_tensor(w, dtype=torch.float64), torch.as_tensor(h, dtype=torch.float64)


def palm_iteration(x: torch.Tensor, state: CentralState, bounds: WBounds, nu: float = NU,
                   h_steps: int = 1, w_steps: int = 1, c_factor: float = 0.5,
                   d_factor: float = 0.5) -> CentralState:
    """Eq. (3): `h_steps` projected steps on H with c = c_factor * L_H(W), then `w_steps`
    projected steps on W with d = d_factor * lambda_max(H H^T) at the new H."""
    w, h = state.w, state.h
    c = c_factor * lipschitz_h(w, state.rho, nu)
    wtw, wtx = w.T @ w, w.T @ x
    for _ in range(h_steps):
        h = h_step_gram(wtw, wtx, h, c, state.rho, nu)
    hht, xht = h @ h.T, x @ h.T
    d = d_factor * lipschitz_w(hht)
    for _ in range(w_steps):
        w = w_step(w, hht, xht, d, bounds)
    return CentralState(w=w, h=h, rho=state.rho)


def sncp_iteration(x: torch.Tensor, state: CentralState, bounds: WBounds, nu: float = NU
                   ) -> CentralState:
    """One PALM iteration of centralized SNCP ([16]): one H step, then one W step, at 1/L."""
    return palm_iteration(x, state, bounds, nu, 1, 1, 1.0, 1.0)


def central_parts(x: torch.Tensor, data_norm: float, state: CentralState) -> ObjectiveParts:
    """F's parts at (W, H) from ||X||_F^2, H H^T and X H^T (no M x N residual)."""
    h = state.h
    return objective_from_statistics(data_norm, state.w, h @ h.T, x @ h.T, h)


class HasRho(Protocol):
    """A dataclass state with a rho (`continuation` replaces it)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def rho(self) -> float: ...


S = TypeVar("S", bound=HasRho)


@dataclass(frozen=True)
class Trace:
    """Per round: the objective at the rho that round used, and that rho."""

    objective: list[float]
    rho: list[float]
    converged: bool


def continuation(advance: Callable[[S], S], parts: Callable[[S], ObjectiveParts], state: S,
                 schedule: SncpSchedule, max_rounds: int, nu: float = NU) -> tuple[S, Trace]:
    """Run `advance` round after round under SNCP's rho schedule (Sec. V-D) until the
    relative objective change falls below `schedule.stop_tol` or `max_rounds` pass."""
    previous = parts(state)
    objective, rhos = [previous.value(state.rho, nu)], [state.rho]
    for _ in range(max_rounds):
        state = advance(state)
        current = parts(state)
        eps = relative_change(previous.value(state.rho, nu), current.value(state.rho, nu))
        objective.append(current.value(state.rho, nu))
        rhos.append(state.rho)
        rho, stop = next_rho(state.rho, eps, schedule)
        state = dataclasses.replace(state, rho=rho)
        previous = current
        if stop:
            return state, Trace(objective, rhos, converged=True)
    return state, Trace(objective, rhos, converged=False)
