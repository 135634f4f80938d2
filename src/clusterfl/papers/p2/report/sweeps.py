"""P2 Tables 5 and 6: one FedSoft setting swept (lambda, sigma0), one experiment per value.

Which experiments form a sweep, and the paper's numbers per value, are in references.yaml
(`p2_sweeps`). Each value's column holds every distribution's matched center (c̄, as in
`cells.center_table`) and the local models' w̄.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from clusterfl.papers.p2.report.cells import Measure, SeedResult
from clusterfl.papers.p2.report.tables import PaperRef, apart_heading, paper_matched
from clusterfl.reports.tables import markdown_table, mean_std


def sweep_column(seeds: Sequence[SeedResult], distributions: int) -> list[list[float]]:
    """[D + 1][seeds]: each seed's matched center on each distribution (c̄ per
    distribution), then its w̄ (local models on their own training data)."""
    have = [(s.holdout, s.match) for s in seeds if s.holdout is not None and s.match is not None]
    rows = [[float(holdout[d, match[d]]) for holdout, match in have if match[d] >= 0]
            for d in range(distributions)]
    key = seeds[0].measure.local_train.name
    return [*rows, [s.last[key] for s in seeds if key in s.last]]


def paper_sweep(entry: Mapping[str, Any], labels: Sequence[str], measure: Measure
                ) -> list[list[float] | None]:
    """Per swept value (by label), the paper's matched center per distribution and its w̄
    (`local`), like `sweep_column`; None where the paper has no number."""
    values = {str(v["label"]): v for v in entry.get("values", [])}
    out: list[list[float] | None] = []
    for label in labels:
        value = values.get(label, {})
        matrix = value.get(f"holdout_{measure.suffix}")
        if matrix is None:
            out.append(None)
            continue
        aligned, _ = paper_matched(matrix, measure.lower_is_better)
        out.append([float(aligned[d, d]) for d in range(len(aligned))] + [float(value["local"])])
    return out


def sweep_markdown(variable: str, names: Sequence[str], labels: Sequence[str],
                   ours: Sequence[Sequence[Sequence[float]]] | None,
                   paper: Sequence[Sequence[float] | None] | None, measure: Measure) -> str:
    """Tables 5/6's shape: rows are each distribution's matched center (c̄) and the local
    models (w̄), columns the swept values; cells "ours ± std (paper)", or the paper's number
    alone when `ours` is None."""
    rows = []
    for r, name in enumerate([*(f"center of {n}" for n in names), "local w̄"]):
        digits = 1 if r < len(names) else measure.digits
        cells = []
        for v in range(len(labels)):
            theirs = None if paper is None or (column := paper[v]) is None else column[r]
            if ours is None:
                cells.append("–" if theirs is None else f"{theirs:.{digits}f}")
                continue
            text = mean_std(ours[v][r], digits)
            cells.append(text if theirs is None else f"{text} ({theirs:.{digits}f})")
        rows.append([name, *cells])
    return "\n".join(markdown_table(["model", *(f"{variable} = {x}" for x in labels)], rows)) + "\n"


def sweep_block(variable: str, names: Sequence[str], labels: Sequence[str],
                ours: Sequence[Sequence[Sequence[float]]], paper: PaperRef | None,
                measure: Measure) -> str:
    """Our sweep table, the paper's numbers in brackets when they are for these
    distributions, else (a stand-in's reference) in a table of their own, apart."""
    theirs = None if paper is None else paper_sweep(paper.entry, labels, measure)
    if paper is None or theirs is None or not any(theirs) or paper.aligned_with(names):
        return sweep_markdown(variable, names, labels, ours, theirs, measure)
    return (sweep_markdown(variable, names, labels, ours, None, measure) + "\n"
            + apart_heading(paper)
            + sweep_markdown(variable, paper.rows(len(names)), labels, None, theirs, measure))


def sweep_metrics(names: Sequence[str], column: Sequence[Sequence[float]], measure: Measure
                  ) -> dict[str, float]:
    """One swept value's row of metrics.json: matched center per distribution, w̄."""
    keys = [*(f"matched_{n}" for n in names), measure.local_train.name]
    return {k: round(float(np.mean(v)), 4) for k, v in zip(keys, column, strict=True) if len(v)}
