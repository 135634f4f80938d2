"""Server-side clustering steps: small pure functions on stacked parameters `[C, ...]`.

- `flatten`: stacked models -> one row per model (what k-means sees).
- `kmeans_plusplus`: scikit-learn's k-means with k-means++ seeding (Arthur & Vassilvitskii
  2007) from an integer seed, the one k-means call behind `kmeans`, P5's K-means++ baseline
  and P1's model-space diagnostic (P4's Threshold-Clustering seeds by hand, in torch).
- `kmeans`: pFedKM's clustering of the uploaded local models, `kmeans_plusplus` seeded from
  an explicit generator (`draw_seed`), k capped at the number of distinct rows.
- `cluster_average`: the mean model of each cluster (P1's P^{t+1}: column j holds 1/|C_j| for
  the members of C_j; IFCA weights by samples instead); empty clusters keep their old model.
- `align_to`: relabel new clusters to the old models they are closest to (Hungarian
  matching), so "cluster j" keeps meaning the same generalized model from round to round.
- `lowest_loss_cluster`: IFCA's cluster identity, argmin_j of a client's mean training loss.
- `mean_pairwise_distance`: mean Euclidean distance between rows (P1 Fig. 4).
- `match_centers`: which center serves each distribution, one to one (Hungarian, P2's c-bar).
"""

import time
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from clusterfl.core.types import Tensors
from clusterfl.steps.aggregation import weighted_average


def flatten(stacked: Tensors) -> torch.Tensor:
    """`{name: [C, ...]}` -> `[C, d]`, parameters concatenated in name order."""
    return torch.cat([stacked[k].flatten(1) for k in sorted(stacked)], dim=1)


def unflatten(flat: torch.Tensor, like: Tensors) -> Tensors:
    """`flatten`'s inverse: `[C, d]` -> `{name: [C, ...]}` with the shapes of `like`'s rows."""
    out, start = {}, 0
    for k in sorted(like):
        shape = like[k].shape[1:]
        size = shape.numel()
        out[k] = flat[:, start : start + size].reshape(flat.shape[0], *shape)
        start += size
    return out


@dataclass(frozen=True)
class KMeansResult:
    labels: np.ndarray  # [C] in 0..k-1
    iterations: int
    seconds: float


def draw_seed(rng: np.random.Generator) -> int:
    """scikit-learn's `random_state` for one k-means call: one draw of `rng` in [0, 2^31 - 1)."""
    return int(rng.integers(2**31 - 1))


def kmeans_plusplus(points: np.ndarray, k: int, seed: int, n_init: int = 1,
                    tol: float = 1e-4) -> KMeansResult:
    """scikit-learn's Lloyd k-means with k-means++ seeding on the rows of `points`, as given
    (no cap on `k`, no dtype change); `tol` is scikit-learn's (relative to the mean variance
    of the features); `seconds` is the fit's wall-clock time."""
    from sklearn.cluster import KMeans  # here, not at import: see `clusterfl.steps.recovery`

    start = time.perf_counter()
    model = KMeans(n_clusters=k, init="k-means++", n_init=n_init, random_state=seed, tol=tol)
    labels = model.fit_predict(points)
    seconds = time.perf_counter() - start
    return KMeansResult(labels.astype(np.int64), int(model.n_iter_), seconds)


def kmeans(points: np.ndarray, k: int, rng: np.random.Generator, n_init: int = 1) -> KMeansResult:
    """Lloyd's k-means with k-means++ seeding on the rows of `points` (float64).

    `k` is capped at the number of distinct rows, so a round with few clients cannot fail;
    the cap leaves some clusters empty, which `cluster_average` handles.
    """
    distinct = distinct_rows(torch.from_numpy(np.ascontiguousarray(points)))
    return kmeans_plusplus(points, max(1, min(k, distinct)), draw_seed(rng), n_init)


