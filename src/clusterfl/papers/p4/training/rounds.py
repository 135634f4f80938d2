"""One round of each algorithm compared in P4's Sec. 4, as pure functions over stacked clients:
state in, state out (frozen dataclasses of tensors); randomness only from the given generator.

PFL-TC (Algorithm 2), for round t:
    each client i: g~_i (Option 1 or 2), m_{i,t} = alpha g~_i + (1 - alpha) m_{i,t-1}
    server: v = Threshold-Clustering({m_{i,t}}, {v_{k,0}^t}, K); c(i) = cluster of i
    each client i: x_{i,t} = x_{i,t-1} - eta v_{c(i)}
PDL-TC (Algorithm 3): every client i runs Threshold-Clustering({m_{j,t}}_j, m_{i,t}, 1) over
    everyone's momentums (its own included), from its own momentum, and steps with the result.
Oracle: the true clusters are known; v_k = mean momentum of true cluster k (with alpha = 1 the
    mean gradient), the estimate the paper's rates are compared against (Remark 1).
Standalone: x_i <- x_i - eta g~_i, no communication.
IFCA (Ghosh, Chung, Yin & Ramchandran 2020, "An Efficient Framework for Clustered Federated
    Learning", Algorithm 1; the paper's [5] and its two baselines): K cluster models; client i
    picks j_i = argmin_k f_i(theta_k); "model": i runs the local steps from theta_{j_i} and the
    server averages the resulting models per cluster; "gradient": the server steps each theta_k
    with the mean of one gradient per client that picked k.

Readings (the client-side ones are in `momentum`, the clustering ones in `threshold`):
- PFL-TC initialisation v_{k,0}^t ("{v_{k_0^t}}", not specified): "Assumption 7 can be easily
  realized by using K-means++ initialization prior to running our clustering procedure". We
  read "K-means++ initialization" as the paper writes it: with `init = "kmeans++"` (default)
  every round starts from ONE k-means++ seeding (D^2 sampling, `threshold.kmeans_pp_init`) of
  the current momentums, with no Lloyd iteration and no restart; Threshold-Clustering then
  does all the refining. Named baselines (not the paper's): `init = "kmeans"` runs a full
  k-means from that seeding (best of `kmeans_restarts` runs of `kmeans_iterations` Lloyd
  iterations; the earlier default, "k-means of the momentums", 10 x 20), after which the
  threshold step at a small tau changes nothing; `tau_scale = 0` (a ball that holds no other
  client) keeps the seeds themselves. Seeding alone may put two seeds in one cluster, and
  Eq. (1) moves each center on its own, so such a pair does not separate within the round.
  `init = "previous"` starts from round t-1's centers (seeding round 1 as "kmeans++"); a lost
  cluster then stays lost.
- "{x_{i,t} = x_{i,t-1} - eta v_{k^t}}_{i in k^t}": client i steps with the center nearest to
  its momentum (`threshold.assign`).
- PDL-TC uses the same threshold rule, with q = 1/K from Algorithm 3's input K (its call
  to Threshold-Clustering has K = 1; an earlier version of this line said 1/(2K), which the
  code never used).
- Client models stay personal: PFL-TC, PDL-TC and the oracle move every member of a cluster by
  the same step, not to a common model. They start from one shared x_0 (`initial_state`), as
  the appendix's proof assumes; one x_0 per client or per true cluster are named variants.
- IFCA (as `clusterfl.algorithms.ifca`, read with the official code jichan3751/ifca): cluster
  averages are weighted by sample counts; a cluster no client picks keeps its model; a client's
  model is its cluster's model, the cluster re-estimated with the updated models (which also
  starts the next round). Gradient averaging takes one gradient step per round.
- Error metric (Sec. 4): (1/N) sum_i ||x_{i,T} - x*_{k(i)}||^2.
"""

from dataclasses import dataclass, replace
from typing import Literal

import torch
from torch import Tensor

from clusterfl.core.options import require
from clusterfl.papers.p4.training.momentum import (
    LinearClients,
    LocalUpdate,
    cluster_losses,
    local_direction,
    update_momentum,
)
from clusterfl.papers.p4.training.threshold import (
    ThresholdRule,
    assign,
    kmeans_pp,
    kmeans_pp_init,
    threshold_clustering,
)

Init = Literal["previous", "kmeans++", "kmeans"]
INITS: tuple[Init, ...] = ("kmeans++", "kmeans", "previous")


