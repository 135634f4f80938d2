"""Centralized SNCP (P5 Sec. V-D, the benchmark [16]) on the round loop: one round is one
iteration of eq. (3), `h_steps` projected steps on H then `w_steps` on W (default 100 and
100, FedCGds's Q1 and Q2: see `sncp`'s Readings; `sncp.palm_iteration`; c = 1/2 L_H,
d = 1/2 lambda_max(H H^T)), on all N samples at once.
It uploads nothing; rho's continuation and the stop rule are `base.OnmfAlgorithm`'s."""

import dataclasses
from dataclasses import dataclass

import torch

from clusterfl.options import require
from clusterfl.papers.p5.training.context import central_x
from clusterfl.papers.p5.training.methods.base import OnmfAlgorithm, OnmfHyper, Snapshot
from clusterfl.papers.p5.training.sncp import (
    SNCP_H_STEPS,
    SNCP_W_STEPS,
    CentralState,
    palm_iteration,
)


@dataclass(frozen=True)
class SncpHyper(OnmfHyper):
    h_steps: int = SNCP_H_STEPS  # Q1
    w_steps: int = SNCP_W_STEPS  # Q2

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.h_steps >= 1, f"{key}.h_steps", "must be >= 1")
        require(self.w_steps >= 1, f"{key}.w_steps", "must be >= 1")


class CentralSncp(OnmfAlgorithm):
    Hyper = SncpHyper
    hyper: SncpHyper

    def start(self, w: torch.Tensor, h: torch.Tensor) -> None:
        fed = self.ctx.fed
        self.x = central_x(fed)
        self.state = CentralState(w=w, h=fed.flat_h(h), rho=self.rho)

    def advance(self, clients: torch.Tensor) -> int:
        state = dataclasses.replace(self.state, rho=self.rho)
        self.state = palm_iteration(self.x, state, self.ctx.bounds, self.nu,
                                    self.hyper.h_steps, self.hyper.w_steps)
        return 0

    def current(self) -> Snapshot:
        h = self.state.h
        return Snapshot(self.state.w, self.ctx.fed.padded_h(h), h @ h.T, self.x @ h.T)
