"""P2 (FedSoft) tables from run histories: Table 1/3 (center x distribution), Table 2 (FedSoft
vs the baselines), the importance-weight error and which center served which distribution.

Centers have no fixed order: center 0 of one seed may be center 1 of the next. So every
center x distribution matrix is shown in *matched* order: column j is the center that the
Hungarian matching (`soft_eval.match_centers`, on that seed's last-round holdout matrix)
assigns to distribution j; the paper's matrix is reordered by the same rule on its own
numbers, and the matching of every seed is listed explicitly. Means are over seeds, last round.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.history import read_history
from clusterfl.soft_eval import match_centers


@dataclass(frozen=True)
class SeedResult:
    """One seed of a P2 cell at the last round: its scalars and its per-round arrays."""

    seed: int
    last: dict[str, float]
    holdout: np.ndarray | None  # [D, S] MSE of center s on distribution d
    match: np.ndarray | None  # [D]: the center serving distribution d
    importance: np.ndarray | None  # [N, S]
    mixture_mae: list[float]  # per round


def read_cell(results_dir: Path, experiment: str, algorithm: str) -> list[SeedResult]:
    out = []
    for seed_dir in sorted((results_dir / experiment / algorithm).glob("seed*")):
        h = read_history(seed_dir)
        arrays = {k: np.asarray(v[-1]) for k, v in h.arrays.items()}
        out.append(SeedResult(
            int(seed_dir.name.removeprefix("seed")), h.records[-1], arrays.get("holdout_mse"),
            arrays.get("center_of_distribution"), arrays.get("importance"),
            [r["mixture_mae"] for r in h.records if "mixture_mae" in r]))
    return out


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


def paper_matched(paper: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """The paper's matrix in matched order, and its matching (lower MSE is better)."""
    matrix = np.asarray(paper, dtype=float)
    match = match_centers(matrix, lower_is_better=True)
    return matched_order(matrix, match), match


def _f(x: float) -> str:
    return f"{x:.1f}"


def table1_markdown(names: Sequence[str], mean: np.ndarray, std: np.ndarray,
                    paper: Sequence[Sequence[float]] | None) -> str:
    """Rows: test distributions; columns: the center serving distribution j. Cells:
    "ours ± std (paper)"; `paper` in the paper's own center order (it is matched here)."""
    ref, ref_match = paper_matched(paper) if paper is not None else (None, None)
    cols = [f"center of {n}" for n in names] + [f"center {j}" for j in
                                                 range(len(names), mean.shape[1])]
    lines = ["| distribution | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for d, name in enumerate(names):
        cells = []
        for j in range(mean.shape[1]):
            theirs = "" if ref is None or j >= ref.shape[1] else f" ({_f(ref[d, j])})"
            cells.append(f"{_f(mean[d, j])} ± {_f(std[d, j])}{theirs}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if ref_match is not None:
        lines.append("\nPaper's centers, matched: " + matching_line(names, ref_match))
    return "\n".join(lines) + "\n"


def matching_line(names: Sequence[str], match: np.ndarray) -> str:
    return ", ".join(f"{n} → c{int(c)}" if c >= 0 else f"{n} → none"
                     for n, c in zip(names, match, strict=True))


def _pm(values: Sequence[float]) -> str:
    return f"{np.mean(values):.2f} ± {np.std(values):.2f}" if len(values) else "–"


def baseline_rows(cells: Mapping[str, Sequence[SeedResult]], names: Sequence[str]
                  ) -> list[list[str]]:
    """Table 2's shape per algorithm: the best center's MSE on each distribution (its index
    per seed in brackets), w-bar (local models on their own training data, mean over clients),
    the sample-weighted MSE on local test splits, and the importance-weight MAE. "–": the
    algorithm does not record it (IFCA has no held-out or importance arrays)."""
    rows = []
    for alg, seeds in cells.items():
        row = [alg]
        for d in range(len(names)):
            have = [s for s in seeds if s.holdout is not None]
            best = [float(s.holdout[d].min()) for s in have]
            which = ",".join(str(int(s.holdout[d].argmin())) for s in have)
            row.append(f"{_pm(best)} ({which})" if have else "–")
        for key in ("local_train_mse", "test_mse", "mixture_mae"):
            row.append(_pm([s.last[key] for s in seeds if key in s.last]))
        rows.append(row)
    return rows


def baseline_markdown(cells: Mapping[str, Sequence[SeedResult]], names: Sequence[str]) -> str:
    cols = ([f"best center on {n} (index per seed)" for n in names]
            + ["w̄: local train MSE", "local test MSE", "importance MAE"])
    lines = ["| algorithm | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r) + " |" for r in baseline_rows(cells, names)]
    return "\n".join(lines) + "\n"


def aligned_importance(importance: np.ndarray, match: np.ndarray) -> np.ndarray:
    """[N, D]: each client's estimated weight on the center serving distribution d (NaN
    where no center serves d)."""
    nan = np.full(len(importance), np.nan)
    return np.stack([importance[:, c] if c >= 0 else nan for c in match], axis=1)


def metrics(cells: Mapping[str, Sequence[SeedResult]]) -> dict[str, dict[str, Any]]:
    """{algorithm: {holdout_matched_mse, local_train_mse, mixture_mae}}: means over seeds."""
    keys = ("holdout_matched_mse", "local_train_mse", "mixture_mae")
    return {alg: {k: round(float(np.mean([s.last[k] for s in seeds])), 4) for k in keys
                  if all(k in s.last for s in seeds)} for alg, seeds in cells.items()}
