"""P2 (FedSoft) cells read from run histories, and the matching of centers to distributions.

Numbers are shown as the paper prints them (`Measure`): MSE for regression runs, lower is
better; accuracy for classification runs, higher is better, recorded as a fraction and shown
in percent. `SeedResult` holds them already scaled, so every table reads the same way.

Centers have no fixed order: center 0 of one seed may be center 1 of the next. So every
center x distribution matrix is shown in *matched* order: column j is the center that the
Hungarian matching (`clustering.match_centers`, on that seed's last-round holdout matrix)
assigns to distribution j. Means are over seeds, last round.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.reports.runs import SeedHistory, read_seed, seed_dirs
from clusterfl.steps.metrics import (
    HOLDOUT_MATCHED_ACC,
    HOLDOUT_MATCHED_MSE,
    LOCAL_TRAIN_ACC,
    LOCAL_TRAIN_MSE,
    METRICS,
    MIXTURE_MAE,
    TEST_ACC,
    TEST_MSE,
    Metric,
    metric,
)


@dataclass(frozen=True)
class Measure:
    """How a cell's runs score a model: `<suffix>` ends the names of the arrays `soft_eval`
    records (`holdout_<suffix>`); `test` gives direction and scaling."""

    suffix: str
    test: Metric  # every client's own model on its test samples
    local_train: Metric  # w̄: the mean local model on its own training data
    holdout_matched: Metric  # c̄: centers matched to distributions, on held-out sets
    unit: str
    digits: int  # of w̄ and Table 2 cells: the paper prints w̄ MSE as 4.96, accuracies as 86.5

    @property
    def scale(self) -> float:
        return self.test.scale

    @property
    def lower_is_better(self) -> bool:
        return self.test.lower_is_better


MSE = Measure("mse", TEST_MSE, LOCAL_TRAIN_MSE, HOLDOUT_MATCHED_MSE, "MSE", 2)
ACCURACY = Measure("acc", TEST_ACC, LOCAL_TRAIN_ACC, HOLDOUT_MATCHED_ACC, "acc %", 1)


@dataclass(frozen=True)
class SeedResult:
    """One seed of a P2 cell, numbers as shown: the last round's scalars and arrays, and for
    the cell's first seed only the per-round arrays (the evolution figure draws one seed; the
    other seeds' would only hold memory)."""

    seed: int
    measure: Measure
    last: dict[str, float]
    holdout: np.ndarray | None  # [D, S]: center s's number on distribution d's held-out set
    match: np.ndarray | None  # [D]: the center serving distribution d
    importance: np.ndarray | None  # [N, S]
    mixture_mae: list[float]  # per round
    holdout_rounds: np.ndarray | None = None  # [R, D, S], first seed only
    importance_rounds: np.ndarray | None = None  # [R, N, S], first seed only


def is_soft_cell(results: Path, experiment: str, algorithm: str) -> bool:
    """Whether a cell's runs record P2 arrays (a holdout matrix or importance weights); its
    first seed answers for all, as every seed runs the same code."""
    seeds = seed_dirs(results, experiment, algorithm)
    return bool(seeds) and any(k == "importance" or k.startswith("holdout_")
                               for k in read_seed(seeds[0]).arrays)


def _rounds(arrays: Mapping[str, list], key: str, every_round: bool,
            scale: float = 1.0) -> np.ndarray | None:
    """[R, ...] of every round if `every_round`, else [1, ...] of the last one."""
    rows = arrays.get(key)
    return None if rows is None else scale * np.asarray(rows if every_round else rows[-1:],
                                                        dtype=float)


def seed_result(history: SeedHistory, every_round: bool) -> SeedResult:
    measure = ACCURACY if TEST_ACC.name in history.records[-1] else MSE
    last = {k: v * metric(k).scale if k in METRICS else v
            for k, v in history.records[-1].items()}
    holdout = _rounds(history.arrays, f"holdout_{measure.suffix}", every_round, measure.scale)
    importance = _rounds(history.arrays, "importance", every_round)
    match = history.arrays.get("center_of_distribution")
    return SeedResult(
        seed=history.seed, measure=measure, last=last,
        holdout=None if holdout is None else holdout[-1],
        match=None if match is None else np.asarray(match[-1]),
        importance=None if importance is None else importance[-1],
        mixture_mae=[r[MIXTURE_MAE.name] for r in history.records if MIXTURE_MAE.name in r],
        holdout_rounds=holdout if every_round else None,
        importance_rounds=importance if every_round else None)


def read_cell(results: Path, experiment: str, algorithm: str) -> list[SeedResult]:
    """Every seed of a cell, read one at a time (only the first keeps its rounds)."""
    dirs = seed_dirs(results, experiment, algorithm)
    return [seed_result(read_seed(d), every_round=i == 0) for i, d in enumerate(dirs)]


def cell_measure(cells: Mapping[str, Sequence[SeedResult]]) -> Measure:
    """The measure of an experiment's cells (one task for all); MSE when there is no seed."""
    return next((s.measure for seeds in cells.values() for s in seeds), MSE)


def matched_order(matrix: np.ndarray, match: np.ndarray) -> np.ndarray:
    """Columns reordered: first the centers matched to distributions 0, 1, ..., then the
    unmatched centers in index order."""
    first = [int(c) for c in match if c >= 0]
    rest = [c for c in range(matrix.shape[1]) if c not in first]
    return matrix[:, first + rest]


def center_table(seeds: Sequence[SeedResult]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std over seeds of the matched-order holdout matrices."""
    stack = np.stack([matched_order(s.holdout, s.match) for s in seeds
                      if s.holdout is not None and s.match is not None])
    return stack.mean(axis=0), stack.std(axis=0)


def aligned_importance(importance: np.ndarray, match: np.ndarray) -> np.ndarray:
    """[N, D]: each client's estimated weight on the center serving distribution d (NaN
    where no center serves d)."""
    nan = np.full(len(importance), np.nan)
    return np.stack([importance[:, c] if c >= 0 else nan for c in match], axis=1)


def cell_metrics(cells: Mapping[str, Sequence[SeedResult]]) -> dict[str, dict[str, Any]]:
    """{algorithm: {holdout_matched_<m>, local_train_<m>, mixture_mae}}: means over seeds,
    accuracy in percent; only what every seed recorded."""
    measure = cell_measure(cells)
    keys = (measure.holdout_matched.name, measure.local_train.name, MIXTURE_MAE.name)
    return {alg: {k: round(float(np.mean([s.last[k] for s in seeds])), 4) for k in keys
                  if all(k in s.last for s in seeds)} for alg, seeds in cells.items()}
