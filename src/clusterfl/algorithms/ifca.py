"""IFCA, the Iterative Federated Clustering Algorithm (Ghosh, Chung, Yin & Ramchandran 2020,
"An Efficient Framework for Clustered Federated Learning", NeurIPS, Algorithm 1), read with
the official code `jichan3751/ifca`.

    server keeps K cluster models theta_1 .. theta_K
    for t = 0 .. T-1:
        each selected client i estimates its cluster j_i = argmin_j F_i(theta_j)
            (mean loss of theta_j on i's training data)
        model averaging:    i runs local SGD from theta_{j_i} and uploads the model
        gradient averaging: i uploads one gradient of F_i at theta_{j_i} (full local data)
        theta_j <- mean over the clients with j_i = j of their upload
                   (for gradients: theta_j - lr * mean gradient, the same thing)

The server's mean: `weighting: uniform` (default) is Algorithm 1's option II as written,
sum_i s_ij theta_i / sum_i s_ij, and the official code's (`global_param_update`: the sum over
the cluster's models divided by their count); `samples` weights each upload by its client's
training samples (FedAvg's n_k / n), the earlier default here, kept as a named variant. The
two agree where every client holds as many samples (P4's threshold data).

Readings:
- Initialisation: K independent draws of the model from the run's generator (the official
  MNIST/CIFAR runs use random, independent inits). P1 says IFCA "works with good
  initialization"; a ground-truth-aware init would need the true clusters, so we do not offer it.
- A cluster no selected client picks keeps its model.
- Gradient averaging takes one full-batch gradient step per round at the schedule's lr
  (IFCA Algorithm 1, option I); the average of one-step models equals the gradient step,
  averaged over the cluster's members (option I's step over all m selected machines, the
  official synthetic code's, would scale it by the cluster's share of them: not offered).
- Test time: client i uses the cluster model with the lowest loss on i's *training* data,
  re-estimated after each server step with the new models (the label-free reading; the
  official code's test-label-based assignment is not offered). The same estimate starts the
  next round, since neither the models nor the data change in between.
- Partitions with held-out sets per distribution (P2's mixtures) are evaluated with FedSoft's
  protocol (the `holdout` evaluator): IFCA's importance weights are one-hot on the assigned cluster,
  so a client's local model is its cluster's model, as the protocol asks.
"""

from dataclasses import dataclass
from typing import Literal

import torch

from clusterfl.algorithms.base import OneModelPerCluster, Weighting, upload_weights
from clusterfl.core.options import require
from clusterfl.steps.aggregation import gather
from clusterfl.steps.clustering import cluster_average, lowest_loss_cluster


@dataclass(frozen=True)
class IfcaHyper:
    num_clusters: int = 2
    variant: Literal["model", "gradient"] = "model"
    weighting: Weighting = "uniform"  # the server's mean (module docstring)

    def validate(self, key: str) -> None:
        require(self.num_clusters >= 1, f"{key}.num_clusters", "must be >= 1")
        require(self.weighting in ("uniform", "samples"), f"{key}.weighting",
                "must be uniform or samples")


class Ifca(OneModelPerCluster[IfcaHyper]):
    family = "clustered"

    def setup(self) -> None:
        draws = [self.initial_model() for _ in range(self.hyper.num_clusters)]
        self.cluster_models = {k: torch.stack([d[k] for d in draws]) for k in draws[0]}
        self.clusters = self.estimate_clusters()

    def estimate_clusters(self) -> torch.Tensor:
        """Every client's cluster identity under the current models (training loss)."""
        losses, mask = self.engine.sample_losses(self.cluster_models, self.all_clients,
                                                 "train")
        return lowest_loss_cluster(losses, mask)

    def round(self, round_: int, clients: torch.Tensor) -> None:
        start = gather(self.cluster_models, self.clusters[clients])
        if self.hyper.variant == "gradient":
            full_batch = int(self.train_sizes[clients].max())
            plan = self.local_plan(clients, local_steps=1, batch_size=full_batch)
            local = self.train_clients(start, clients, plan=plan)
        else:
            local = self.train_clients(start, clients)
        labels = self.clusters[clients].cpu().numpy()
        weights = upload_weights(self.hyper.weighting, self.train_sizes, clients)
        self.cluster_models = cluster_average(local, labels, weights, self.cluster_models)
        self.clusters = self.estimate_clusters()

