"""The true-cluster oracle for neural models: FedAvg (McMahan et al. 2017, Algorithm 1) run
inside each true cluster. It is the rate P4's theory compares PFL-TC against (Remark 1: the
cluster means, the clusters known), which the paper does not plot.

    K cluster models w_1..w_K (K = the number of true clusters)
    each round: every selected client i of true cluster k(i) runs local SGD from w_{k(i)}
                w_k <- sum over the selected members of k of (n_i / n) w_i
    client i is evaluated with w_{k(i)}

Readings:
- This is the one algorithm that reads the partition's true clusters for training.
- The K models start from one draw of the experiment's initialisation, FedAvg's own (and the
  shared start of the neural PFL-TC / PDL-TC): the clusters differ by their data only. With
  one true cluster the oracle is FedAvg (server_lr 1) number for number (tested).
- A cluster with no selected client keeps its model (`clustering.cluster_average`).
"""

from dataclasses import dataclass

import numpy as np
import torch

from clusterfl.algorithms.base import NeuralAlgorithm
from clusterfl.core.errors import UserError
from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import broadcast, gather
from clusterfl.steps.clustering import cluster_average


@dataclass(frozen=True)
class ClusterFedAvgHyper:
    """No hyperparameters beyond the experiment's schedule (FedAvg with server_lr 1)."""


class ClusterFedAvg(NeuralAlgorithm[ClusterFedAvgHyper]):
    def setup(self) -> None:
        truth = self.ctx.truth.cluster
        if truth is None:
            raise UserError("oracle_fedavg: the partition has no true clusters (use a scheme "
                            "that keeps them, e.g. rotation)")
        self.truth = torch.as_tensor(np.asarray(truth), dtype=torch.int64)
        self.cluster_models = broadcast(self.initial_model(), int(self.truth.max()) + 1)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        start = gather(self.cluster_models, self.truth[clients])
        local = self.train_clients(start, clients)
        self.cluster_models = cluster_average(local, self.truth[clients].numpy(),
                                              self.train_sizes[clients], self.cluster_models)

    def client_models(self) -> Tensors:
        return gather(self.cluster_models, self.truth)

    def centers(self) -> Tensors:
        return self.cluster_models

    def assignment(self) -> torch.Tensor:
        return self.truth
