"""P2's synthetic numbers that can be set beside the paper's, and how many of them agree.

Raw MSEs cannot be compared one by one: a center c of the two-distribution regression has
held-out MSE σ² + ‖c − θ_d‖² on distribution d (noise variance σ², x ~ N(0, I)), and for
c = a θ_0 + (1 − a) θ_1 that is σ² + (1 − a)² D on θ_0 and σ² + a² D on θ_1, with
D = ‖θ_0 − θ_1‖² of the draw. Our draw's D is not the paper's (which it does not publish).
What is compared instead:

- **(MSE − σ²)/D per cell** (Tables 1 and 6): free of D, it says where each center sits
  between θ_0 and θ_1. Ours divides by D as the distribution's own held-out inputs measure
  it, mean of (x·(θ_0 − θ_1))² over them (`heldout_distance`; ‖θ_0 − θ_1‖² itself is shown
  too), computed from the dataset's generator, never typed in. The paper's D is inferred
  from its own matrix: each center gives (√(MSE_0 − σ²) + √(MSE_1 − σ²))² =
  (‖c − θ_0‖ + ‖c − θ_1‖)² ≥ D, equal when c lies on the segment (`implied_distances`), so
  the smallest over its centers is the tightest bound (`paper_distance`).
- **Table 3 by what two draws share, the mean of all cells**: each of its 8 rows is its own
  θ_s, so a row (and its rank among the sorted rows) is the draw's chance. With every center
  near the mean θ̄, row s reads σ² + ‖θ_s − θ̄‖² (`spread`), and the mean of all cells is
  σ² + mean_s ‖θ_s − θ̄‖² plus what the centers add beyond θ̄ (measured on our draw);
  Σ_s ‖θ_s − θ̄‖² is σ0² times a chi-square with d(S − 1) degrees of freedom over draws
  θ_s ~ N(0, σ0² I_d), so another draw's mean of all cells falls in `overall_range` with 95 %
  probability (expectation σ² + (1 − 1/S) d σ0², `expected_spread`): the paper's agrees when
  it lies inside. Ours is shown with its 95 % interval over seeds.
- **w̄ as the official validator computes it**: github.com/ycruan/FedSoft, validators.py,
  `ValidatorRegression.validate`, divides a client's summed squared error over its loader
  (batch 10) by len(loader) × test_ds_batch_size (50), i.e. MSE × n/(50 ⌈n/10⌉) ≈ MSE/5
  (`official_factor`); the paper's w̄ is that number, ours is the plain MSE.

`tolerance` (references.yaml `p2_comparable`) is the relative gap counted as agreement.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats

from clusterfl.data import build_dataset
from clusterfl.data.synthetic import FedSoftRegressionOptions


@dataclass(frozen=True)
class Draw:
    """What a synthetic experiment's dataset drew: θ_s [S, d], σ0, the noise variance, and
    the inputs of each distribution's held-out set."""

    theta: np.ndarray
    sigma0: float
    noise: float
    heldout: tuple[np.ndarray, ...]


def read_draw(params: Any, experiment: str) -> Draw | None:
    """The draw behind `experiment`, regenerated from its dataset's params (the generator is
    seeded, so this is the draw the runs trained on); None for any other dataset. Held-out
    inputs: the dataset's test split of each distribution, which P2's partitions hold out
    whole (holdout_size = test_per_distribution)."""
    name = params.partition(params.experiment(experiment).partition)["dataset"]
    source, options = params.dataset(name)
    if source != "fedsoft_regression":
        return None
    data = build_dataset(source, options, f"datasets.{name}")
    theta = np.asarray(data.extras["theta"], dtype=float)
    heldout = tuple(data.x[(data.domain == s) & (data.split == 1)].astype(float)
                    for s in range(len(theta)))
    opts = replace(FedSoftRegressionOptions(), **options)
    return Draw(theta, opts.sigma0, opts.noise_std ** 2, heldout)


def squared_distance(theta: np.ndarray) -> float:
    """D = ‖θ_0 − θ_1‖² of a [2, d] draw."""
    return float(np.sum((theta[0] - theta[1]) ** 2))


def heldout_distance(x: np.ndarray, theta: np.ndarray) -> float:
    """D as inputs `x` [n, d] see it: mean of (x·(θ_0 − θ_1))² (‖θ_0 − θ_1‖² for x ~ N(0, I))."""
    return float(np.mean((np.asarray(x) @ (theta[0] - theta[1])) ** 2))


def implied_distances(matrix: np.ndarray, noise: float = 1.0) -> np.ndarray:
    """[S]: (√(MSE_0 − σ²) + √(MSE_1 − σ²))² of every center (column) of a [2, S] matrix."""
    excess = np.clip(np.asarray(matrix, dtype=float) - noise, 0.0, None)
    distances: np.ndarray = (np.sqrt(excess[0]) + np.sqrt(excess[1])) ** 2
    return distances