@dataclass(frozen=True)
class Clustering:
    """Threshold-Clustering's settings: K, M rounds, the rule's scale, v_{k,0} per round
    (`init`: "kmeans++" one D^2 seeding, the paper's; "kmeans" the full k-means baseline, with
    `kmeans_iterations` and `kmeans_restarts`; "previous" round t-1's centers)."""

    num_clusters: int = 4
    iterations: int = 50
    tau_scale: float = 1.0
    init: Init = "kmeans++"
    kmeans_iterations: int = 20
    kmeans_restarts: int = 10

    def validate(self, key: str) -> None:
        require(self.num_clusters >= 1, f"{key}.num_clusters", "must be >= 1")
        require(self.iterations >= 1, f"{key}.iterations", "must be >= 1")
        require(self.tau_scale >= 0, f"{key}.tau_scale", "must be >= 0")
        require(self.init in INITS, f"{key}.init", f"must be one of {', '.join(INITS)}")
        require(self.kmeans_iterations >= 0, f"{key}.kmeans_iterations", "must be >= 0")
        require(self.kmeans_restarts >= 1, f"{key}.kmeans_restarts", "must be >= 1")

    @property
    def rule(self) -> ThresholdRule:
        return ThresholdRule.for_clusters(self.num_clusters, self.tau_scale)


@dataclass(frozen=True)
class MomentumState:
    """Personal models x_{i,t} [N, d], momentums m_{i,t} [N, d], completed rounds t.

    `centers` are the last cluster-mean estimates ([K, d] for PFL-TC and the oracle, [N, d]
    for PDL-TC: one per client) and `assignment` [N] the cluster each client stepped with
    (PFL-TC, oracle); None where an algorithm has none yet.
    """

    params: Tensor
    momentum: Tensor
    rounds_done: int = 0
    centers: Tensor | None = None
    assignment: Tensor | None = None


@dataclass(frozen=True)
class IfcaState:
    """Cluster models theta_k [K, d] and each client's cluster estimate j_i [N] under them."""

    models: Tensor
    assignment: Tensor
    rounds_done: int = 0

    @property
    def client_params(self) -> Tensor:
        return self.models[self.assignment]


Start = Literal["shared", "per_cluster", "per_client"]
STARTS: tuple[Start, ...] = ("shared", "per_cluster", "per_client")


def initial_state(
    num_clients: int, dimension: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float64, scale: float = 1.0, start: Start = "shared",
    cluster: Tensor | None = None,
) -> MomentumState:
    """Sec. 4: x_0 ~ N(0, s^2 I) (s = `scale`, 1 in the paper; larger s for the sensitivity
    to "the model's initial weights"); m_{i,0} = 0 (appendix A.1.1, Assumption 2).

    `start`: "shared" draws one x_0 for every client, the reading the appendix's proof needs
    (Case 1: the clients of a cluster "have the same history of parameter updates", which
    moving them by the same step keeps only from a common start); "per_cluster" one draw per
    true cluster (`cluster` [N]); "per_client" one per client, whose spread inside a cluster
    no round can shrink (a floor of about s^2 d (1 - K/N) under the error)."""
    if start == "per_client":
        params = scale * torch.randn((num_clients, dimension), generator=generator, dtype=dtype)
    elif start == "per_cluster":
        assert cluster is not None, "a per-cluster start needs the true clusters"
        draws = scale * torch.randn((int(cluster.max()) + 1, dimension), generator=generator,
                                    dtype=dtype)
        params = draws[cluster]
    else:
        params = (scale * torch.randn((1, dimension), generator=generator, dtype=dtype)
                  ).expand(num_clients, dimension).clone()
    return MomentumState(params, torch.zeros_like(params))


def ifca_initial_state(
    data: LinearClients, num_clusters: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float64, scale: float = 1.0,
) -> IfcaState:
    """K independent N(0, s^2 I) models (the same law as Sec. 4's client models, s = `scale`),
    clients assigned."""
    models = scale * torch.randn((num_clusters, data.dimension), generator=generator,
                                 dtype=dtype)
    return IfcaState(models, cluster_losses(data, models).argmin(dim=1))


def client_momentums(
    data: LinearClients, state: MomentumState, update: LocalUpdate,
    generator: torch.Generator | None = None,
) -> Tensor:
    """m_{i,t} = alpha g~_i(x_{i,t-1}) + (1 - alpha) m_{i,t-1} for every client, [N, d]."""
    direction = local_direction(data, state.params, update, generator)
    return update_momentum(state.momentum, direction, update.alpha_at(state.rounds_done))


def pfl_tc_server(
    momentum: Tensor, previous: Tensor | None, clustering: Clustering,
    generator: torch.Generator,
) -> tuple[Tensor, Tensor]:
    """Algorithm 2's server step on the momentums [N, d]: the K centers [K, d] by
    Threshold-Clustering from v_{k,0} (`clustering.init`: one k-means++ seeding, the paper's;
    a full k-means, the baseline; or `previous`, round t-1's centers, where there are any) and
    the nearest center of every client [N]."""
    if clustering.init == "kmeans":
        start = kmeans_pp(momentum, clustering.num_clusters, generator,
                          clustering.kmeans_iterations, clustering.kmeans_restarts)
    elif clustering.init == "previous" and previous is not None:
        start = previous
    else:
        start = kmeans_pp_init(momentum, clustering.num_clusters, generator)
    centers = threshold_clustering(momentum, start, clustering.rule, clustering.iterations)
    return centers, assign(momentum, centers)


