"""CFL, Clustered Federated Learning (Sattler, Müller & Samek 2020, "Clustered Federated
Learning: Model-Agnostic Distributed Multitask Optimization Under Privacy Constraints", IEEE
TNNLS, Algorithm 1 with Algorithm 2's optimal bipartition), read with the authors' code as
stored on GitHub at `felisat/clustered-federated-learning` (its notebook
`clustered_federated_learning.ipynb` and `fl_devices.py`).

    C <- {{1 .. M}}; each cluster c keeps one model theta_c (all start from one draw)
    for t = 1 .. T:
        each selected client i: dtheta_i = SGD_i(theta_c(i)) - theta_c(i)
        for each cluster c (after the warm-up):
            mean_norm = || sum_{i in c} |D_i|/|D_c| dtheta_i ||
            max_norm  = max_{i in c} || dtheta_i ||
            if mean_norm < eps1 and max_norm > eps2:    (c's joint objective is near a
                                                         stationary point, a client is not)
                alpha_ij = <dtheta_i, dtheta_j> / (||dtheta_i|| ||dtheta_j||)
                c1, c2 = argmin over bipartitions of max_{i in c1, j in c2} alpha_ij
                if gamma_max < sqrt((1 - max_{i in c1, j in c2} alpha_ij) / 2):
                    split c into c1, c2
        for each (new) cluster c: theta_c <- theta_c + sum_{i in c} |D_i|/|D_c| dtheta_i
    client i uses theta_c(i)

Readings (where the paper is silent or the official code differs):
- Bipartition: `linkage: single` (default) is the paper's Algorithm 2 (merge the most similar
  pair of groups until two remain: the single-linkage / maximum-spanning-tree cut, which
  minimises the largest cross-cluster similarity exactly); `complete` is the official code's
  `AgglomerativeClustering(linkage="complete")` on -alpha. Both run SciPy's hierarchical
  clustering on the distance 1 - alpha (a monotone map, so the merges are the same).
- When splits are checked: every round after `warmup_rounds` (the official `c_round > 20`),
  for clusters with at least `min_split_size` members (official `len(idc) > 2`), each cluster
  at most once per round; the two halves are checked again from the next round on (the
  recursion). A cluster is checked only in a round where all its members took part, so
  stale updates never enter the similarities (with full participation, the paper's and the
  official code's setting, that is every round).
- eps1 = 0.4 and eps2 = 1.6 are the official notebook's values (EMNIST, its CNN and lr); the
  paper notes both depend on the model, data and learning rate.
- gamma_max (the paper's identifiability radius) defaults to 0, under which the check only
  refuses a split whose halves have identical update directions; the official code has no
  such check.
- Means are sample-weighted (|D_i|/|D_c|, the paper's aggregation); the official notebook
  averages updates unweighted. A split happens before that round's aggregation, so both
  halves start from the parent's model plus their own members' mean update.
- The official code's per-round client lr decay (x0.99) is not applied: the schedule's lr is.
- The bipartition runs on the cluster's similarity sub-matrix; its row positions are mapped
  back to client indices.
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from scipy.cluster.hierarchy import cut_tree, linkage
from scipy.spatial.distance import squareform

from clusterfl.algorithms.base import OneModelPerCluster
from clusterfl.core.options import require
from clusterfl.steps.aggregation import broadcast, gather
from clusterfl.steps.clustering import cluster_average, flatten
from clusterfl.steps.metrics import CFL_CLUSTERS


@dataclass(frozen=True)
class CflHyper:
    eps1: float = 0.4  # split only if the cluster's mean update norm is below
    eps2: float = 1.6  # ... and its largest client update norm above
    warmup_rounds: int = 20  # no split in rounds 1..warmup_rounds
    min_split_size: int = 3  # clusters with fewer members never split
    gamma_max: float = 0.0  # identifiability radius of the paper's last check
    linkage: Literal["single", "complete"] = "single"

    def validate(self, key: str) -> None:
        require(self.eps1 > 0, f"{key}.eps1", "must be > 0")
        require(self.eps2 > 0, f"{key}.eps2", "must be > 0")
        require(self.warmup_rounds >= 0, f"{key}.warmup_rounds", "must be >= 0")
        require(self.min_split_size >= 2, f"{key}.min_split_size", "must be >= 2")
        require(self.gamma_max >= 0, f"{key}.gamma_max", "must be >= 0")


def pairwise_cosine(updates: torch.Tensor) -> np.ndarray:
    """alpha[i, j] = <u_i, u_j> / (||u_i|| ||u_j||) of the rows of `updates` (float64); a
    zero row has similarity 0 with every row."""
    u = updates.double()
    norms = u.norm(dim=1)
    denom = torch.outer(norms, norms)
    dots = u @ u.T
    return torch.where(denom > 0, dots / denom.clamp_min(1e-300), 0.0).cpu().numpy()


def bipartition(alpha: np.ndarray, method: str = "single") -> tuple[np.ndarray, np.ndarray]:
    """Split rows 0..n-1 (n >= 2) in two by hierarchical clustering on 1 - alpha, cut at the
    last merge; the first part holds row 0. `single` minimises the largest cross similarity."""
    distance = np.clip(1.0 - alpha, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    distance = (distance + distance.T) / 2
    tree = linkage(squareform(distance, checks=False), method=method)
    labels = cut_tree(tree, n_clusters=2).ravel()
    first = labels == labels[0]
    return np.flatnonzero(first), np.flatnonzero(~first)


def cross_similarity(alpha: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> float:
    """max_{i in c1, j in c2} alpha_ij: how alike the two halves' most alike clients are."""
    return float(alpha[np.ix_(c1, c2)].max())