def paper_distance(matrix: np.ndarray, noise: float = 1.0) -> float:
    """The tightest bound on D a matrix gives: its smallest implied distance."""
    return float(implied_distances(matrix, noise).min())


def excess_ratio(matrix: np.ndarray, distance: Sequence[float] | float, noise: float = 1.0
                 ) -> np.ndarray:
    """(MSE − σ²)/D per cell; `distance` per row (distribution) or one for all."""
    d = np.broadcast_to(np.asarray(distance, dtype=float), (len(matrix),))
    ratios: np.ndarray = (np.asarray(matrix, dtype=float) - noise) / d[:, None]
    return ratios


def spread(theta: np.ndarray) -> np.ndarray:
    """[S]: ‖θ_s − θ̄‖², the excess MSE of distribution s on the mean parameter θ̄."""
    theta = np.asarray(theta, dtype=float)
    spreads: np.ndarray = np.sum((theta - theta.mean(axis=0)) ** 2, axis=1)
    return spreads


def expected_spread(distributions: int, dimension: int, sigma0: float) -> float:
    """E‖θ_s − θ̄‖² over draws θ_s ~ N(0, σ0² I_d): (1 − 1/S) d σ0²."""
    return (1.0 - 1.0 / distributions) * dimension * sigma0 ** 2


def overall_range(noise: float, excess: float, distributions: int, dimension: int,
                  sigma0: float, level: float = 0.95) -> tuple[float, float]:
    """Where a draw's mean of all cells falls with probability `level` over draws θ_s ~
    N(0, σ0² I_d): σ² + `excess` + σ0² χ²_{d(S − 1)} / S at the chi-square's central
    quantiles; `excess` is what the centers add beyond θ̄."""
    low, high = stats.chi2.ppf([(1 - level) / 2, (1 + level) / 2], dimension * (distributions - 1))
    base, scale = noise + excess, sigma0 ** 2 / distributions
    return base + scale * float(low), base + scale * float(high)


def official_factor(client_sizes: Sequence[int], client_batch: int, eval_batch: int) -> float:
    """The official w̄ over the plain MSE, averaged over client sizes n uniform on
    [low, high]: n/(eval_batch ⌈n/client_batch⌉) (= client_batch/eval_batch when
    client_batch divides n)."""
    n = np.arange(client_sizes[0], client_sizes[1] + 1)
    return float(np.mean(n / (eval_batch * np.ceil(n / client_batch))))


def within(ours: float, paper: float, tolerance: float) -> bool:
    """Whether `ours` is within `tolerance` (relative) of the paper's number."""
    return abs(ours - paper) <= tolerance * abs(paper)


@dataclass(frozen=True)
class Comparison:
    """One comparable number: which table and quantity, ours and the paper's; `band`, where
    set, is the range the paper's number agrees in (else within tolerance of ours)."""

    table: str
    quantity: str
    ours: float
    paper: float
    band: tuple[float, float] | None = None


def agrees(row: Comparison, tolerance: float) -> bool:
    if row.band is not None:
        return row.band[0] <= row.paper <= row.band[1]
    return within(row.ours, row.paper, tolerance)


def agreement(rows: Sequence[Comparison], tolerance: float) -> tuple[int, int]:
    """(how many agree, how many there are)."""
    return sum(agrees(r, tolerance) for r in rows), len(rows)


def ratio_comparisons(label: str, ours: np.ndarray, paper: np.ndarray,
                      names: Sequence[str]) -> list[Comparison]:
    """Every cell of two matched [2, 2] ratio matrices; row d, column j: distribution d on
    the center serving distribution j."""
    return [Comparison(label, f"{names[d]} on the center of {names[j]}", float(ours[d, j]),
                       float(paper[d, j])) for d in range(2) for j in range(2)]


def table3_comparison(label: str, ours: Sequence[float], paper: np.ndarray, draw: Draw
                      ) -> Comparison:
    """The mean of all cells: ours (its mean over the seeds' `ours`), the paper's, and the
    range another draw's falls in (`overall_range`, the centers' excess over σ² + mean_s
    ‖θ_s − θ̄‖² taken from our draw)."""
    mean = float(np.mean(ours))
    excess = mean - draw.noise - float(np.mean(spread(draw.theta)))
    band = overall_range(draw.noise, excess, len(draw.theta), draw.theta.shape[1], draw.sigma0)
    return Comparison(label, "mean of all cells", mean, float(np.mean(paper)), band)


def mark(row: Comparison, tolerance: float) -> str:
    return "yes" if agrees(row, tolerance) else "no"
