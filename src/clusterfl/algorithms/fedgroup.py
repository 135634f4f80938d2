"""FedGroup (Duan, Liu, Ji, Chen, Wang & Tan 2021, "FedGroup: Efficient Federated Learning
via Decomposed Similarity-Based Clustering"), read with the authors' code as stored on
GitHub at `morningD/FlexCFL` (`flearn/trainer/fedgroup.py`, `groupbase.py`, `group.py`,
`client.py`, `utils/trainer_utils.py`; FedGroup's own repository `morningD/FedGroup` holds
only its later FedAvg/data code).

    w0: the initial model
    cold start: a sample S of min(alpha * K, N) clients; each i in S pretrains from w0:
                dw_i = SGD_i(w0; pretrain_steps) - w0
        EDC:    v_1 .. v_m = the top-m right singular vectors of [dw_i]_{i in S}
                x_i = (cos(dw_i, v_1), .., cos(dw_i, v_m))       (decomposed cosine)
                groups = K-means(x, K)
        group g: w_g = mean_{i in g} (w0 + dw_i),  dw_g = mean_{i in g} dw_i   (unweighted)
    newcomer j (not in S): pretrains from w0 the same way, joins argmax_g cos(dw_j, dw_g)
    for t = 1 .. T: within each group, FedAvg: w_g <- sum_{i in g} n_i SGD_i(w_g) / sum n_i
    client i uses w_{g(i)}

Readings (where the paper is silent or the official code differs):
- alpha = 20 (the code's `group_cold_start(alpha=20)`, config `pretrain_scale`); the sample
  is drawn from all clients with the run's generator. With N <= alpha * K (the benchmark:
  20 clients) every client is in the cold-start sample.
- pretrain_steps = 20: the code's `Client.pretrain(iterations=20)`, 20 mini-batch steps at
  the schedule's batch size and lr.
- m (`svd_components`) = K by default (the code's `TruncatedSVD(n_components=num_group)`),
  capped at the sample size. The SVD is exact (numpy, float64), not scikit-learn's
  randomized truncated SVD; each direction is signed so that the clients' projections on
  it sum to >= 0 (K-means' labels do not depend on the signs).
- EDC clustering: the code's `KMeans(n_clusters=K, max_iter=20)` on the [n x m] matrix of
  cosines; here `clusterfl.steps.clustering.kmeans` (k-means++, 10 restarts, scikit-learn's
  default when the code was written, seeded from the run's generator; Lloyd runs to
  convergence, which the code's max_iter=20 rarely cuts on at most alpha*K points). K is
  capped at the number of distinct rows; a group left empty keeps w0 and a zero update.
- Group models at cold start: the unweighted mean of the members' pretrained models (the
  code: "All client have equal weight"); FedAvg within a group afterwards is sample-weighted.
- Newcomers: every client outside the sample is cold-started at the start of the first
  round (pretrained from w0, assigned by the largest cosine similarity between its update
  and the groups' cold-start mean updates, the code's `client_cold_start` with
  `calculate_cosine_dissimilarity`), not in the round it is first selected. With full
  participation, the benchmark's and the code's setting, these are the same round.
- Not offered: the code's MADC measure, random-centers cold start (FedGroup-RCC), random
  assignment of newcomers (RAC), inter-group aggregation (`group_agg_lr`, default 0) and
  FlexCFL's client migration and re-clustering (its `dynamic`, `recluster_epoch`).
- Evaluation: client i uses its group's model.
"""

from dataclasses import dataclass

import numpy as np
import torch

from clusterfl.algorithms.base import OneModelPerCluster
from clusterfl.core.options import require
from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import broadcast, gather
from clusterfl.steps.clustering import cluster_average, flatten, kmeans

KMEANS_RESTARTS = 10


@dataclass(frozen=True)
class FedGroupHyper:
    num_clusters: int = 3  # K, the code's num_group (the benchmark tunes it)
    alpha: int = 20  # the cold-start sample holds min(alpha * K, N) clients
    pretrain_steps: int = 20  # mini-batch steps of each pretraining from w0
    svd_components: int | None = None  # m; None: K

    def validate(self, key: str) -> None:
        require(self.num_clusters >= 1, f"{key}.num_clusters", "must be >= 1")
        require(self.alpha >= 1, f"{key}.alpha", "must be >= 1")
        require(self.pretrain_steps >= 1, f"{key}.pretrain_steps", "must be >= 1")
        require(self.svd_components is None or self.svd_components >= 1,
                f"{key}.svd_components", "must be >= 1 (or null: K)")


