"""The benchmark's report section: the picks, the leaderboard (rows algorithms, columns
schemes, personalized test accuracy in the last round, mean ± std over seeds, rank per
scheme and average rank) and its heatmap, cluster recovery (ARI) and cost (numbers uploaded
per round). Reads the cells' histories and the tune stage's picks.json files; numbers come
from `tables` (pure, tested). Seconds per round are wall-clock, different on every run, so
they are not in these tables (DVC outs) but on the suite's costs page
(`reports/<suite>/costs.md`, `pipeline.report.write_costs`)."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clusterfl.algorithms.split_model import split_names
from clusterfl.papers.benchmark.report.sizes import read_sizes
from clusterfl.papers.benchmark.report.tables import (
    at_grid_edge,
    by_rank,
    leaderboard,
    leaderboard_markdown,
    ranks,
    scored_views,
    uploads_per_round,
)
from clusterfl.reports.figures import pyplot, save_figure
from clusterfl.reports.runs import read_cell
from clusterfl.reports.section import ReportInput, ReportOutput
from clusterfl.steps.metrics import ARI, METRICS, TEST_ACC, VIEW_LABELS, metric
from clusterfl.training.models import build_model
from clusterfl.training.tuning import cluster_field

INTRO = """Personalized test accuracy (%): the model each client uses, on its own test split, \
weighted by test samples, in the last round; mean ± std over seeds {seeds}, (rank in the \
scheme: 1 + the number of algorithms better seed by seed, i.e. whose paired differences over \
the seeds (one partition per seed, each model drawn from the seed) have a 95 % interval above \
0; `=r`: a \
rank shared by algorithms within each other's noise); **bold**: a scheme's winner only where \
it beats every other that way; rows by average rank. \
Each cell trained with the \
lr (and K) picked on the validation split (picks below; protocol: docs/benchmark.md). \
Family: global (one model), local (no communication), personalized (a model per client \
built from a shared one), clustered (models per cluster or mixture component). Each method \
is scored by the model its own paper evaluates (pFedMe and pFedKM: the local w_i after local \
training, the official pFedMe protocol; `evaluated_model` in params); "Scored model" below \
shows the other models beside it where a run recorded them.
"""


def build(report: ReportInput) -> ReportOutput:
    cells = report.cells
    algorithms = list(dict.fromkeys(a for _, a in cells))
    schemes = list(dict.fromkeys(e for e, _ in cells))
    titles = {e: e.removeprefix("bm_") for e in schemes}
    histories = {(e, a): read_cell(report.results, e, a) for e, a in cells}
    picks = {(e, a): _picks(report.results, e, a) for e, a in cells}
    rows = pd.DataFrame([
        {"experiment": e, "algorithm": a, "seed": h.seed,
         "value": TEST_ACC.scale * h.records[-1][TEST_ACC.name]}
        for (e, a), seeds in histories.items() for h in seeds])
    mean, std = leaderboard(rows, algorithms, schemes)
    ranked = ranks(rows, mean)
    seeds = sorted({h.seed for seeds in histories.values() for h in seeds})
    families = {a: _family(report, a, next(e for e, b in cells if b == a)) for a in algorithms}
    board = leaderboard_markdown(mean, std, ranked, rows, titles, families=families)
    keys = "\n".join(f"- `{titles[e]}`: {report.params.experiment(e).title}" for e in schemes)
    picks_table = _picks_table(picks)
    recovery = _recovery(histories, algorithms, schemes)
    cost = _cost(report, histories, picks)
    figure = report.figures / "benchmark_heatmap.png"
    _heatmap(mean, ranked, families, titles, figure)
    rows.to_csv(report.tables / "benchmark_seeds.csv", index=False)
    board_csv = mean.round(4).add_suffix("_mean").join(std.round(4).add_suffix("_std"))
    board_csv = board_csv.join(ranked.add_prefix("rank_"))
    board_csv.insert(0, "family", pd.Series(families))
    board_csv.to_csv(report.tables / "benchmark_leaderboard.csv")
    picks_table.to_csv(report.tables / "benchmark_picks.csv", index=False)
    recovery.to_csv(report.tables / "benchmark_recovery.csv")
    cost.to_csv(report.tables / "benchmark_cost.csv", index=False)
    last = {a: [h.records[-1] for (e, b), seeds in histories.items() if b == a for h in seeds]
            for a in algorithms}
    views = scored_views(last, VIEW_LABELS, TEST_ACC.name)
    views_md = (_markdown(views.round(2)) if len(views) else
                "No cell recorded the models' views (`model_views`): each number is the "
                "model its class evaluated when it ran (pFedMe and pFedKM before issue 37: "
                "θ_i, not the official protocol's local w_i).")
    markdown = "\n".join([
        "## Leaderboard", "", INTRO.format(seeds=seeds), board, "Schemes:", "", keys, "",
        "## Scored model", "", "Which model each leaderboard number scores and the other "
        "models the run recorded, test accuracy (%) as the mean over every scheme and seed.",
        "", views_md, "",
        "![heatmap](../figures/benchmark_heatmap.png)", "",
        "## Picks (validation split)", "",
        "The grid point each cell was trained with, its validation score (last round, "
        "tuning seeds), whether the picked lr is the smallest or largest offered, and which "
        "other picked hyperparameter is (among those offered 3 values or more).", "",
        _markdown(picks_table), "",
        "## Cluster recovery", "",
        "ARI of each client's cluster against the true clusters in the last round, mean ± "
        "std over seeds (schemes with true clusters, algorithms with an assignment).", "",
        _markdown(recovery.reset_index()) if len(recovery) else "No cell recorded an ARI.",
        "", "## Cost", "",
        "Numbers uploaded per round by all participating clients (`tables.UPLOADS`). "
        "Seconds per round, measured on the machine that trained each cell, are on the "
        "costs page (`costs.md` beside this report; not a DVC output).", "",
        _markdown(cost), ""])
    metrics = {e: {a: {"rank": float(ranked.loc[a, e])} for a in algorithms
                   if not np.isnan(ranked.loc[a, e])} for e in schemes}
    return ReportOutput(markdown=markdown, metrics=metrics, figures=[figure])


def _family(report: ReportInput, algorithm: str, experiment: str) -> str:
    """The family the algorithm's class declares (`FederatedAlgorithm.family`)."""
    return report.params.algorithm(algorithm, experiment=experiment).cls.family


def _picks(results: Path, experiment: str, algorithm: str) -> dict[str, Any] | None:
    path = results / "tuning" / experiment / algorithm / "picks.json"
    return json.loads(path.read_text()) if path.exists() else None


def _picks_table(picks: dict[tuple[str, str], dict[str, Any] | None]) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for (e, a), p in picks.items():
        if p is None:
            rows.append({"scheme": e, "algorithm": a, "picked": "(no picks: params' values)"})
            continue
        best = next(g for g in p["grid"] if all(g[k] == v for k, v in p["picked"].items()))
        edge = at_grid_edge(p["picked"], p["grid"], "lr")
        # with 2 values every pick is at an edge (K's true and wrong value, CFL's pairs)
        others = [k for k in p["picked"] if k != "lr"
                  and at_grid_edge(p["picked"], p["grid"], k, min_values=3)]
        rows.append({"scheme": e.removeprefix("bm_"), "algorithm": a,
                     "picked": ", ".join(f"{k}={v:g}" for k, v in p["picked"].items()),
                     "validation": _shown(p["metric"], best["score"]),
                     "grid points": len(p["grid"]), "lr at grid edge": "yes" if edge else "",
                     "other at grid edge": ", ".join(others)})
    return pd.DataFrame(rows)


def _recovery(histories: dict[tuple[str, str], list[Any]], algorithms: list[str],
              schemes: list[str]) -> pd.DataFrame:
    table: dict[str, dict[str, str]] = {}
    for (e, a), seeds in histories.items():
        values = [h.records[-1][ARI.name] for h in seeds if ARI.name in h.records[-1]]
        if values:
            table.setdefault(a, {})[e] = f"{np.mean(values):.3f} ± {np.std(values):.3f}"
    order = [a for a in algorithms if a in table]
    columns = [e for e in schemes if any(e in table[a] for a in order)]
    frame = pd.DataFrame(table).T.reindex(index=order, columns=columns).fillna("–")
    frame.index.name = "algorithm"
    return frame.rename(columns=lambda e: e.removeprefix("bm_"))


def _cost(report: ReportInput, histories: dict[tuple[str, str], list[Any]],
          picks: dict[tuple[str, str], dict[str, Any] | None]) -> pd.DataFrame:
    rows, sizes = [], {}
    for (e, a), seeds in histories.items():
        exp = report.params.experiment(e)
        alg = report.params.algorithm(a, experiment=e)
        if exp.partition not in sizes:
            sizes[exp.partition] = _sizes(report, exp, seeds[0].seed)
        shapes, clients = sizes[exp.partition]
        shared = getattr(alg.hyper, "shared", None)  # a split model's averaged parameters
        names = (split_names(shared, list(shapes), f"algorithms.{a}.shared") if shared
                 else list(shapes))
        params = sum(shapes[n] for n in names)
        field = cluster_field(alg.hyper)
        picked = (picks[(e, a)] or {}).get("picked", {})
        k = int(picked.get(field, getattr(alg.hyper, field))) if field else 1
        uploaded = uploads_per_round(alg.method, params, k, getattr(alg.hyper, "tau", 1),
                                     exp.schedule.clients_per_round or clients)
        rows.append({"algorithm": a, "scheme": e,
                     "uploaded/round": None if uploaded is None else round(uploaded)})
    frame = pd.DataFrame(rows)
    return frame.groupby("algorithm", sort=False).agg(
        {"uploaded/round": "max"}).round(4).reset_index()


def _sizes(report: ReportInput, exp: Any, seed: int) -> tuple[dict[str, int], int]:
    """(the model's number of values per parameter name, the partition's number of
    clients), from the data files or, in a reference, the partition's sizes summary."""
    dataset_name = report.params.partition(exp.partition)["dataset"]
    sizes = read_sizes(report.partitions, exp.partition, seed,
                       report.partitions.parent / "raw" / dataset_name / "dataset.npz")
    model = build_model(exp.model, sizes.feature_shape, sizes.num_classes, exp.model_options)
    return {n: p.numel() for n, p in model.named_parameters()}, sizes.num_clients


def _heatmap(mean: pd.DataFrame, ranked: pd.DataFrame, families: dict[str, str],
             titles: dict[str, str], path: Path) -> None:
    """The leaderboard as colours: rows by average rank as in the table, each named with
    its family."""
    mean = mean.reindex(by_rank(ranked, mean.index))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(1.1 * len(mean.columns) + 2, 0.5 * len(mean.index) + 1.5))
    image = ax.imshow(mean.to_numpy(dtype=float), cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(mean.columns)), [titles[c] for c in mean.columns], rotation=30,
                  ha="right")
    ax.set_yticks(range(len(mean.index)), [f"{a} ({families[a]})" for a in mean.index])
    best = mean.max(axis=0)
    for i, alg in enumerate(mean.index):
        for j, col in enumerate(mean.columns):
            value = mean.loc[alg, col]
            if not np.isnan(value):
                mark = "*" if value == best[col] else ""
                ax.text(j, i, f"{value:.1f}{mark}", ha="center", va="center", fontsize=8,
                        color="white" if value < np.nanmean(mean.to_numpy()) else "black")
    fig.colorbar(image, ax=ax, label="personalized test accuracy (%)")
    save_figure(fig, path, "Personalized test accuracy, last round (* best)")


def _markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)"
    header = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join("–" if _missing(v) else str(v) for v in row) + " |")
    return "\n".join(lines)


def _shown(name: str, value: float) -> str:
    """A metric as the tables show it: percent metrics x100."""
    return f"{100 * value:.2f}%" if name in METRICS and metric(name).percent else f"{value:.4g}"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
