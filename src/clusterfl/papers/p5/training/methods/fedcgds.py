"""FedCGds (P5 Algorithm 2) on the round loop: m = `participants` of the P clients per round
(None: `training.clients_per_round`, else all), drawn uniformly without replacement from the
run's generator; each takes Q1 = `h_steps` H steps and uploads (U_p, V_p); the server takes
Q2 = `w_steps` W steps on its running sums (`fedcgds.fedcgds_round`, whose docstring has the
readings). Sec. V-D: Q1 = Q2 = 100; Figs. 4-5: Q2 = 100, Q1 = 10 for m >= 50 and 100 for
m < 50. rho's continuation and the stop rule are `base.OnmfAlgorithm`'s."""

import dataclasses
from dataclasses import dataclass
from typing import Literal

import torch

from clusterfl.core.options import require
from clusterfl.papers.p5.training.fedcgds import fedcgds_init, fedcgds_round, sample_clients
from clusterfl.papers.p5.training.methods.base import OnmfAlgorithm, OnmfHyper, Snapshot


@dataclass(frozen=True)
class FedCGdsHyper(OnmfHyper):
    h_steps: int = 100  # Q1
    w_steps: int = 100  # Q2
    participants: int | None = None  # m
    h_init: Literal["random", "warm"] = "random"  # warm: Q1 H steps at W^0 before G1^0, G2^0

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.h_steps >= 1, f"{key}.h_steps", "must be >= 1")
        require(self.w_steps >= 1, f"{key}.w_steps", "must be >= 1")
        require(self.participants is None or self.participants >= 1,
                f"{key}.participants", "must be >= 1")
        require(self.h_init in ("random", "warm"), f"{key}.h_init", "must be random or warm")


class FedCGds(OnmfAlgorithm[FedCGdsHyper]):
    def start(self, w: torch.Tensor, h: torch.Tensor) -> None:
        warm = self.hyper.h_steps if self.hyper.h_init == "warm" else 0
        self.state = fedcgds_init(self.ctx.fed, w, h, self.rho, self.nu, warm)
        self.uploaded_total = self.state.uploaded  # G1^0, G2^0's upload, before round 1

    def select_clients(self, round_: int) -> torch.Tensor:
        m = self.hyper.participants or self.ctx.clients_per_round
        if m is None or m >= self.num_clients:
            return self.all_clients
        return sample_clients(self.num_clients, m, self.rng)

    def advance(self, clients: torch.Tensor) -> int:
        before = self.state.uploaded
        self.state = fedcgds_round(self.ctx.fed, dataclasses.replace(self.state, rho=self.rho),
                                   clients, self.ctx.bounds, self.nu, self.hyper.h_steps,
                                   self.hyper.w_steps)
        return self.state.uploaded - before

    def current(self) -> Snapshot:
        return Snapshot(self.state.w, self.state.h, self.state.g1, self.state.g2)
