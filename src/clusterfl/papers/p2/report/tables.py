"""P2 (FedSoft) tables: Tables 1/3/4/7 (center x distribution), Tables 2/8 (FedSoft vs the
baselines) and which center served which distribution; Tables 5/6 are in `sweeps`.

Every center x distribution matrix is in matched order (`cells`); the paper's matrix is
reordered by the same rule on its own numbers, and the matching of every seed is listed.

The paper's numbers come from `references.yaml` beside this file (`PaperRef`). An experiment
on a dataset the paper did not use names the one it stands in for (`stand_in_for`); that
entry's numbers are then shown apart, under a label naming the paper's dataset, never in
brackets beside ours, so that no letters number reads as a Fashion-MNIST one.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterfl.papers.p2.report.cells import SeedResult, cell_measure, center_table, matched_order
from clusterfl.reports.tables import markdown_table, mean_std
from clusterfl.steps.clustering import match_centers
from clusterfl.steps.metrics import MIXTURE_MAE


def _f(x: float) -> str:
    return f"{x:.1f}"


def paper_matched(paper: Sequence[Sequence[float]], lower_is_better: bool = True
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The paper's matrix in matched order, and its matching."""
    matrix = np.asarray(paper, dtype=float)
    match = match_centers(matrix, lower_is_better)
    return matched_order(matrix, match), match


def _center_columns(names: Sequence[str], width: int) -> list[str]:
    return [f"center of {n}" for n in names] + [f"center {j}" for j in range(len(names), width)]


def matching_line(names: Sequence[str], match: np.ndarray) -> str:
    return ", ".join(f"{n} → c{int(c)}" if c >= 0 else f"{n} → none"
                     for n, c in zip(names, match, strict=True))


def table1_markdown(names: Sequence[str], mean: np.ndarray, std: np.ndarray,
                    paper: Sequence[Sequence[float]] | None, lower_is_better: bool = True) -> str:
    """Rows: test distributions; columns: the center serving distribution j. Cells:
    "ours ± std (paper)"; `paper` in the paper's own center order (it is matched here)."""
    ref, ref_match = paper_matched(paper, lower_is_better) if paper is not None else (None, None)
    rows = []
    for d, name in enumerate(names):
        cells = []
        for j in range(mean.shape[1]):
            theirs = "" if ref is None or j >= ref.shape[1] else f" ({_f(ref[d, j])})"
            cells.append(f"{_f(mean[d, j])} ± {_f(std[d, j])}{theirs}")
        rows.append([name, *cells])
    lines = markdown_table(["distribution", *_center_columns(names, mean.shape[1])], rows)
    if ref_match is not None:
        lines.append("\nPaper's centers, matched: " + matching_line(names, ref_match))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PaperRef:
    """The paper's numbers for an experiment or a sweep (an entry of references.yaml)."""

    entry: Mapping[str, Any]
    label: str  # "paper", or "paper, <its dataset>" for the reference of a stand-in
    stand_in_for: str | None = None  # the key of `entry`, when the asker stands in for it

    @property
    def stand_in(self) -> bool:
        return self.stand_in_for is not None

    def rows(self, count: int) -> list[str]:
        """The paper's names for its distributions (rows)."""
        return list(self.entry.get("distributions") or
                    [f"paper distribution {d}" for d in range(count)])

    def aligned_with(self, names: Sequence[str]) -> bool:
        """Whether the paper's rows are these distributions, so that its numbers may sit
        beside ours: its own numbers, rows named alike (or unnamed, as for the synthetic)."""
        rows = self.entry.get("distributions")
        return not self.stand_in and (rows is None or list(rows) == list(names))


def paper_reference(entries: Mapping[str, Any], key: str) -> PaperRef | None:
    """`entries[key]`, or for a stand-in the entry it names, labelled with that entry's
    dataset; None when there is neither."""
    entry = entries.get(key) or {}
    target = entry.get("stand_in_for")
    if target is None:
        return PaperRef(entry, "paper") if entry else None
    theirs = entries.get(target) or {}
    return PaperRef(theirs, f"paper, {theirs.get('dataset', target)}", target) if theirs else None


def apart_heading(paper: PaperRef) -> str:
    where = f" ({paper.entry['source']})" if paper.entry.get("source") else ""
    return (f"**{paper.label}**{where}: the paper's own data, distributions and centers; "
            "not numbers for this experiment.\n\n")


