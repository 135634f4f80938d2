"""P1's sensitivity to what it does not state (issue 19): one figure and one table per swept
hyperparameter (references.yaml `p1_sweeps`, read by `clusterfl.reports.sweeps`), and the
best value per algorithm.

A value is read as the cell's primary metric at the sweep's round (default: the last),
mean ± std over seeds. The sweep experiments evaluate on a validation split of the clients'
training data (`experiments.<name>.validation_fraction`), so "best" is chosen without the
test split; the chosen configuration's test numbers are the `p1s_test_*` experiments.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clusterfl.reports.figures import pyplot, save_figure
from clusterfl.reports.runs import read_cell
from clusterfl.reports.sweeps import sweep_algorithms, sweep_values
from clusterfl.reports.tables import markdown_table, mean_std


def value_at(records: Sequence[Mapping[str, float]], name: str, round_: int | None) -> float:
    """`name` at round `round_` (counting from 1; None: the last round)."""
    if round_ is None:
        return records[-1][name]
    if not 1 <= round_ <= len(records):
        raise ValueError(f"round {round_} not in 1..{len(records)}")
    return records[round_ - 1][name]


def sweep_frame(results: Path, sweep: Mapping[str, Any],
                cells: set[tuple[str, str]]) -> pd.DataFrame:
    """One row per (value, algorithm, seed) that has results: label, algorithm, seed,
    value (the primary metric at the value's round, percent metrics x100)."""
    rows = []
    for v in sweep_values(sweep):
        for alg in sweep_algorithms(sweep):
            if (v.experiment, alg) not in cells:
                continue
            for h in read_cell(results, v.experiment, alg):
                rows.append({"label": v.label, "algorithm": alg, "seed": h.seed,
                             "value": h.primary.scale * value_at(h.records, h.primary.name,
                                                                 v.round)})
    return pd.DataFrame(rows, columns=["label", "algorithm", "seed", "value"])


def best_labels(frame: pd.DataFrame, lower_is_better: bool = False) -> dict[str, str]:
    """Per algorithm, the label with the best mean over seeds (the first of equal ones)."""
    out = {}
    for alg, g in frame.groupby("algorithm", sort=False):
        means = g.groupby("label", sort=False)["value"].mean()
        out[str(alg)] = str(means.idxmin() if lower_is_better else means.idxmax())
    return out


def sweep_markdown(frame: pd.DataFrame, variable: str, best: Mapping[str, str]) -> str:
    """Rows: values; columns: algorithms, "mean ± std" (best in bold)."""
    algorithms = list(dict.fromkeys(frame["algorithm"]))
    rows = []
    for label in dict.fromkeys(frame["label"]):
        cells = []
        for alg in algorithms:
            values = frame[(frame["label"] == label) & (frame["algorithm"] == alg)]["value"]
            text = mean_std(list(values))
            cells.append(f"**{text}**" if best.get(alg) == label else text)
        rows.append([label, *cells])
    return "\n".join(markdown_table([variable, *algorithms], rows)) + "\n"


def sensitivity_figure(frame: pd.DataFrame, variable: str, ylabel: str, title: str,
                       path: Path) -> None:
    """The metric against the swept values (in the order written), one line per algorithm,
    mean ± std over seeds as error bars."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    labels = list(dict.fromkeys(frame["label"]))
    for alg, g in frame.groupby("algorithm", sort=False):
        stats = g.groupby("label", sort=False)["value"].agg(
            mean="mean", std=lambda s: float(np.std(s)))  # population std, as the tables
        xs = [labels.index(str(label)) for label in stats.index]
        ax.errorbar(xs, stats["mean"], yerr=stats["std"], marker="o",
                    capsize=3, label=str(alg))
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel(variable)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save_figure(fig, path, title)
