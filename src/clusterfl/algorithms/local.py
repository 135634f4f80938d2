"""Local (standalone) training: every client trains its own model and never communicates.

All clients start from the same initial model (one draw of the run's generator), so Local and
FedAvg differ only in the server step. Every round each selected client continues local
training of its own model; it is evaluated on its own test split.
"""

from dataclasses import dataclass

import torch

from clusterfl.algorithms.base import NeuralAlgorithm
from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import broadcast, gather, scatter


@dataclass(frozen=True)
class LocalHyper:
    """Local training has no hyperparameters beyond the experiment's schedule."""


class Local(NeuralAlgorithm[LocalHyper]):
    family = "local"

    def setup(self) -> None:
        self.models = broadcast(self.initial_model(), self.num_clients)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        trained = self.train_clients(gather(self.models, clients), clients)
        self.models = scatter(self.models, clients, trained)

    def client_models(self) -> Tensors:
        return self.models
