"""FedAvg (McMahan et al. 2017, "Communication-Efficient Learning of Deep Networks from
Decentralized Data", Algorithm 1).

Each round the selected clients start from the global model w, run local SGD, and the server
sets w <- sum_k (n_k / n) w_k over the selected clients. Every client is evaluated with w.

`server_lr` generalises the server step to w <- w + server_lr * (avg_k w_k - w) (Reddi et
al. 2021, "Adaptive Federated Optimization", FedAvg with a server learning rate); the default
1.0 is McMahan's FedAvg exactly.
"""

from dataclasses import dataclass
from typing import ClassVar, TypeVar

import torch

from clusterfl.algorithms.base import NeuralAlgorithm
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import broadcast, mix, weighted_average
from clusterfl.training.loop import Family, H


@dataclass(frozen=True)
class FedAvgHyper:
    server_lr: float = 1.0

    def validate(self, key: str) -> None:
        require(self.server_lr > 0, f"{key}.server_lr", "must be > 0")


class GlobalModel(NeuralAlgorithm[H]):
    """One global model that every client uses: FedAvg's setup and evaluation, shared by
    FedProx (whose hyperparameters are not FedAvg's)."""

    family: ClassVar[Family] = "global"  # FedAvg-FT overrides it

    def setup(self) -> None:
        self.global_model = self.initial_model()

    def client_models(self) -> Tensors:
        return broadcast(self.global_model, self.num_clients)


# FedAvg-FT's hyperparameters extend FedAvg's
A = TypeVar("A", bound=FedAvgHyper)


class FedAvgBase(GlobalModel[A]):
    """FedAvg's rounds, generic in its hyperparameters: FedAvg and FedAvg + FT name theirs."""

    def round(self, round_: int, clients: torch.Tensor) -> None:
        local = self.train_clients(broadcast(self.global_model, len(clients)), clients)
        average = weighted_average(local, self.train_sizes[clients])
        self.global_model = mix(self.global_model, average, self.hyper.server_lr)


class FedAvg(FedAvgBase[FedAvgHyper]):
    """FedAvg (the module's docstring)."""