def distinct_rows(points: torch.Tensor) -> int:
    """How many different rows `points` has (== as np.unique compares: -0.0 equals 0.0), one
    row against all at a time on the points' device (np.unique(axis=0) sorts whole rows: it
    took ~0.5 s on P1's 40 x 101,770 models)."""
    seen = 0
    for i in range(len(points)):
        if i == 0 or not bool((points[:i] == points[i]).all(1).any()):
            seen += 1
    return seen


def isometric_rows(points: torch.Tensor) -> torch.Tensor:
    """C rows in at most C - 1 dimensions with the same pairwise distances as the C rows of
    `points` (float64, centered, R^T of the QR factorization of the centered points^T)."""
    points = points.double()
    centered = points - points.mean(0)
    if centered.shape[1] < centered.shape[0]:
        return centered
    r: torch.Tensor = torch.linalg.qr(centered.T, mode="r").R
    return r.T


def kmeans_models(points: torch.Tensor, k: int, rng: np.random.Generator, n_init: int = 1
                  ) -> KMeansResult:
    """`kmeans` of C stacked models `[C, D]` on any device, run in C dimensions.

    k-means (k-means++ seeding, Lloyd, inertia) depends on the points only through their
    distances and means, which an isometry keeps, so k-means on `isometric_rows` finds the
    clusters of the raw models up to float rounding; scikit-learn's tolerance is a share of
    the features' mean variance, which the embedding divides by D/C, so `tol` is scaled by
    C/D to stop at the same shift. On P1's 40 x 101,770 models the fit falls from ~0.11 s to
    about a millisecond, and the models never leave the GPU whole (docs/engine.md).
    """
    distinct = distinct_rows(points)
    embedded = isometric_rows(points)
    tol = 1e-4 * embedded.shape[1] / points.shape[1]
    return kmeans_plusplus(embedded.cpu().numpy(), max(1, min(k, distinct)), draw_seed(rng),
                           n_init, tol)


def cluster_average(
    stacked: Tensors, labels: np.ndarray, weights: torch.Tensor, previous: Tensors
) -> Tensors:
    """Row j: the `weights`-weighted mean of the rows labelled j; `previous[j]` if none."""
    out = {k: v.clone() for k, v in previous.items()}
    for j in range(next(iter(previous.values())).shape[0]):
        members = torch.from_numpy(np.flatnonzero(labels == j))
        if len(members) == 0:
            continue
        mean = weighted_average({k: v[members] for k, v in stacked.items()}, weights[members])
        for k in out:
            out[k][j] = mean[k]
    return out


def align_to(old: torch.Tensor, new: torch.Tensor) -> np.ndarray:
    """perm with perm[j] = the old row new row j is matched to (min total squared distance)."""
    cost = torch.cdist(new.double(), old.double()).pow(2).cpu().numpy()
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(len(new), dtype=np.int64)
    perm[rows] = cols
    return perm


def lowest_loss_cluster(losses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """IFCA: `losses[M, C, N]` per sample under M models -> each client's argmin_m mean loss.

    Ties go to the lowest index (torch.argmin), so identical models give cluster 0.
    """
    counts = mask.sum(1).clamp(min=1).to(losses.dtype)
    mean = (losses * mask).sum(2) / counts
    return mean.argmin(0)


def mean_pairwise_distance(rows: torch.Tensor) -> float:
    """Mean Euclidean distance over unordered pairs of rows; 0.0 for fewer than two."""
    n = rows.shape[0]
    if n < 2:
        return 0.0
    d = torch.cdist(rows.double(), rows.double())
    return float(d.sum() / (n * (n - 1)))


def match_centers(matrix: np.ndarray, lower_is_better: bool) -> np.ndarray:
    """[D]: the center serving each distribution under the best one-to-one matching (-1: none)."""
    rows, cols = linear_sum_assignment(matrix, maximize=not lower_is_better)
    match = np.full(matrix.shape[0], -1, dtype=np.int64)
    match[rows] = cols
    return match
