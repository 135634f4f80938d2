"""The benchmark's tables as pure functions of per-seed numbers (tested with exact numbers in
tests/papers/benchmark/test_benchmark_tables.py): the leaderboard with ranks, and the upload
cost. Ranks and the bold winner count only differences the seeds bear out, by the shared
verdict rule (`clusterfl.reports.verdicts`): two algorithms of a scheme are compared seed by
seed (a seed is one partition and one initial draw for all of them), and one is better only
where the 95 % interval of the paired differences lies above 0."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from clusterfl.reports.verdicts import HOLDS, compare

BEST = "**"  # how the best value of a column is marked in Markdown

def leaderboard(rows: pd.DataFrame, algorithms: Sequence[str], schemes: Sequence[str]
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(mean, std) over seeds of `rows`' `value` (columns experiment, algorithm, seed,
    value), as algorithms x schemes frames in the given order; std is the population std
    (ddof 0, as the suite's results table); a missing cell is NaN."""
    grouped = rows.groupby(["algorithm", "experiment"])["value"]
    mean = grouped.mean().unstack().reindex(index=list(algorithms), columns=list(schemes))
    std = grouped.std(ddof=0).unstack().reindex(index=list(algorithms), columns=list(schemes))
    return mean, std


def seed_values(rows: pd.DataFrame, scheme: str) -> dict[str, dict[int, float]]:
    """algorithm -> {seed: value} of `rows` (columns experiment, algorithm, seed, value) on
    one scheme: what the paired comparisons read."""
    got: dict[str, dict[int, float]] = {}
    for row in rows[rows["experiment"] == scheme].itertuples(index=False):
        got.setdefault(str(row.algorithm), {})[int(row.seed)] = float(row.value)
    return got


def clearly_better(values: Mapping[str, Mapping[int, float]], lower_is_better: bool = False
                   ) -> pd.DataFrame:
    """better[i, j]: algorithm i beats j seed by seed, by the shared rule
    (`clusterfl.reports.verdicts.compare`: the 95 % interval of the paired differences lies
    above 0; unpaired, by Welch's interval, where their seeds differ); False where either has
    no number."""
    names = list(values)
    better = pd.DataFrame(False, index=names, columns=names)
    for i in names:
        for j in names:
            if i != j and values[i] and values[j]:
                better.loc[i, j] = compare(values[i], values[j], lower_is_better).verdict == HOLDS
    return better


def ranks(rows: pd.DataFrame, mean: pd.DataFrame, lower_is_better: bool = False
          ) -> pd.DataFrame:
    """Rank of each algorithm of `mean` (algorithms x schemes) per scheme, counting only
    differences the seeds bear out: 1 + the number of algorithms clearly better
    (`clearly_better` on `rows`' per-seed values), so algorithms within each other's noise
    share a rank (a missing cell has none); the column `average` over the schemes it has."""
    ranked = pd.DataFrame(np.nan, index=mean.index, columns=mean.columns)
    for col in mean.columns:
        has = [a for a in mean.index if not np.isnan(mean.loc[a, col])]
        per_seed = seed_values(rows, col)
        better = clearly_better({a: per_seed.get(a, {}) for a in has}, lower_is_better)
        ranked.loc[has, col] = 1.0 + better.sum(axis=0).to_numpy()
    ranked["average"] = ranked[list(mean.columns)].mean(axis=1)
    return ranked


def clear_winner(values: Mapping[str, Mapping[int, float]], lower_is_better: bool = False
                 ) -> str | None:
    """The algorithm that beats every other of the scheme seed by seed (`clearly_better`),
    if one does (with a single algorithm, that one)."""
    has = {a: v for a, v in values.items() if v}
    better = clearly_better(has, lower_is_better)
    wins = [a for a in better.index if int(better.loc[a].sum()) == len(better) - 1]
    return wins[0] if wins else None


def by_rank(ranked: pd.DataFrame, algorithms: Sequence[str]) -> list[str]:
    """`algorithms` by average rank, best first; ties keep their given order."""
    return list(ranked["average"].reindex(list(algorithms)).sort_values(kind="stable").index)


