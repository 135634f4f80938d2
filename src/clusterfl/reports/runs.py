"""Reading a cell's run histories (`<results>/<experiment>/<algorithm>/seed<k>/history.json`).

A run is summarised by its primary metric: the `"primary"` the round loop writes at the top
of `history.json`, or, in histories written before it did, `test_acc` (classification), else
`test_mse` (regression). Values are shown as `clusterfl.steps.metrics` says: percent metrics x100.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clusterfl.core.errors import UserError
from clusterfl.steps.metrics import METRICS, TEST_ACC, TEST_LOSS, TEST_MSE, Metric, metric
from clusterfl.training.history import load_history_json, read_timings

ASSIGNMENTS = "cluster"  # the per-round array of every client's cluster (IFCA, pFedKM)


@dataclass(frozen=True)
class SeedHistory:
    seed: int
    records: list[dict[str, float]]  # one per round, `round` counting from 1
    arrays: dict[str, list[Any]]  # per-round arrays, e.g. assignments
    primary: Metric


@dataclass(frozen=True)
class Curve:
    """A cell's per-round means over seeds (percent metrics x100) of every registered metric
    its runs recorded, and `<primary>_std`, the std over seeds of its primary metric."""

    primary: Metric
    frame: pd.DataFrame  # columns: round, the metrics, <primary>_std

    def __contains__(self, name: str) -> bool:
        return name in self.frame

    def __getitem__(self, name: str) -> pd.Series:
        return self.frame[name]


def primary_metric(data: dict[str, Any]) -> Metric:
    """The primary metric of a parsed history.json (see the module docstring)."""
    if data.get("primary") is not None:
        return metric(data["primary"])
    last = data["records"][-1] if data["records"] else {}
    for fallback in (TEST_ACC, TEST_MSE):
        if fallback.name in last:
            return fallback
    raise UserError("history.json: no `primary` metric and neither test_acc nor test_mse")


def by_experiment(cells: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """(experiment, algorithm) cells grouped by experiment, both in the given order."""
    grouped: dict[str, list[str]] = {}
    for experiment, algorithm in cells:
        grouped.setdefault(experiment, []).append(algorithm)
    return grouped


def seed_dirs(results: Path, experiment: str, algorithm: str) -> list[Path]:
    return sorted((results / experiment / algorithm).glob("seed*"))


# Inside `histories_read_once()`: each history file read so far, by path, size and mtime.
_READ: ContextVar[dict[tuple[Path, int, int], "SeedHistory"] | None] = ContextVar(
    "histories_read", default=None)


@contextmanager
def histories_read_once() -> Iterator[None]:
    """Within it, `read_seed` parses and validates each history file once and returns the
    same `SeedHistory` on later reads of the unchanged file (a report reads every seed up to
    four times: its rows, its mean curve, its figures, its paper's tables). The histories
    are shared, so callers must not change them (no report code does)."""
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def read_seed(seed_dir: Path) -> SeedHistory:
    """One seed's history, validated (`history.load_history_json`). Its timings are not
    merged in: what the report stage writes as DVC outs must be the same on every run
    (`cost_rows` reads them for the costs page, outside the outs)."""
    path = seed_dir / "history.json"
    read = _READ.get()
    if read is not None and path.is_file():  # a missing file: load_history_json's error
        stat = path.stat()
        key = (path, stat.st_size, stat.st_mtime_ns)
        if key not in read:
            read[key] = _read_seed(seed_dir, path)
        return read[key]
    return _read_seed(seed_dir, path)


def _read_seed(seed_dir: Path, path: Path) -> SeedHistory:
    data = load_history_json(path)
    return SeedHistory(seed=int(seed_dir.name.removeprefix("seed")), records=data["records"],
                       arrays=data.get("arrays", {}), primary=primary_metric(data))


def cost_rows(results: Path, cells: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per cell, the wall-clock means over its seeds' rounds (`timings.json` in the logs):
    seconds per round and, where recorded, k-means seconds per round; cells without
    timings (results pulled from a DVC remote) are left out."""
    rows = []
    for experiment, algorithm in cells:
        timings = [t for d in seed_dirs(results, experiment, algorithm)
                   for t in read_timings(d)]
        if not timings:
            continue
        row: dict[str, Any] = {"cell": f"{experiment}/{algorithm}"}
        for name in sorted({k for t in timings for k in t} - {"round"}):
            values = [t[name] for t in timings if name in t]
            row[f"{name} (mean)"] = round(float(np.mean(values)), 4)
        rows.append(row)
    return rows


def read_cell(results: Path, experiment: str, algorithm: str) -> list[SeedHistory]:
    return [read_seed(d) for d in seed_dirs(results, experiment, algorithm)]


def best_record(history: SeedHistory, shown: Metric) -> dict[str, float]:
    """The round with the best value of `shown`; the first of equal ones."""
    pick = min if shown.lower_is_better else max
    return pick(history.records, key=lambda r: r[shown.name])


def seed_rows(results: Path, experiment: str, algorithm: str) -> list[dict[str, Any]]:
    """One row per seed of a cell: its primary metric's last and best value, the best round
    and the last test loss (absent from regression runs: the MSE is the loss)."""
    rows = []
    for history in read_cell(results, experiment, algorithm):
        shown, last = history.primary, history.records[-1]
        best = best_record(history, shown)
        rows.append({
            "experiment": experiment,
            "algorithm": algorithm,
            "seed": history.seed,
            "metric": shown.name,
            "last": shown.scale * last[shown.name],
            "best": shown.scale * best[shown.name],
            "best_round": best["round"],
            "last_loss": last.get(TEST_LOSS.name),
        })
    return rows


def mean_curve(results: Path, experiment: str, algorithm: str) -> Curve:
    histories = read_cell(results, experiment, algorithm)
    if not histories:
        raise UserError(f"{results / experiment / algorithm}: no seed histories")
    frames = [pd.DataFrame(h.records) for h in histories]
    grouped = pd.concat(frames).groupby("round")
    frame = pd.DataFrame({"round": grouped.size().index})
    for name in (c for c in frames[0].columns if c in METRICS):
        frame[name] = metric(name).scale * grouped[name].mean().to_numpy()
    primary = histories[0].primary
    frame[f"{primary.name}_std"] = primary.scale * grouped[primary.name].std(ddof=0).to_numpy()
    return Curve(primary, frame)


def assignments(results: Path, experiment: str, algorithm: str) -> np.ndarray | None:
    """The first seed's cluster of every client in every round, `[rounds, clients]`."""
    seeds = seed_dirs(results, experiment, algorithm)
    if not seeds:
        return None
    rows = read_seed(seeds[0]).arrays.get(ASSIGNMENTS)
    return None if rows is None else np.asarray(rows)