def pdl_tc_estimates(momentum: Tensor, clustering: Clustering) -> Tensor:
    """Algorithm 3's estimates [N, d]: row i is Threshold-Clustering with K = 1 over all
    momentums, started from m_i (the N runs are one call: Eq. (1) moves each center alone)."""
    return threshold_clustering(momentum, momentum, clustering.rule, clustering.iterations)


def pfl_tc_round(
    data: LinearClients, state: MomentumState, update: LocalUpdate, clustering: Clustering,
    generator: torch.Generator,
) -> MomentumState:
    """Algorithm 2, one round."""
    momentum = client_momentums(data, state, update, generator)
    centers, assignment = pfl_tc_server(momentum, state.centers, clustering, generator)
    params = state.params - update.lr * centers[assignment]
    return MomentumState(params, momentum, state.rounds_done + 1, centers, assignment)


def pdl_tc_round(
    data: LinearClients, state: MomentumState, update: LocalUpdate, clustering: Clustering,
    generator: torch.Generator | None = None,
) -> MomentumState:
    """Algorithm 3, one round: client i's estimate is Threshold-Clustering centred on m_{i,t}.

    The N runs with K=1 are one call with N centers, since Eq. (1) updates each center on its
    own. `clustering.init` is unused: each run starts from the client's own momentum.
    """
    momentum = client_momentums(data, state, update, generator)
    estimates = pdl_tc_estimates(momentum, clustering)
    params = state.params - update.lr * estimates
    return MomentumState(params, momentum, state.rounds_done + 1, estimates, None)


def oracle_round(
    data: LinearClients, state: MomentumState, update: LocalUpdate, truth: Tensor,
    generator: torch.Generator | None = None,
) -> MomentumState:
    """Momentums averaged within each true cluster (`truth` [N], labels 0..K-1)."""
    momentum = client_momentums(data, state, update, generator)
    centers = cluster_means(momentum, truth)
    params = state.params - update.lr * centers[truth]
    return MomentumState(params, momentum, state.rounds_done + 1, centers, truth)


def standalone_round(
    data: LinearClients, state: MomentumState, update: LocalUpdate,
    generator: torch.Generator | None = None,
) -> MomentumState:
    """x_i <- x_i - eta g~_i: the same local direction as PFL-TC, no momentum, no server."""
    direction = local_direction(data, state.params, update, generator)
    return replace(state, params=state.params - update.lr * direction,
                   rounds_done=state.rounds_done + 1)


def ifca_round(
    data: LinearClients, state: IfcaState, update: LocalUpdate,
    variant: Literal["model", "gradient"], generator: torch.Generator | None = None,
) -> IfcaState:
    """IFCA (Ghosh et al. 2020, Algorithm 1), every client participating.

    "model": theta~_i = theta_{j_i} after the local steps (`update.local_steps`, Option 2's
    loop), theta_k = count-weighted mean of theta~_i over j_i = k. "gradient": theta_k <-
    theta_k - eta * count-weighted mean of one g_i(theta_k) over j_i = k. With one local step
    the two agree.
    """
    chosen = cluster_losses(data, state.models).argmin(dim=1)
    start = state.models[chosen]
    if variant == "model":
        steps = replace(update, option=2)
        uploads = start - update.lr * local_direction(data, start, steps, generator)
    else:
        one_step = replace(update, option=1)
        uploads = local_direction(data, start, one_step, generator)
    weights = data.counts.to(start.dtype)
    means = cluster_means(uploads, chosen, state.models.shape[0], weights)
    picked = torch.bincount(chosen, minlength=state.models.shape[0]) > 0
    new = means if variant == "model" else state.models - update.lr * means
    models = torch.where(picked[:, None], new, state.models)
    return IfcaState(models, cluster_losses(data, models).argmin(dim=1), state.rounds_done + 1)


def cluster_means(
    rows: Tensor, labels: Tensor, num_clusters: int | None = None,
    weights: Tensor | None = None,
) -> Tensor:
    """(Weighted) mean of `rows` [N, d] per label, [K, d]; an empty cluster's row is zero."""
    k = int(labels.max()) + 1 if num_clusters is None else num_clusters
    w = torch.ones(len(labels), dtype=rows.dtype) if weights is None else weights
    sums = torch.zeros((k, rows.shape[1]), dtype=rows.dtype)
    sums.index_add_(0, labels, rows * w[:, None])
    totals = torch.zeros(k, dtype=rows.dtype).index_add_(0, labels, w)
    return sums / totals.clamp_min(torch.finfo(rows.dtype).tiny)[:, None]


def model_error(params: Tensor, optima: Tensor, truth: Tensor) -> Tensor:
    """Sec. 4's metric (1/N) sum_i ||x_i - x*_{k(i)}||^2 (a 0-d tensor)."""
    return ((params - optima[truth]) ** 2).sum(dim=1).mean()
