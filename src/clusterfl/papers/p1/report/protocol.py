"""P1's reported protocol: which model, and which round, a "personalized accuracy" is.

P1 does not say which round Table 2 reports; the official pFedMe code reports each run's
best round (`utils/plot_utils.py` `average_data`: the mean over runs of each run's max) of
its "personalized" evaluation, which measures the local w_i after local training, not
theta_i (`algorithms/pfedme.py`, `evaluated_model`). For every pFedMe/pFedKM cell this
table gives each model the `model_views` evaluator records (theta_i, local w_i, the global
model before and after the beta-mix) at the last round, the best round and the mean of the
last 10 rounds, mean ± std over seeds, so that a reader sees how far the protocol alone
moves the number. A cell that records no view (IFCA, FedAvg, Local) gets one row, its own
evaluated model (its primary metric), so that the best-round reading, the part of the
official protocol that applies to every algorithm, is shown for it too.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.reports.runs import read_cell
from clusterfl.reports.tables import markdown_table, mean_std
from clusterfl.steps.metrics import VIEW_LABELS, VIEW_METRICS, Metric

WINDOW = 10  # "the mean of the last 10 rounds"
OWN = "own"  # the view name of a cell's primary metric, where it records no view
OWN_LABEL = "its evaluated model (no views recorded)"


@dataclass(frozen=True)
class Protocol:
    last: float
    best: float
    best_round: int  # counting from 1; the first of equal values
    mean_last: float  # mean of the last `window` rounds (all rounds if fewer)


def protocol(values: Sequence[float], window: int = WINDOW,
             lower_is_better: bool = False) -> Protocol:
    """The last value, the best (and its round) and the mean of the last `window` values of
    one run's per-round series."""
    if not len(values):
        raise ValueError("empty series")
    series = np.asarray(values, dtype=float)
    best = int(np.argmin(series) if lower_is_better else np.argmax(series))
    return Protocol(last=float(series[-1]), best=float(series[best]), best_round=best + 1,
                    mean_last=float(series[-window:].mean()))


def view_metric(records: Sequence[Mapping[str, float]], view: str) -> Metric | None:
    """The metric a run recorded for `view` (accuracy or MSE), None if it recorded none."""
    return next((m for m in VIEW_METRICS[view] if m.name in records[-1]), None)


def protocol_rows(results: Path, experiment: str, algorithm: str) -> list[dict[str, Any]]:
    """One row per seed and recorded view of a cell (percent metrics x100); a run that
    records no view: one row, its primary metric (view `OWN`)."""
    rows = []
    for history in read_cell(results, experiment, algorithm):
        recorded = [(view, m) for view in VIEW_METRICS
                    if (m := view_metric(history.records, view)) is not None]
        for view, shown in recorded or [(OWN, history.primary)]:
            p = protocol([r[shown.name] * shown.scale for r in history.records],
                         lower_is_better=shown.lower_is_better)
            rows.append({"experiment": experiment, "algorithm": algorithm, "view": view,
                         "seed": history.seed, "last": p.last, "best": p.best,
                         "best_round": p.best_round, "mean_last": p.mean_last})
    return rows


def protocol_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows: cell x model; columns: last, best (mean best round), mean of the last 10."""
    grouped: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault((row["experiment"], row["algorithm"], row["view"]), []).append(row)
    lines = []
    for (exp, alg, view), seeds in grouped.items():
        rounds = np.mean([s["best_round"] for s in seeds])
        lines.append([exp, alg, VIEW_LABELS.get(view, OWN_LABEL),
                      mean_std([s["last"] for s in seeds]),
                      f"{mean_std([s['best'] for s in seeds])} (r {rounds:.0f})",
                      mean_std([s["mean_last"] for s in seeds]), str(len(seeds))])
    header = ["experiment", "algorithm", "model", "last round", "best round",
              f"mean of last {WINDOW}", "seeds"]
    return "\n".join(markdown_table(header, lines)) + "\n"


OFFICIAL_VIEW = "local_w"  # the official code's "personalized" model (`evaluated_model: local`)
# how the suite's results table labels a cell scored by `official_rows`
OFFICIAL_LABELS = {OFFICIAL_VIEW: "P1 protocol: local w_i, best round",
                   OWN: "P1 protocol: own model, best round"}


def official_rows(rows: Sequence[Mapping[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Per seed of each cell, the number the official pFedMe protocol reports: the best round
    of the local w_i where the run recorded it, else of the cell's own model (IFCA, FedAvg,
    Local: the best-round part of the protocol applies to every algorithm). As
    `runs.seed_rows` rows, so that `summary_table` and `paper_layout` lay them out like
    Table 2 (`last` holds that best-round number), each with its `scored_as` label."""
    chosen: dict[tuple[str, str, int], Mapping[str, Any]] = {}
    for row in rows:
        key = (row["experiment"], row["algorithm"], row["seed"])
        if row["view"] in (OFFICIAL_VIEW, OWN):
            chosen[key] = row
    return [{"experiment": r["experiment"], "algorithm": r["algorithm"], "seed": r["seed"],
             "metric": metric, "last": r["best"], "best": r["best"],
             "best_round": r["best_round"], "scored_as": OFFICIAL_LABELS[r["view"]]}
            for r in chosen.values()]
