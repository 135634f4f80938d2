"""Threshold-Clustering (P4, "Towards Provably Personalized Federated Learning via
Threshold-Clustering of Similar Clients", Algorithm 1) and its helpers, as pure torch functions.

    for l in 1..M:
        for k in 1..K:
            set tau_{k,l}
            v_{k,l} = 1/N sum_i ( x_i if ||x_i - v_{k,l-1}|| <= tau_{k,l} else v_{k,l-1} )

Readings of vague passages:
- Eq. (1) writes 1/n in front of a sum over all N points; the appendix restatement (A.1.1,
  "Threshold-Clustering: at round l") divides by N_{t,l}, the number of points summed. We
  divide by N, so a point outside the ball contributes v_k itself and v_k moves by
  (1/N) sum_{i in ball} (x_i - v_k): a damped step towards the ball's mean.
- The appendix samples a subset S_{t,l} of the points in each round (an analysis device);
  we use all points in every round, as Algorithm 1 does.
- The ball is closed (`<=`), as in Eq. (1). Each center is updated independently of the
  others, so running K centers at once is the same as K runs with one center each; PDL-TC
  relies on this to run every client's K=1 clustering in one call.
- Threshold rule: the paper sets tau_{k,l} only inside its proof (A.1.1: tau^2 =
  sqrt(delta) (c^2 + rho^2) Delta / rho, with tau^2 <= Delta^2 / 18), in terms of unknown
  quantities (the spread rho, the separation Delta, the initial error c). We use
  `ThresholdRule`: tau_{k,l} = scale * (q-quantile of the distances ||x_i - v_{k,l-1}||),
  recomputed in every round l, with q = 1/K and scale = 1 by default: the smallest ball
  around v_k that holds a 1/K share of the points (linear interpolation puts the radius
  between the (N/K)-th and the next distance). When the K clusters are balanced and
  separated (Assumption 3) and v_k sits in its cluster, that ball holds exactly the cluster's
  own points, so Eq. (1) settles on the cluster's mean, the estimate the paper compares
  against (Remark 1); no other point is inside to bias it. The rule is scale-free (momentums
  shrink as training converges and tau with them) and needs no other center, so it also
  serves PDL-TC's K=1 runs (q = 1/K with Algorithm 3's input K). Measured on Sec. 4's problem
  with 100 samples per client: scale 1.2 already lets other clusters' points in and PFL-TC
  diverges from the oracle; a quantile of 1/(2K) trims half of each cluster away (a noisier
  trimmed mean).
- Clusters: Algorithm 1 returns the balls C_k = {x_i : ||x_i - v_k|| <= tau_k}, which may
  overlap or miss a point. `assign` gives each point its nearest final center instead (ties
  to the lowest index), so every client gets exactly one cluster's step in Algorithm 2.
- v_{k,0}: the Assumption 7 remark's "K-means++ [2] initialization" is read as the seeding
  alone (`kmeans_pp_init`, Arthur & Vassilvitskii 2007): the first center uniform, each next
  one a point drawn with probability proportional to its squared distance to the nearest
  chosen center; one seeding, no Lloyd iteration, no restart. `kmeans_pp` (seeding, then
  Lloyd's iterations, best of several restarts) is the "k-means of the momentums" baseline.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from clusterfl.core.options import require

Threshold = float | Tensor | Callable[[Tensor, Tensor], Tensor]


@dataclass(frozen=True)
class ThresholdRule:
    """tau_k = scale * quantile_q({||x_i - v_k||}_i), recomputed every clustering round.

    `quantile` q is usually 1/K (`for_clusters`): with `scale` 1 the smallest ball holding a
    1/K share of the points. Quantiles interpolate linearly.
    """

    scale: float = 1.0
    quantile: float = 0.25

    def validate(self, key: str) -> None:
        require(self.scale >= 0, f"{key}.scale", "must be >= 0")
        require(0.0 <= self.quantile <= 1.0, f"{key}.quantile", "must be in [0, 1]")

    @classmethod
    def for_clusters(cls, num_clusters: int, scale: float = 1.0) -> "ThresholdRule":
        return cls(scale=scale, quantile=1.0 / num_clusters)

    def __call__(self, points: Tensor, centers: Tensor) -> Tensor:
        distances = torch.cdist(centers, points)  # [K, N]
        return self.scale * torch.quantile(distances, self.quantile, dim=1)


def threshold_radii(points: Tensor, centers: Tensor, tau: Threshold) -> Tensor:
    """tau as one radius per center, [K]: a rule is evaluated, a number is broadcast."""
    if callable(tau):
        return tau(points, centers)
    return torch.as_tensor(tau, dtype=points.dtype).expand(centers.shape[0])


# Eq. (1) as written forms a [K, N, d] tensor; above this many elements (neural momentums
# have d ~ 1e5) the same mean is taken as a matrix product, which forms none
STEP_ELEMENTS = 2**22


def threshold_step(points: Tensor, centers: Tensor, radii: Tensor) -> Tensor:
    """One round of Eq. (1) for every center: points [N, d], centers [K, d], radii [K].

    Large inputs use (inside @ points + (N - |inside|) v_k) / N, the same mean summed in
    another order (equal up to rounding, tested); small ones (every linear Sec. 4 run) the
    literal form, so their numbers do not depend on this switch.
    """
    inside = torch.cdist(centers, points) <= radii[:, None]  # [K, N]
    n = points.shape[0]
    if centers.shape[0] * points.numel() > STEP_ELEMENTS:
        outside = (n - inside.sum(dim=1)).to(points.dtype)
        return (inside.to(points.dtype) @ points + outside[:, None] * centers) / n
    kept = torch.where(inside[:, :, None], points[None], centers[:, None])  # [K, N, d]
    return kept.mean(dim=1)


def threshold_clustering(
    points: Tensor, centers: Tensor, tau: Threshold, iterations: int
) -> Tensor:
    """Algorithm 1: `iterations` (M) rounds of Eq. (1) from `centers`; returns v_{k,M} [K, d].

    `tau` is a radius (float or [K], the same in every round) or a rule (points, centers) -> [K]
    evaluated on the current centers in every round, e.g. `ThresholdRule`. tau = inf gives the
    mean of all points after one round; tau = 0 keeps a center unless a point sits on it.
    """
    for _ in range(iterations):
        centers = threshold_step(points, centers, threshold_radii(points, centers, tau))
    return centers


def assign(points: Tensor, centers: Tensor) -> Tensor:
    """Nearest center of every point, [N] int64 (ties to the lowest center index)."""
    return torch.cdist(points, centers).argmin(dim=1)


def kmeans_pp_init(
    points: Tensor, num_clusters: int, generator: torch.Generator | np.random.Generator
) -> Tensor:
    """k-means++ seeding: `num_clusters` rows of `points` [N, d], drawn by D^2 sampling.

    Draws come from `generator` only (torch or numpy). When every remaining point coincides
    with a chosen center (all D^2 = 0), the next one is drawn uniformly.
    """
    n = points.shape[0]
    require(1 <= num_clusters <= n, "num_clusters", f"must be in [1, {n}] (the number of points)")
    chosen = [_draw(torch.ones(n, dtype=torch.float64), generator)]
    nearest = torch.cdist(points, points[chosen[0]][None]).squeeze(1) ** 2
    for _ in range(1, num_clusters):
        weights = nearest.double() if nearest.sum() > 0 else torch.ones(n, dtype=torch.float64)
        chosen.append(_draw(weights, generator))
        distance = torch.cdist(points, points[chosen[-1]][None]).squeeze(1) ** 2
        nearest = torch.minimum(nearest, distance)
    return points[chosen].clone()


def kmeans_pp(
    points: Tensor, num_clusters: int, generator: torch.Generator | np.random.Generator,
    iterations: int = 20, restarts: int = 1,
) -> Tensor:
    """k-means++ as Arthur & Vassilvitskii define it: `kmeans_pp_init` seeding followed by
    Lloyd's iterations (assign to the nearest center, move each center to its points' mean; a
    center left without points stays). The best of `restarts` runs by within-cluster squared
    distance; ties keep the earliest run.
    """
    best, best_cost = points[:num_clusters], torch.inf
    for _ in range(restarts):
        centers = kmeans_pp_init(points, num_clusters, generator)
        for _ in range(iterations):
            labels = assign(points, centers)
            sums = torch.zeros_like(centers).index_add_(0, labels, points)
            sizes = torch.bincount(labels, minlength=num_clusters)
            moved = sums / sizes.clamp_min(1)[:, None].to(points.dtype)
            centers = torch.where(sizes[:, None] > 0, moved, centers)
        cost = float((torch.cdist(points, centers).min(dim=1).values ** 2).sum())
        if cost < best_cost:
            best, best_cost = centers, cost
    return best


def _draw(weights: Tensor, generator: torch.Generator | np.random.Generator) -> int:
    """One index with probability proportional to `weights` [N] (float64, not all zero)."""
    if isinstance(generator, np.random.Generator):
        return int(generator.choice(len(weights), p=(weights / weights.sum()).numpy()))
    return int(torch.multinomial(weights, 1, generator=generator))
