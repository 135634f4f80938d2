"""pFedKM (P1: "Personalized Federated Learning with Clustered Generalization", Algorithm 1,
Sec. 4.2): pFedMe's Moreau-envelope clients guided by K generalized models found by k-means.

    Omega_K^0: K generalized models, all equal to one initial model (proof of Theorem 2:
               "the global models are initialized from a same one")
    for t = 0 .. T-1:
        client i starts from its cluster's model: omega_{i,0} = omega_{c(i)}   (Omega_K J^t)
        R local rounds, each on a fresh mini-batch:
            theta_i ~= argmin f_i(theta) + lam/2 ||theta - omega_{i,r}||^2        (pFedMe)
            omega_{i,r+1} = omega_{i,r} - eta * lam * (omega_{i,r} - theta_i)
        server: k-means (k-means++ seeding) on the uploaded omega_{i,R} -> clusters C_j
                Omega_K^{t+1} = (1 - beta) Omega_K^t + beta * Omega_{I,R} P^{t+1}
                (P^{t+1}[i, j] = 1/|C_j| for i in C_j: each new model is its cluster's mean)
    output: the personalized models theta_i, evaluated on each client's own test split

Readings of what the paper leaves open:
- k-means labels are arbitrary, but (1 - beta) Omega_K^t + beta * (...) P^{t+1} needs new
  cluster j to continue old model j (the paper's Q^t is that correspondence). We match the new
  cluster means to the old models by minimum total squared distance (Hungarian); with the
  paper's beta = 1 the matching only keeps labels stable for the assignment colour map.
- k-means runs on the flattened parameters in float64, one k-means++ seeding per round
  (`kmeans_runs`, scikit-learn's n_init), from a generator of its own so that K = 1 consumes
  the same random numbers as pFedMe and reproduces it exactly.
- With client sampling, only the selected clients upload and are clustered; the others keep
  their previous cluster. A cluster that receives no client keeps its model.
- Everything else (inner solver, personal_lr, mu, weighting, train_all_clients) is pFedMe's
  and documented there; the cluster mean is uniform (the paper's P^{t+1}) by default.
- Training that diverges (non-finite uploads) stops the run with one line: k-means has no
  answer for NaN models (pFedMe, without a clustering step, runs on at chance accuracy).
- The `model_views` evaluator's "global" models are each client's cluster model: the cluster
  mean before the beta-mix and the generalized model after it.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from clusterfl.algorithms.base import upload_weights
from clusterfl.algorithms.pfedme import PFedMeBase, PFedMeHyper
from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import broadcast, gather, mix
from clusterfl.steps.clustering import (
    KMeansResult,
    align_to,
    cluster_average,
    flatten,
    kmeans_models,
    mean_pairwise_distance,
)


@dataclass(frozen=True)
class PFedKMHyper(PFedMeHyper):
    num_clusters: int = 3
    kmeans_runs: int = 1

    def validate(self, key: str) -> None:
        super().validate(key)
        require(self.num_clusters >= 1, f"{key}.num_clusters", "must be >= 1")
        require(self.kmeans_runs >= 1, f"{key}.kmeans_runs", "must be >= 1")


def clustered_means(
    uploaded: Tensors, generalized: Tensors, weights: torch.Tensor,
    rng: np.random.Generator, kmeans_runs: int = 1,
) -> tuple[Tensors, np.ndarray, KMeansResult]:
    """Algorithm 1, line 10 before the beta-mix: k-means on the uploads and each cluster's
    mean (Omega_{I,R} P^{t+1}). Returns the means (a cluster without uploads keeps its old
    model), each upload's cluster (aligned to the old models) and the k-means run."""
    k = next(iter(generalized.values())).shape[0]
    points = flatten(uploaded).double()
    if not torch.isfinite(points).all():
        raise UserError("pfedkm: the uploaded models are not finite (training diverged), so "
                        "k-means cannot cluster them; lower lr or personal_lr")
    found = kmeans_models(points, k, rng, kmeans_runs)
    means = torch.stack([points[torch.from_numpy(found.labels == j)].mean(0)
                         for j in range(int(found.labels.max()) + 1)])
    labels = align_to(flatten(generalized), means)[found.labels]
    return cluster_average(uploaded, labels, weights, generalized), labels, found


class ServerStep(NamedTuple):
    """What `clustered_server_step` returns."""

    models: Tensors  # the new generalized models Omega_K, after the beta-mix
    means: Tensors  # the cluster means, before the beta-mix (the `global` model view)
    labels: np.ndarray  # each upload's cluster, aligned to the old models
    kmeans: KMeansResult


def clustered_server_step(
    uploaded: Tensors, generalized: Tensors, weights: torch.Tensor, beta: float,
    rng: np.random.Generator, kmeans_runs: int = 1,
) -> ServerStep:
    """Algorithm 1, line 10: `clustered_means`, then Omega_K <- (1-beta) Omega_K + beta *
    cluster means."""
    means, labels, found = clustered_means(uploaded, generalized, weights, rng, kmeans_runs)
    return ServerStep(mix(generalized, means, beta), means, labels, found)


class PFedKM(PFedMeBase[PFedKMHyper]):
    family = "clustered"

    def setup(self) -> None:
        super().setup()
        self.generalized = broadcast(self.global_model, self.hyper.num_clusters)
        self.means = dict(self.generalized)  # the cluster means before the beta-mix
        self.clusters = torch.zeros(self.num_clients, dtype=torch.long)
        self.kmeans_rng = np.random.default_rng([self.ctx.seed, 1])
        self.stats: dict[str, float] = {}

    def round(self, round_: int, clients: torch.Tensor) -> None:
        trainers = self.trainers(clients)
        start = gather(self.generalized, self.clusters[trainers])
        local = self.local_round(start, trainers)
        uploaded = gather(local, torch.searchsorted(trainers, clients))
        step = clustered_server_step(
            uploaded, self.generalized,
            upload_weights(self.hyper.weighting, self.train_sizes, clients), self.hyper.beta,
            self.kmeans_rng, self.hyper.kmeans_runs)
        self.generalized, self.means, labels, found = step
        self.clusters[clients] = torch.from_numpy(labels)
        points, centers = flatten(uploaded).double(), flatten(self.generalized).double()
        self.stats = {
            "kmeans_seconds": found.seconds,
            "kmeans_iterations": float(found.iterations),
            "center_distance": mean_pairwise_distance(centers),
            "local_distance": float((points - centers[labels]).norm(dim=1).mean()),
        }

    def global_views(self) -> tuple[Tensors, Tensors]:
        """Each client's cluster model before and after the beta-mix, stacked `[N, ...]`."""
        return gather(self.means, self.clusters), gather(self.generalized, self.clusters)

    def assignment(self) -> torch.Tensor:
        return self.clusters

    def round_metrics(self) -> dict[str, float]:
        return dict(self.stats)
