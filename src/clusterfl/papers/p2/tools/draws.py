"""P2's off-diagonal MSEs against the distance between the two drawn parameter vectors.

A center c = a theta_0 + (1 - a) theta_1 of FedSoft's synthetic regression (noise variance 1,
x ~ N(0, I)) has held-out MSE 1 + (1 - a)^2 D on distribution 0 and 1 + a^2 D on
distribution 1, with D = ||theta_0 - theta_1||^2 (a squared distance). So for a fixed split
of the clients the off-diagonal MSE - 1 is linear in D, through the origin, and every center
gives back D as (sqrt(MSE_own - 1) + sqrt(MSE_other - 1))^2 (`implied_distance`); the paper's
Table 1 matrices give 163-167. `draw_row` trains one draw (dataset seed) and `fit` says how
well MSE - 1 follows D, or the unsquared distance sqrt(D), by least squares.
"""

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from clusterfl.data import build_dataset
from clusterfl.papers.p2.report.comparable import implied_distances
from clusterfl.partition import build_partition
from clusterfl.run.config import SuiteConfig
from clusterfl.run.runner import run_seed
from clusterfl.steps.clustering import match_centers


def squared_distance(theta: np.ndarray) -> float:
    """D = ||theta_0 - theta_1||^2 of a [2, d] parameter draw."""
    return float(np.sum((theta[0] - theta[1]) ** 2))


def implied_distance(matrix: np.ndarray) -> np.ndarray:
    """[S]: D implied by each matched center of a [2, S] MSE matrix (rows = distributions,
    column j = the center serving distribution j)."""
    return implied_distances(np.asarray(matrix, dtype=float)[:, :2], noise=1.0)


def matched(matrix: np.ndarray) -> np.ndarray:
    """Columns reordered so that column j is the center serving distribution j (Hungarian)."""
    match = match_centers(np.asarray(matrix, dtype=float), lower_is_better=True)
    return np.asarray(matrix, dtype=float)[:, match]


@dataclasses.dataclass(frozen=True)
class Fit:
    regressor: str  # "D" or "sqrt(D)"
    slope: float
    intercept: float
    r2: float
    slope_origin: float  # the fit through the origin (what the model predicts)
    r2_origin: float


def fit(d: Sequence[float] | np.ndarray, excess: Sequence[float] | np.ndarray,
        squared: bool = True) -> Fit:
    """Least squares of `excess` (MSE - 1) on D (`squared`) or on sqrt(D): with an intercept
    and through the origin; R^2 of both against the mean of `excess`."""
    x = np.asarray(d, float) if squared else np.sqrt(np.asarray(d, float))
    y = np.asarray(excess, float)
    total = np.sum((y - y.mean()) ** 2)
    slope, intercept = np.polyfit(x, y, 1)
    through = float(x @ y / (x @ x))
    return Fit("D" if squared else "sqrt(D)", float(slope), float(intercept),
               float(1 - np.sum((y - slope * x - intercept) ** 2) / total),
               through, float(1 - np.sum((y - through * x) ** 2) / total))


def draw_row(params: SuiteConfig, experiment: str, algorithm: str, draw: int, seed: int = 0,
             rounds: int | None = None, dataset_options: Mapping[str, Any] | None = None,
             partition_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Train `algorithm` on `experiment` with its dataset drawn with seed `draw` (partition
    and training with `seed`); D, the last round's matched holdout matrix and implied D.
    `*_options` override the params' dataset and partition entries (tests shrink them)."""
    exp = params.experiment(experiment)
    if rounds is not None:
        exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=rounds))
    part = params.partition(exp.partition)
    source, options = params.dataset(part["dataset"])
    dataset = build_dataset(source, {**options, **(dataset_options or {}), "seed": draw},
                            f"datasets.{part['dataset']}")
    scheme = {k: v for k, v in part.items() if k not in ("dataset", "scheme")}
    scheme |= partition_options or {}
    partition = build_partition(dataset, part["scheme"], scheme, seed,
                                f"partitions.{exp.partition}")
    history = run_seed(exp, params.algorithm(algorithm, experiment=experiment), dataset,
                       partition, seed)
    matrix = matched(np.asarray(history.arrays["holdout_mse"][-1]))
    implied = implied_distance(matrix)
    return {"draw": draw, "D": squared_distance(dataset.extras["theta"]),
            "theta0_own": matrix[0, 0], "theta0_other": matrix[0, 1],
            "theta1_other": matrix[1, 0], "theta1_own": matrix[1, 1],
            "implied_D_c0": implied[0], "implied_D_c1": implied[1]}


def off_diagonal(frame: pd.DataFrame) -> np.ndarray:
    """Mean off-diagonal MSE of each row (each distribution on the other's center)."""
    means: np.ndarray = frame[["theta0_other", "theta1_other"]].to_numpy().mean(axis=1)
    return means


def markdown(frame: pd.DataFrame, paper: Sequence[Sequence[float]], source: str) -> str:
    """The draws table, the paper's row, the nearest draw and both fits."""
    paper_m = matched(np.asarray(paper))
    paper_d = implied_distance(paper_m)
    target = float(paper_d.mean())
    nearest = int(frame.loc[(frame["D"] - target).abs().idxmin(), "draw"])
    lines = ["| draw (dataset seed) | D | theta0 on its center | theta0 on the other | "
             "theta1 on the other | theta1 on its center | implied D (c0, c1) |",
             "|---|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        mark = " (nearest)" if int(r["draw"]) == nearest else ""
        lines.append(f"| {int(r['draw'])}{mark} | {r['D']:.1f} | {r['theta0_own']:.1f} | "
                     f"{r['theta0_other']:.1f} | {r['theta1_other']:.1f} | "
                     f"{r['theta1_own']:.1f} | {r['implied_D_c0']:.0f}, "
                     f"{r['implied_D_c1']:.0f} |")
    lines.append(f"| paper ({source}) | ? | {paper_m[0, 0]:.1f} | {paper_m[0, 1]:.1f} | "
                 f"{paper_m[1, 0]:.1f} | {paper_m[1, 1]:.1f} | {paper_d[0]:.0f}, "
                 f"{paper_d[1]:.0f} |")
    excess = off_diagonal(frame) - 1.0
    lines.append("")
    lines.append("Least squares of the mean off-diagonal MSE - 1 on each regressor "
                 f"({len(frame)} draws):")
    lines.append("")
    lines.append("| regressor | slope | intercept | R² | slope through 0 | R² through 0 |")
    lines.append("|---|---|---|---|---|---|")
    for squared in (True, False):
        f = fit(frame["D"], excess, squared)
        lines.append(f"| {f.regressor} | {f.slope:.3f} | {f.intercept:.1f} | {f.r2:.3f} | "
                     f"{f.slope_origin:.3f} | {f.r2_origin:.3f} |")
    return "\n".join(lines) + "\n"
