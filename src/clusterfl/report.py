"""Report builder: run histories (never MLflow) -> tables beside the papers' numbers + figures.

Each cell is summarised by its primary metric (`history.primary_metric`): `test_acc` for
classification, in percent as the papers print it, or `test_mse` for regression (P2; lower is
better). The `metric` column says which; `diff` is ours (last round, mean over seeds) minus
the paper's.
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clusterfl.history import PRIMARY, PRIMARY_REGRESSION, read_history

UNITS = {PRIMARY: "test accuracy (%)", PRIMARY_REGRESSION: "test MSE"}


def seed_rows(results_dir: Path, experiment: str, algorithm: str) -> list[dict[str, Any]]:
    """One row per seed of a cell: its metric's last and best value (accuracy in %), the
    best round and the last test loss (none for regression: the MSE is the loss)."""
    rows = []
    cell = results_dir / experiment / algorithm
    for seed_dir in sorted(cell.glob("seed*")):
        summary = read_history(seed_dir).summary()
        metric = PRIMARY if f"last_{PRIMARY}" in summary else PRIMARY_REGRESSION
        scale = 100 if metric == PRIMARY else 1
        rows.append({
            "experiment": experiment,
            "algorithm": algorithm,
            "seed": int(seed_dir.name.removeprefix("seed")),
            "metric": metric,
            "last": scale * summary[f"last_{metric}"],
            "best": scale * summary[f"best_{metric}"],
            "best_round": summary["best_round"],
            "last_loss": summary.get("last_test_loss"),
        })
    return rows


CURVE_METRICS = ("test_acc", "test_loss", "train_loss", "ari", "kmeans_seconds",
                 "kmeans_iterations", "center_distance", "local_distance", "test_mse",
                 "train_mse", "local_train_mse", "local_test_mse", "holdout_best_mse",
                 "holdout_matched_mse", "mixture_mae")
PERCENT = ("test_acc",)


def mean_curve(results_dir: Path, experiment: str, algorithm: str) -> pd.DataFrame:
    """Per-round mean over seeds of every metric the runs recorded (accuracy in %), plus the
    std of test accuracy."""
    frames = []
    for seed_dir in sorted((results_dir / experiment / algorithm).glob("seed*")):
        frames.append(pd.DataFrame(read_history(seed_dir).records))
    grouped = pd.concat(frames).groupby("round")
    curve = pd.DataFrame({"round": grouped.size().index})
    for name in CURVE_METRICS:
        if name in frames[0]:
            scale = 100 if name in PERCENT else 1
            curve[name] = scale * grouped[name].mean().to_numpy()
    for name in (PRIMARY, PRIMARY_REGRESSION):
        if name in frames[0]:
            scale = 100 if name in PERCENT else 1
            curve[f"{name}_std"] = scale * grouped[name].std(ddof=0).to_numpy()
    return curve


def curve_metric(curve: pd.DataFrame) -> str:
    """The primary metric a mean curve carries: test_acc, else test_mse."""
    return PRIMARY if PRIMARY in curve else PRIMARY_REGRESSION


def assignments(results_dir: Path, experiment: str, algorithm: str) -> np.ndarray | None:
    """The first seed's cluster of every client in every round, `[rounds, clients]`."""
    seeds = sorted((results_dir / experiment / algorithm).glob("seed*"))
    if not seeds:
        return None
    rows = read_history(seeds[0]).arrays.get("cluster")
    return None if rows is None else np.asarray(rows)


def summary_table(seeds: pd.DataFrame, references: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Mean and std over seeds per cell, beside the paper's number and the difference."""
    rows = []
    for (exp, alg), g in seeds.groupby(["experiment", "algorithm"], sort=False):
        paper = (references.get(exp) or {}).get("values", {}).get(alg)
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
            "diff_vs_paper": None if paper is None else last.mean() - paper,
        })
    return pd.DataFrame(rows)


def _pm(mean: float, std: float) -> str:
    return f"{mean:.2f} ± {std:.2f}"


def markdown_table(table: pd.DataFrame, references: Mapping[str, Mapping[str, Any]]) -> str:
    header = ("| experiment | algorithm | metric | paper | ours, last round | ours, best round "
              "| best round | diff (last − paper) | seeds |")
    lines = [header, "|" + "---|" * 9]
    for r in table.itertuples():
        ref = references.get(r.experiment) or {}
        where = f" ({ref['source']})" if ref.get("source") else ""
        paper = "–" if r.paper is None or pd.isna(r.paper) else f"{r.paper:.2f}{where}"
        missing = r.diff_vs_paper is None or pd.isna(r.diff_vs_paper)
        diff = "–" if missing else f"{r.diff_vs_paper:+.2f}"
        lines.append(
            f"| {r.experiment} | {r.algorithm} | {UNITS[r.metric]} | {paper} "
            f"| {_pm(r.last_mean, r.last_std)} | {_pm(r.best_mean, r.best_std)} "
            f"| {r.best_round_mean:.0f} | {diff} | {r.seeds} |"
        )
    return "\n".join(lines) + "\n"


def paper_layout(table: pd.DataFrame) -> str:
    """Table 2's shape: algorithms as rows, experiments as columns, "ours (paper)" cells."""
    experiments = list(dict.fromkeys(table["experiment"]))
    algorithms = list(dict.fromkeys(table["algorithm"]))
    lines = ["| algorithm | " + " | ".join(experiments) + " |",
             "|---|" + "---|" * len(experiments)]
    cells = {(r.experiment, r.algorithm): r for r in table.itertuples()}
    for alg in algorithms:
        row = []
        for exp in experiments:
            r = cells.get((exp, alg))
            if r is None:
                row.append("")
                continue
            paper = "" if r.paper is None or pd.isna(r.paper) else f" ({r.paper:.2f})"
            row.append(f"{_pm(r.last_mean, r.last_std)}{paper}")
        lines.append(f"| {alg} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def convergence_figure(curves: Mapping[tuple[str, str], pd.DataFrame], path: Path) -> None:
    """One panel per experiment: mean test accuracy (or MSE) over rounds per algorithm,
    ± std band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    experiments = list(dict.fromkeys(exp for exp, _ in curves))
    cols = min(3, len(experiments))
    rows = int(np.ceil(len(experiments) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, exp in zip(axes.flat, experiments, strict=False):
        for (e, alg), curve in curves.items():
            if e != exp:
                continue
            y = curve_metric(curve)
            ax.plot(curve["round"], curve[y], label=alg)
            ax.fill_between(curve["round"], curve[y] - curve[f"{y}_std"],
                            curve[y] + curve[f"{y}_std"], alpha=0.2)
            ax.set_ylabel(UNITS[y])
        ax.set_title(exp)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(experiments):]:
        ax.set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def metrics_json(table: pd.DataFrame) -> dict[str, Any]:
    """Nested {experiment: {algorithm: {...}}} for `dvc metrics show`: `last_acc`/`best_acc`
    (%) for classification cells, `last_mse`/`best_mse` for regression cells."""
    out: dict[str, Any] = {}
    for r in table.itertuples():
        unit = r.metric.removeprefix("test_")
        out.setdefault(r.experiment, {})[r.algorithm] = {
            f"last_{unit}": round(float(r.last_mean), 4),
            f"best_{unit}": round(float(r.best_mean), 4),
        }
    return json.loads(json.dumps(out))