def decomposed_cosine(updates: torch.Tensor, components: int) -> np.ndarray:
    """EDC's features: x[i, k] = cos(u_i, v_k) for the top `components` right singular
    vectors v_k of the rows u_i (float64); a zero row gives zeros. Each v_k is signed so
    that the rows' projections on it sum to >= 0."""
    u = updates.double().cpu().numpy()
    _, _, vt = np.linalg.svd(u, full_matrices=False)
    v = vt[: min(components, len(vt))].T  # [d, m], unit columns
    projections = u @ v
    v = v * np.where(projections.sum(0) < 0, -1.0, 1.0)
    norms = np.linalg.norm(u, axis=1, keepdims=True)
    return np.where(norms > 0, (u @ v) / np.where(norms > 0, norms, 1.0), 0.0)


def most_similar_group(updates: torch.Tensor, group_updates: torch.Tensor) -> torch.Tensor:
    """Row i's group argmax_g cos(u_i, dw_g) (a zero vector is similar to nothing: cosine
    0); ties go to the lowest g."""
    u, g = updates.double(), group_updates.double()
    un, gn = u.norm(dim=1, keepdim=True), g.norm(dim=1, keepdim=True)
    cos: torch.Tensor = (u / un.where(un > 0, 1.0)) @ (g / gn.where(gn > 0, 1.0)).T
    return cos.argmax(1)


def group_means(rows: torch.Tensor, labels: np.ndarray, groups: int) -> torch.Tensor:
    """[groups, d]: the unweighted mean of the rows labelled g (zeros for an empty group)."""
    out = torch.zeros(groups, rows.shape[1], dtype=rows.dtype, device=rows.device)
    for g in range(groups):
        members = torch.from_numpy(np.flatnonzero(labels == g)).to(rows.device)
        if len(members):
            out[g] = rows[members].mean(0)
    return out


class FedGroup(OneModelPerCluster[FedGroupHyper]):
    family = "clustered"

    def setup(self) -> None:
        self.start_model = self.initial_model()
        self.cluster_models = broadcast(self.start_model, self.hyper.num_clusters)
        self.clusters = torch.zeros(self.num_clients, dtype=torch.long)
        self.cold_started = False

    def round(self, round_: int, clients: torch.Tensor) -> None:
        if not self.cold_started:
            self.cold_start()
            self.cold_started = True
        start = gather(self.cluster_models, self.clusters[clients])
        local = self.train_clients(start, clients)
        labels = self.clusters[clients].cpu().numpy()
        self.cluster_models = cluster_average(local, labels, self.train_sizes[clients],
                                              self.cluster_models)

    def pretrain(self, clients: torch.Tensor) -> tuple[Tensors, torch.Tensor]:
        """Each client's model after `pretrain_steps` steps from w0, and its update."""
        plan = self.local_plan(clients, local_steps=self.hyper.pretrain_steps)
        models = self.train_clients(broadcast(self.start_model, len(clients)), clients,
                                    plan=plan)
        return models, flatten(models) - flatten(broadcast(self.start_model, 1))

    def cold_start(self) -> None:
        """Group the sampled clients by EDC, start each group at its members' mean
        pretrained model, and put every other client in the most similar group."""
        k, n = self.hyper.num_clusters, self.num_clients
        sample = np.sort(self.rng.choice(n, min(self.hyper.alpha * k, n), replace=False))
        sampled = torch.from_numpy(sample)
        models, updates = self.pretrain(sampled)
        features = decomposed_cosine(updates, self.hyper.svd_components or k)
        labels = kmeans(features, k, self.rng, n_init=KMEANS_RESTARTS).labels
        self.cluster_models = cluster_average(models, labels, torch.ones(len(sample)),
                                              self.cluster_models)
        self.clusters[sampled] = torch.from_numpy(labels)
        newcomers = torch.from_numpy(np.setdiff1d(np.arange(n), sample))
        if len(newcomers):
            _, new_updates = self.pretrain(newcomers)
            self.clusters[newcomers] = most_similar_group(
                new_updates, group_means(updates, labels, k)).cpu()
