"""FeSEM, Federated Stochastic Expectation Maximization (Xie, Long, Zhou, Jiang, Li & Zhang
2021, "Multi-Center Federated Learning: Clients Clustering for Better Personalization",
Algorithm 1), read with the authors' code as stored on GitHub at
`mingxuts/multi-center-fed-learning` (`models/fedsem.py`, `models/mlhead_clus_server.py`)
and the FedGroup authors' re-implementation `morningD/FlexCFL` (`flearn/trainer/fesem.py`).

    K centers W~_1 .. W~_K; client i keeps its local model W_i and its center r_i
    for t = 1 .. T:
        each selected client i: W_i = SGD_i(W~_{r_i})          (train from its center)
        E-step: r_i = argmin_k || W_i - W~_k ||_2               (nearest center, L2)
        M-step: W~_k = sum_{i: r_i = k} n_i W_i / sum n_i       (sample-weighted mean)
    client i uses W~_{r_i}

The paper's loop reads "E-step, M-step, local update"; a round here is the same cycle
started at the local update, so that each round has exactly one local training and ends
with the centers the clients use.

Readings (where the paper is silent or the codes differ):
- Initialisation of the centers (Algorithm 1 leaves it open; the paper's text beyond its
  pseudo-code was not at hand, and the two codes differ): before the first round every
  client holds one common draw w0 of the initial model and trains from it; the K centers
  are then K of these first local models picked by k-means++ seeding (D^2 sampling,
  scikit-learn's `kmeans_plusplus`, seeded from the run's generator), and the first E- and
  M-step run on them. The authors' code starts every center at the same model with a random
  first assignment (k-means on uniform noise), so its first E-step would be a tie; FlexCFL
  draws K independent models, which are about equally far from every client's first local
  model. Seeding from the local models makes the first E-step depend on the clients' data.
  When fewer than K of those models are distinct (e.g. fewer clients than K in the first
  round), the remaining centers stay at w0.
- Distance: over all parameters, flattened (the paper's model distance). The authors' code
  measures it on one layer's kernel only (`VARIABLE_PARAMS`, the last dense layer).
- M-step: sample-weighted (the authors' `update_model_wmode`; the paper's Eq. averages the
  members' models); a center that no selected client picks keeps its model (empty cluster).
- Partial participation: only the selected clients take an E-step; the others keep their
  center. A client never selected so far trains from center 0 when it first takes part.
- The authors' code re-clusters only every `update-center-every` rounds (150, more than its
  60 rounds); Algorithm 1's E-step every round is what is implemented.
- Evaluation: client i uses its center W~_{r_i} after the round's M-step (the model it
  trains from next), not its own local model.
"""

from dataclasses import dataclass

import numpy as np
import torch

from clusterfl.algorithms.base import OneModelPerCluster
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import broadcast, gather
from clusterfl.steps.clustering import cluster_average, draw_seed, flatten, unflatten


@dataclass(frozen=True)
class FeSemHyper:
    num_clusters: int = 2  # K (the benchmark tunes it)

    def validate(self, key: str) -> None:
        require(self.num_clusters >= 1, f"{key}.num_clusters", "must be >= 1")


def nearest_center(points: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    """E-step: row i's center argmin_k ||points_i - centers_k||^2 (float64, the squared
    distances summed exactly rather than by cdist's matrix product); ties go to the lowest k."""
    p, c = points.double(), centers.double()
    distances = torch.stack([(p - center).pow(2).sum(1) for center in c], dim=1)
    return distances.argmin(1)


def kmeans_plusplus_rows(points: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Indices of k distinct rows of `points` picked by k-means++ seeding (scikit-learn's
    greedy D^2 sampling from an integer seed); k is capped at the number of distinct rows."""
    from sklearn.cluster import kmeans_plusplus  # here, not at import: see clusterfl.steps.recovery

    _, first = np.unique(points, axis=0, return_index=True)
    distinct = np.sort(first)
    k = min(k, len(distinct))
    _, chosen = kmeans_plusplus(points[distinct], n_clusters=k, random_state=seed)
    rows: np.ndarray = distinct[chosen]
    return rows


class FeSem(OneModelPerCluster[FeSemHyper]):
    family = "clustered"

    def setup(self) -> None:
        # Every center starts at one draw w0: before the seeding every client trains from it.
        self.cluster_models = broadcast(self.initial_model(), self.hyper.num_clusters)
        self.clusters = torch.zeros(self.num_clients, dtype=torch.long)
        self.seeded = False

    def round(self, round_: int, clients: torch.Tensor) -> None:
        start = gather(self.cluster_models, self.clusters[clients])
        local = self.train_clients(start, clients)
        points = flatten(local)
        if not self.seeded:
            self.cluster_models = self.seed_centers(points)
            self.seeded = True
        self.clusters[clients] = nearest_center(points, flatten(self.cluster_models)).cpu()
        labels = self.clusters[clients].cpu().numpy()
        self.cluster_models = cluster_average(local, labels, self.train_sizes[clients],
                                              self.cluster_models)

    def seed_centers(self, points: torch.Tensor) -> Tensors:
        """The first K centers: k-means++-seeded rows of the first local models; centers
        beyond the distinct rows keep w0."""
        rows = kmeans_plusplus_rows(points.double().cpu().numpy(), self.hyper.num_clusters,
                                    draw_seed(self.rng))
        centers = flatten(self.cluster_models).clone()
        centers[: len(rows)] = points[torch.from_numpy(rows).to(points.device)]
        return unflatten(centers, self.cluster_models)