def update_norms(updates: torch.Tensor, weights: torch.Tensor) -> tuple[float, float]:
    """(|| weighted mean update ||, max_i || u_i ||): the two numbers of the split criterion."""
    u = updates.double()
    w = weights.double() / weights.double().sum()
    return float((w @ u).norm()), float(u.norm(dim=1).max())


def should_split(mean_norm: float, max_norm: float, eps1: float, eps2: float) -> bool:
    """CFL's criterion: the cluster is near a stationary point of its joint objective
    (mean update small) while some client is far from its own (an update large)."""
    return mean_norm < eps1 and max_norm > eps2


def separable(alpha_cross: float, gamma_max: float) -> bool:
    """The paper's last check: gamma_max < sqrt((1 - alpha_cross_max) / 2)."""
    return gamma_max < float(np.sqrt(max(1.0 - alpha_cross, 0.0) / 2))


class Cfl(OneModelPerCluster[CflHyper]):
    family = "clustered"

    def setup(self) -> None:
        self.cluster_models = broadcast(self.initial_model(), 1)  # [K, ...], K grows
        self.clusters = torch.zeros(self.num_clients, dtype=torch.long)
        self.norms: list[list[float]] = []  # per cluster checked this round: mean, max norm

    def round(self, round_: int, clients: torch.Tensor) -> None:
        start = gather(self.cluster_models, self.clusters[clients])
        local = self.train_clients(start, clients)
        updates = flatten(local) - flatten(start)
        sizes = self.train_sizes[clients]
        self.norms = []
        if round_ > self.hyper.warmup_rounds:
            self.split_clusters(clients, updates, sizes)
        labels = self.clusters[clients].cpu().numpy()
        self.cluster_models = cluster_average(local, labels, sizes, self.cluster_models)

    def split_clusters(self, clients: torch.Tensor, updates: torch.Tensor,
                       sizes: torch.Tensor) -> None:
        """Check every current cluster whose members all took part; split those that pass,
        the second half getting a new cluster index with a copy of the parent's model."""
        position = {int(c): row for row, c in enumerate(clients)}
        for c in range(self.num_cluster_models()):
            members = torch.nonzero(self.clusters == c).flatten()
            if len(members) < self.hyper.min_split_size or any(
                    int(m) not in position for m in members):
                continue
            rows = torch.tensor([position[int(m)] for m in members])
            mean_norm, max_norm = update_norms(updates[rows], sizes[rows])
            self.norms.append([mean_norm, max_norm])
            if not should_split(mean_norm, max_norm, self.hyper.eps1, self.hyper.eps2):
                continue
            alpha = pairwise_cosine(updates[rows])
            c1, c2 = bipartition(alpha, self.hyper.linkage)
            if not separable(cross_similarity(alpha, c1, c2), self.hyper.gamma_max):
                continue
            self.clusters[members[torch.from_numpy(c2)]] = self.num_cluster_models()
            self.cluster_models = {k: torch.cat([v, v[c : c + 1]])
                                   for k, v in self.cluster_models.items()}

    def round_metrics(self) -> dict[str, float]:
        return {CFL_CLUSTERS.name: float(self.num_cluster_models())}

    def round_arrays(self) -> dict[str, list]:
        """[mean norm, max norm] of each cluster checked this round (the official plots)."""
        return {"cfl_norms": self.norms}
