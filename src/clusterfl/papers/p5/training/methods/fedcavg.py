"""FedCAvg (P5 Algorithm 1) on the round loop: every round all P clients take Q1 =
`h_steps` H steps and Q2 = floor(q_hat / s) + 1 local W steps, the server averages
(`fedcavg.fedcavg_round`, whose docstring has the readings). Sec. V-D: Q1 = 10, Q-hat = 10.
All clients take part (the paper's FedCAvg has no partial participation); each uploads W_p,
M K numbers. rho's continuation and the stop rule are `base.OnmfAlgorithm`'s."""

import dataclasses
from dataclasses import dataclass

import torch

from clusterfl.core.options import require
from clusterfl.papers.p5.training.clients import client_statistics
from clusterfl.papers.p5.training.fedcavg import FedCAvgState, fedcavg_round
from clusterfl.papers.p5.training.methods.base import OnmfAlgorithm, OnmfHyper, Snapshot


@dataclass(frozen=True)
class FedCAvgHyper(OnmfHyper):
    h_steps: int = 10  # Q1
    q_hat: int = 10  # Q2^s = floor(q_hat / s) + 1

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.h_steps >= 1, f"{key}.h_steps", "must be >= 1")
        require(self.q_hat >= 0, f"{key}.q_hat", "must be >= 0")


class FedCAvg(OnmfAlgorithm[FedCAvgHyper]):
    def start(self, w: torch.Tensor, h: torch.Tensor) -> None:
        self.state = FedCAvgState(w=w, h=h, rho=self.rho)

    def advance(self, clients: torch.Tensor) -> int:
        before = self.state.uploaded
        self.state = fedcavg_round(self.ctx.fed, dataclasses.replace(self.state, rho=self.rho),
                                   self.ctx.bounds, self.nu, self.hyper.h_steps,
                                   self.hyper.q_hat)
        return self.state.uploaded - before

    def select_clients(self, round_: int) -> torch.Tensor:
        return self.all_clients

    def current(self) -> Snapshot:
        hht, xht = client_statistics(self.ctx.fed, self.state.h)
        return Snapshot(self.state.w, self.state.h, hht.sum(dim=0), xht.sum(dim=0))