def leaderboard_markdown(mean: pd.DataFrame, std: pd.DataFrame, ranked: pd.DataFrame,
                         rows: pd.DataFrame, titles: dict[str, str],
                         lower_is_better: bool = False, digits: int = 2,
                         families: dict[str, str] | None = None) -> str:
    """Rows algorithms, columns schemes: `mean ± std (rank)`, a shared rank written `=r`;
    in bold only a scheme's clear winner (`clear_winner` on `rows`' per-seed values: it beats
    every other seed by seed), and the average rank as the last column. With `families`
    (algorithm -> family), a family column follows the algorithm's name and the rows go by
    average rank, best first (ties in the given order)."""
    order = by_rank(ranked, mean.index) if families is not None else list(mean.index)
    header = ["algorithm", *(["family"] if families is not None else []),
              *[titles.get(c, c) for c in mean.columns], "average rank"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    winners = {}
    for c in mean.columns:
        per_seed = seed_values(rows, c)
        winners[c] = clear_winner({a: per_seed.get(a, {}) for a in mean.index
                                   if not np.isnan(mean.loc[a, c])}, lower_is_better)
    for alg in order:
        cells = [alg, *([families.get(alg, "other")] if families is not None else [])]
        for col in mean.columns:
            m = mean.loc[alg, col]
            if np.isnan(m):
                cells.append("–")
                continue
            rank = ranked.loc[alg, col]
            tie = "=" if int((ranked[col] == rank).sum()) > 1 else ""
            text = f"{m:.{digits}f} ± {std.loc[alg, col]:.{digits}f} ({tie}{rank:g})"
            cells.append(f"{BEST}{text}{BEST}" if winners[col] == alg else text)
        cells.append(f"{ranked.loc[alg, 'average']:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# Numbers one participating client uploads in one round, by method (d: the model's
# parameters, k: K clusters / M components, tau: FedSoft's re-estimation period). Readings:
# IFCA (model averaging) uploads the one model it trained; pFedMe and pFedKM upload the local
# model; FedEM uploads its M updated components (FedEM Alg. 1); FedSoft one model, plus its
# S importance weights every tau rounds; CFL one update; FedAvg+FT FedAvg's model (the
# fine-tuned models are never sent); Local uploads nothing.
UPLOADS: dict[str, Callable[[int, int, int], float]] = {
    "fedavg": lambda d, k, tau: d,
    "local": lambda d, k, tau: 0,
    "pfedme": lambda d, k, tau: d,
    "ifca": lambda d, k, tau: d,
    "pfedkm": lambda d, k, tau: d,
    "fedem": lambda d, k, tau: k * d,
    "fedsoft": lambda d, k, tau: d + k / tau,
    "cfl": lambda d, k, tau: d,  # its update (the model minus the cluster's model)
    "fedavg_ft": lambda d, k, tau: d,  # fine-tuned models stay on the client
    # the benchmark's baselines: one model each (Ditto's personal model,
    # APFL's v and alpha, FedALA's weights stay on the client); a split model uploads its
    # shared part only, which `d` is for them (report `_cost`)
    "fedprox": lambda d, k, tau: d,
    "ditto": lambda d, k, tau: d,
    "apfl": lambda d, k, tau: d,
    "perfedavg": lambda d, k, tau: d,
    "fedper": lambda d, k, tau: d,
    "fedrep": lambda d, k, tau: d,
    "lgfedavg": lambda d, k, tau: d,
    "fedala": lambda d, k, tau: d,
    "fesem": lambda d, k, tau: d,
    "fedgroup": lambda d, k, tau: d,
    "flhc": lambda d, k, tau: d,
}


def at_grid_edge(picked: dict[str, Any], grid: Sequence[dict[str, Any]], key: str,
                 min_values: int = 2) -> bool:
    """Whether the picked value of `key` is the smallest or largest the grid offered it,
    counted only where the grid offered at least `min_values` distinct values."""
    offered = {point[key] for point in grid}
    return len(offered) >= max(2, min_values) and picked[key] in (min(offered), max(offered))


def uploads_per_round(method: str, params: int, k: int, tau: int, clients: int
                      ) -> float | None:
    """Numbers all `clients` participating clients upload in one round; None for a method
    without an entry in `UPLOADS`."""
    per_client = UPLOADS.get(method)
    return None if per_client is None else clients * per_client(params, k, tau)


def scored_views(last: Mapping[str, Sequence[Mapping[str, float]]], views: Mapping[str, str],
                 primary: str = "test_acc") -> pd.DataFrame:
    """Per algorithm, which model its leaderboard number scores and every other model it
    recorded (`model_views`), as means over all its cells' last rounds (x100, %).

    `last`: algorithm -> the last-round record of each of its seeds and schemes; `views`:
    view name -> label. The scored model is the view whose accuracy equals the primary one
    in every record; "its evaluated model (no views recorded)" where none was recorded."""
    rows = []
    for alg, records in last.items():
        recorded = [v for v in views if all(f"{v}_{primary}" in r for r in records)]
        if not recorded:
            continue
        scored = [v for v in recorded
                  if all(abs(r[f"{v}_{primary}"] - r[primary]) < 1e-12 for r in records)]
        row: dict[str, str | float] = {
            "algorithm": alg,
            "scored model": views[scored[0]] if scored else "its own (none of the views)"}
        row[f"scored ({primary})"] = 100 * float(np.mean([r[primary] for r in records]))
        for v in recorded:
            row[views[v]] = 100 * float(np.mean([r[f"{v}_{primary}"] for r in records]))
        rows.append(row)
    return pd.DataFrame(rows)
