"""Centralized SNCP (P5 Sec. V-D, the benchmark [16]) on the round loop, on all N samples at
once; it uploads nothing; rho's continuation and the stop rule are `base.OnmfAlgorithm`'s.

SNCP as [16] runs it (the default `sncp` entry): PALM (Bolte, Sabach & Teboulle 2014), one
projected-gradient step on H then one on W per iteration (`h_steps = w_steps = 1`), each at
step 1/L of its block (`step_factor` 1: c = L_H(W), d = lambda_max(H H^T)), run to
convergence; one round of the loop is `iterations` such PALM iterations, each followed by
SNCP's schedule (eps between consecutive iterations, rho x growth, stop), exactly as the pure
`sncp.continuation` over iterations: a round only batches iterations for the history. (An
earlier version read eps once per round, between objectives `iterations` steps apart; at 30
iterations a round that eps rarely fell below 2e-5, rho stayed near 1e-8 for 100 rounds and
SNCP ended at 35-40 % accuracy on the reduced synthetic set, docs/p5.md.) The earlier reading,
one round = FedCGds's Q1 = Q2 = 100 block steps at step 2/L (`step_factor` 0.5), made SNCP
FedCGds with all clients seed for seed; it stays as the `sncp_fedcgds_twin` ablation.
"""

import dataclasses
from dataclasses import dataclass

import torch

from clusterfl.core.options import require
from clusterfl.papers.p5.training.context import central_x
from clusterfl.papers.p5.training.methods.base import OnmfAlgorithm, OnmfHyper, Snapshot
from clusterfl.papers.p5.training.onmf import SncpSchedule
from clusterfl.papers.p5.training.sncp import (
    CentralState,
    central_parts,
    continuation,
    palm_iteration,
)


@dataclass(frozen=True)
class SncpHyper(OnmfHyper):
    h_steps: int = 1  # H steps per PALM iteration (1: PALM)
    w_steps: int = 1  # W steps per PALM iteration
    step_factor: float = 1.0  # c = step_factor L_H, d = step_factor lambda_max: step 1/(f L)
    iterations: int = 1  # PALM iterations per round of the loop

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.h_steps >= 1, f"{key}.h_steps", "must be >= 1")
        require(self.w_steps >= 1, f"{key}.w_steps", "must be >= 1")
        require(self.step_factor > 0, f"{key}.step_factor", "must be > 0")
        require(self.iterations >= 1, f"{key}.iterations", "must be >= 1")


class CentralSncp(OnmfAlgorithm[SncpHyper]):
    def start(self, w: torch.Tensor, h: torch.Tensor) -> None:
        fed = self.ctx.fed
        self.x = central_x(fed)
        self.state = CentralState(w=w, h=fed.flat_h(h), rho=self.rho)

    def advance(self, clients: torch.Tensor) -> int:
        """`iterations` PALM iterations under SNCP's schedule, read after each one."""
        h, s = self.hyper, self.schedule
        schedule = s if h.continuation else SncpSchedule(s.grow_tol, s.stop_tol, 1.0)
        self.state, trace = continuation(
            lambda st: palm_iteration(self.x, st, self.ctx.bounds, self.nu, h.h_steps, h.w_steps,
                                      h.step_factor, h.step_factor),
            lambda st: central_parts(self.x, self.ctx.data_norm, st),
            dataclasses.replace(self.state, rho=self.rho), schedule, h.iterations, self.nu)
        self.used_rho, self.iterations_converged = trace.rho[-1], trace.converged
        return 0

    def round(self, round_: int, clients: torch.Tensor) -> None:
        """The base round's bookkeeping, with rho and the stop rule from `advance`'s
        per-iteration schedule instead of one eps per round."""
        self.uploaded_round = 0
        if self.converged:
            return
        self.advance(clients)
        self.rho, self.converged = self.state.rho, self.iterations_converged
        self.snapshot = self.current()
        self.previous = self.parts()

    def current(self) -> Snapshot:
        h = self.state.h
        return Snapshot(self.state.w, self.ctx.fed.padded_h(h), h @ h.T, self.x @ h.T)