def paper_matrix_markdown(paper: PaperRef, matrix: Sequence[Sequence[float]],
                          lower_is_better: bool) -> str:
    """The paper's center x distribution matrix alone, matched, rows as the paper names them."""
    aligned, match = paper_matched(matrix, lower_is_better)
    names = paper.rows(len(aligned))
    rows = [[n, *(_f(x) for x in aligned[d])] for d, n in enumerate(names)]
    lines = markdown_table(["distribution", *_center_columns(names, aligned.shape[1])], rows)
    lines.append("\nPaper's centers, matched: " + matching_line(names, match))
    return apart_heading(paper) + "\n".join(lines) + "\n"


def cluster_markdown(names: Sequence[str], seeds: Sequence[SeedResult],
                     paper: PaperRef | None) -> str:
    """Table 1's shape for one cell (`seeds` with holdout matrices), then each seed's
    matching; the paper's matrix in brackets when it is for these distributions, else (a
    stand-in's reference) after all of ours, apart and labelled."""
    measure = seeds[0].measure
    matrix = None if paper is None else paper.entry.get(f"holdout_{measure.suffix}")
    apart = not (matrix is None or paper is None or paper.aligned_with(names))
    mean, std = center_table(seeds)
    text = table1_markdown(names, mean, std, None if apart else matrix, measure.lower_is_better)
    matchings = []
    for s in seeds:
        assert s.match is not None  # the caller passes the seeds that have one
        matchings.append(f"seed {s.seed}: {matching_line(names, s.match)}")
    text += ("\nCenter serving each distribution (Hungarian matching): " + "; ".join(matchings)
             + "\n")
    if apart and paper is not None and matrix is not None:
        text += "\n" + paper_matrix_markdown(paper, matrix, measure.lower_is_better)
    return text


def baseline_rows(cells: Mapping[str, Sequence[SeedResult]], names: Sequence[str]
                  ) -> list[list[str]]:
    """Table 2's shape per algorithm: the best center's number on each distribution (its index
    per seed in brackets), w-bar (local models on their own training data, mean over clients),
    the sample-weighted number on local test splits, and the importance-weight MAE. "–": the
    algorithm does not record it (IFCA without held-out sets has no arrays)."""
    measure = cell_measure(cells)
    best_center = np.argmin if measure.lower_is_better else np.argmax
    rows = []
    for alg, seeds in cells.items():
        row = [alg]
        have = [s.holdout for s in seeds if s.holdout is not None]
        for d in range(len(names)):
            which = [int(best_center(h[d])) for h in have]
            best = [float(h[d, c]) for h, c in zip(have, which, strict=True)]
            index = ",".join(map(str, which))
            row.append(f"{mean_std(best, measure.digits)} ({index})" if have else "–")
        for shown in (measure.local_train, measure.test, MIXTURE_MAE):
            digits = 2 if shown is MIXTURE_MAE else measure.digits
            row.append(mean_std([s.last[shown.name] for s in seeds if shown.name in s.last],
                                digits))
        rows.append(row)
    return rows


def paper_baseline_cell(entry: Mapping[str, Any], names: Sequence[str]) -> str:
    """One algorithm's row of the paper's Table 2/8, its distributions named as the paper's."""
    best = ", ".join(f"{n} {_f(b)} ({c})" for n, b, c in
                     zip(names, entry["best"], entry["best_center"], strict=True))
    return f"{best}; w̄ {_f(entry['local'])}"


def baseline_markdown(cells: Mapping[str, Sequence[SeedResult]], names: Sequence[str],
                      paper: PaperRef | None = None) -> str:
    """Table 2's shape; with the paper's row of each algorithm in a last column, under the
    paper's label ("paper, EMNIST letters" for a stand-in)."""
    unit = cell_measure(cells).unit
    cols = ([f"best center on {n} (index per seed)" for n in names]
            + [f"w̄: local train {unit}", f"local test {unit}", "importance MAE"])
    rows = baseline_rows(cells, names)
    table2 = {} if paper is None else paper.entry.get("table2") or {}
    if paper is not None and table2:
        cols.append(paper.label)
        theirs = paper.rows(len(names))
        rows = [[*r, paper_baseline_cell(table2[r[0]], theirs) if r[0] in table2 else "–"]
                for r in rows]
    return "\n".join(markdown_table(["algorithm", *cols], rows)) + "\n"
