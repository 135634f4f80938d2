"""The cross-paper results table: every cell by its primary metric, mean over seeds, beside
its paper's number.

A paper's number for a cell is `values.<algorithm>` of the experiment's entry in the paper's
references.yaml, in the cell's primary metric as shown (percent metrics in %), with the
entry's `source`. `ours` is the cell scored as its paper's section scores it (`scored`: P1's
official protocol, say), else the last round; `diff` is ours minus the paper's. The last and
best round of the primary metric stay beside it, and each gap carries its notes
(`reports.context.gap_notes`) under the table.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from clusterfl.reports.tables import markdown_table, plus_minus
from clusterfl.steps.metrics import metric

References = Mapping[str, Mapping[str, Any]]  # experiment -> its references.yaml entry
LAST_ROUND = "last round"  # how a cell is scored unless its paper's section says otherwise


def paper_value(references: References, experiment: str, algorithm: str) -> float | None:
    value: float | None = (references.get(experiment) or {}).get("values", {}).get(algorithm)
    return value


def summary_table(seeds: pd.DataFrame, references: References) -> pd.DataFrame:
    """Mean and std over seeds per cell (rows of `runs.seed_rows`), beside the paper's
    number and the difference."""
    rows = []
    for (exp, alg), g in seeds.groupby(["experiment", "algorithm"], sort=False):
        paper = paper_value(references, exp, alg)
        last = g["last"].to_numpy()
        rows.append({
            "experiment": exp,
            "algorithm": alg,
            "metric": g["metric"].iloc[0],
            "seeds": len(g),
            "paper": paper,
            "last_mean": last.mean(),
            "last_std": last.std(ddof=0),
            "best_mean": g["best"].mean(),
            "best_std": g["best"].std(ddof=0),
            "best_round_mean": g["best_round"].mean(),
            "ours_mean": last.mean(),
            "ours_std": last.std(ddof=0),
            "scored_as": LAST_ROUND,
            "diff_vs_paper": None if paper is None else last.mean() - paper,
        })
    return pd.DataFrame(rows)


def scored(table: pd.DataFrame, scores: pd.DataFrame, label: str) -> pd.DataFrame:
    """`table` with each cell of `scores` (seed rows as `runs.seed_rows` gives them, `last`
    holding the number) scored as their `scored_as` column says, else `label`: `ours` and
    `diff` from those numbers."""
    out = table.copy()
    out["diff_vs_paper"] = out["diff_vs_paper"].astype(object)
    for (exp, alg), g in scores.groupby(["experiment", "algorithm"], sort=False):
        at = out.index[(out["experiment"] == exp) & (out["algorithm"] == alg)]
        values = g["last"].to_numpy(dtype=float)
        for i in at:
            paper = out.at[i, "paper"]
            out.at[i, "ours_mean"], out.at[i, "ours_std"] = values.mean(), values.std(ddof=0)
            out.at[i, "scored_as"] = g["scored_as"].iloc[0] if "scored_as" in g else label
            out.at[i, "diff_vs_paper"] = None if _missing(paper) else values.mean() - paper
    return out


def _missing(value: Any) -> bool:
    return value is None or pd.isna(value)


def results_markdown(table: pd.DataFrame, references: References,
                     notes: Mapping[tuple[str, str], Sequence[str]] | None = None) -> str:
    """The table, and under it the numbered notes its `note` column refers to."""
    header = ["experiment", "algorithm", "metric", "paper", "ours", "scored as",
              "diff (ours − paper)", "ours, last round", "ours, best round", "best round",
              "seeds", "note"]
    numbered: dict[str, int] = {}
    rows = []
    for r in table.itertuples():
        source = (references.get(r.experiment) or {}).get("source")
        where = f" ({source})" if source else ""
        paper = "–" if _missing(r.paper) else f"{r.paper:.2f}{where}"
        diff = "–" if _missing(r.diff_vs_paper) else f"{r.diff_vs_paper:+.2f}"
        mine = [numbered.setdefault(n, len(numbered) + 1)
                for n in (notes or {}).get((r.experiment, r.algorithm), [])]
        rows.append([r.experiment, r.algorithm, metric(r.metric).label, paper,
                     plus_minus(r.ours_mean, r.ours_std), r.scored_as, diff,
                     plus_minus(r.last_mean, r.last_std), plus_minus(r.best_mean, r.best_std),
                     f"{r.best_round_mean:.0f}", str(r.seeds), ", ".join(map(str, mine))])
    text = "\n".join(markdown_table(header, rows)) + "\n"
    if numbered:
        text += "\nNotes on the gaps to the papers:\n\n" + "".join(
            f"{i}. {note}\n" for note, i in numbered.items())
    return text


def paper_layout(table: pd.DataFrame) -> str:
    """A paper's results-table shape (P1's Table 2): algorithms as rows, experiments as
    columns, cells "ours ± std (paper)"."""
    experiments = list(dict.fromkeys(table["experiment"]))
    algorithms = list(dict.fromkeys(table["algorithm"]))
    cells = {(r.experiment, r.algorithm): r for r in table.itertuples()}
    rows = []
    for alg in algorithms:
        row = [alg]
        for exp in experiments:
            r = cells.get((exp, alg))
            if r is None:
                row.append("")
                continue
            paper = "" if _missing(r.paper) else f" ({r.paper:.2f})"
            row.append(f"{plus_minus(r.last_mean, r.last_std)}{paper}")
        rows.append(row)
    return "\n".join(markdown_table(["algorithm", *experiments], rows)) + "\n"


def metrics_json(table: pd.DataFrame) -> dict[str, Any]:
    """Nested {experiment: {algorithm: {last_<m>, best_<m>}}} for `dvc metrics show`, `<m>`
    the primary metric's name less its `test_` prefix (`last_acc` in %, `last_mse`)."""
    out: dict[str, Any] = {}
    for r in table.itertuples():
        unit = r.metric.removeprefix("test_")
        out.setdefault(r.experiment, {})[r.algorithm] = {
            f"last_{unit}": round(float(r.last_mean), 4),
            f"best_{unit}": round(float(r.best_mean), 4),
        }
    plain: dict[str, Any] = json.loads(json.dumps(out))
    return plain


def merge_metrics(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Merge `extra` into `into`, nested mappings key by key (a paper's numbers join the
    cell's generic ones)."""
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            merge_metrics(into[key], value)
        else:
            into[key] = value
