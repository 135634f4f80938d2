"""A run's history: one record of metrics per round, written as JSON and CSV (DVC outs).

Timings (metrics registered `wall_clock`, e.g. pFedKM's `kmeans_seconds`) are kept apart in
`timings.json`, in the suite's logs/ (`log_dir`), outside the DVC out: `history.json` and
`history.csv` of one seed are byte-identical across runs, and so is the out's hash.
`history.json` records the sha256 of its content (`checksum`); `read_history` checks it,
the format and the types, and names the file in one line when anything is off.
"""

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterfl.core.errors import CorruptFile
from clusterfl.core.io import atomic_write_json, atomic_write_text, content_sha256
from clusterfl.steps.metrics import METRICS, is_wall_clock, metric

PRIMARY = "test_acc"  # classification runs
PRIMARY_REGRESSION = "test_mse"  # regression runs (lower is better)


def primary_metric(record: dict[str, float]) -> str | None:
    """The metric a run without a declared primary is summarised by: test_acc, else
    test_mse, else none (histories written before evaluators declared it)."""
    return next((m for m in (PRIMARY, PRIMARY_REGRESSION) if m in record), None)


def lower_is_better(name: str) -> bool:
    """The registered metric's direction; unregistered names: errors and losses are lower."""
    if name in METRICS:
        return metric(name).lower_is_better
    return name.endswith(("_mse", "_loss", "_mae", "error"))


# When a run has diverged (`divergence`): a loss this far above its first round's (or 1),
# or above `EXPLODED` at any round
RISE = 1e3
EXPLODED = 1e6


@dataclass(frozen=True)
class Divergence:
    """The first round at which a run's loss became non-finite or exploded."""

    round: int
    metric: str
    value: float

    def describe(self) -> str:
        what = "not finite" if not math.isfinite(self.value) else "exploded"
        return f"{self.metric} {self.value:.3g} at round {self.round} ({what})"


def divergence(records: list[dict[str, float]]) -> Divergence | None:
    """The first round where the run's loss is non-finite or has exploded, else None (a run
    that learns, however badly, is never marked).

    Its losses are the recorded metrics named `*_loss` (a classifier's loss: cross-entropy,
    which starts near ln(classes), 2.3 for 10; or the softmax squared error or binary
    cross-entropy, both at most a few units) and `*_mse` (a regression's squared error,
    whose scale is the data's). Diverged is: any of them nan or infinite; or a `*_loss`
    above `RISE` (1e3) times its first round's value (at least 1), or above `EXPLODED`
    (1e6): a classifier's loss that large means logits hundreds to a million apart, which
    no run that still learns reaches (measured: `lr: 1e30` gives a test loss of 7e30 from
    round 1). A `*_mse` is checked for non-finite values only, its scale being the data's
    (P4's Standalone reaches finite errors of 1e8 on some draws, and that is its result)."""
    first: dict[str, float] = {}
    for record in records:
        for name, value in record.items():
            if not name.endswith(("_loss", "_mse")):
                continue
            if not math.isfinite(value):
                return Divergence(int(record["round"]), name, float(value))
            if name.endswith("_loss"):
                start = first.setdefault(name, value)
                if value > min(EXPLODED, RISE * max(start, 1.0)):
                    return Divergence(int(record["round"]), name, float(value))
    return None


@dataclass
class RunHistory:
    """Per-round records (`round` counts from 1), per-round arrays such as assignments, and
    the metric the run is summarised by (declared by its first evaluator that has one)."""

    records: list[dict[str, float]] = field(default_factory=list)
    arrays: dict[str, list[list[Any]]] = field(default_factory=dict)
    primary: str | None = None
    timings: list[dict[str, float]] = field(default_factory=list)  # wall-clock, per round

    def append(self, record: dict[str, float], arrays: dict[str, list[Any]] | None = None) -> None:
        """Add a round: its wall-clock values go to `timings`, the rest to `records`."""
        timing = {k: v for k, v in record.items() if is_wall_clock(k)}
        if timing:
            self.timings.append({"round": record["round"], **timing})
        self.records.append({k: v for k, v in record.items() if k not in timing})
        for name, value in (arrays or {}).items():
            self.arrays.setdefault(name, []).append(value)

    def with_timings(self) -> list[dict[str, float]]:
        """Every round's metrics with its timings merged in (for MLflow and figures)."""
        extra = {t["round"]: t for t in self.timings}
        return [{**r, **extra.get(r["round"], {})} for r in self.records]

    def summary(self, metric: str | None = None) -> dict[str, float]:
        """Last-round values, and the best value of `metric` and the round it came from.

        `metric` defaults to the run's primary metric (else test_acc, else test_mse); "best"
        is the smallest value for errors and losses (`lower_is_better`), else the largest.
        """
        if not self.records:
            raise ValueError("empty history")
        last = self.records[-1]
        out = {f"last_{k}": v for k, v in last.items() if k != "round"}
        name = metric or self.primary or primary_metric(last)
        if name is not None:
            pick = min if lower_is_better(name) else max
            best = pick(self.records, key=lambda r: r[name])
            out[f"best_{name}"] = best[name]
            out["best_round"] = best["round"]
        out["rounds"] = last["round"]
        return out

    def to_json(self) -> dict[str, Any]:
        data = {"primary": self.primary, "records": self.records, "arrays": self.arrays,
                "summary": self.summary()}
        return data | {"checksum": content_sha256(data)}

    def write(self, directory: Path, timings: Path | None = None) -> None:
        """history.json and history.csv into `directory`, the wall-clock timings into
        `timings` (default: `directory`; a suite's train stage gives its logs directory,
        outside the DVC out, so that the out is the same on every run)."""
        atomic_write_json(directory / "history.json", self.to_json())
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(self.records[0]))
        writer.writeheader()
        writer.writerows(self.records)
        atomic_write_text(directory / "history.csv", buffer.getvalue())
        if self.timings:
            atomic_write_json((timings or directory) / "timings.json", {"records": self.timings})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def load_history_json(path: Path) -> dict[str, Any]:
    """The parsed `history.json` at `path`, validated: JSON, the keys and types the round
    loop writes, rounds 1..n, and the recorded checksum where there is one (histories
    written by hand, e.g. in tests, have none). Anything else is a `CorruptFile`."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise CorruptFile(path, "missing") from None
    except (OSError, ValueError) as err:  # UnicodeDecodeError and JSONDecodeError included
        raise CorruptFile(path, f"not a valid history ({type(err).__name__}: {err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("records"), list):
        raise CorruptFile(path, "not a history: expected an object with a `records` list")
    records = data["records"]
    if not records or not all(isinstance(r, dict) and all(_is_number(v) for v in r.values())
                              for r in records):
        raise CorruptFile(path, "`records` must be a non-empty list of numeric records")
    if [r.get("round") for r in records] != list(range(1, len(records) + 1)):
        raise CorruptFile(path, "`records` must hold rounds 1..n in order")
    if not isinstance(data.get("arrays", {}), dict) or not all(
            isinstance(v, list) for v in data.get("arrays", {}).values()):
        raise CorruptFile(path, "`arrays` must map names to per-round lists")
    if not isinstance(data.get("primary"), str | None):
        raise CorruptFile(path, "`primary` must be a metric name or null")
    if "checksum" in data:
        recorded = data.pop("checksum")
        if recorded != content_sha256(data):
            raise CorruptFile(path, "checksum differs from the one recorded when it was "
                                    "written (the file was changed)")
    return data


def log_dir(directory: Path) -> Path:
    """Where a suite keeps what is not the same on every run (timings, tracking records) for
    an output directory: results/<suite>/... -> logs/<suite>/... (outside every DVC out);
    a directory outside that layout keeps them itself."""
    parts = directory.parts
    if "results" not in parts:
        return directory
    i = len(parts) - 1 - parts[::-1].index("results")
    return Path(*parts[:i], "logs", *parts[i + 1:])


def read_timings(directory: Path) -> list[dict[str, float]]:
    """The per-round timings of the history in `directory` (`timings.json` in its
    `log_dir`, or beside it); none where there are none (e.g. results pulled from a DVC
    remote: timings are measurements of the machine that ran them, not results)."""
    path = log_dir(directory) / "timings.json"
    if not path.exists():
        path = directory / "timings.json"
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_bytes())
        timings: list[dict[str, float]] = data["records"]
        if not all(isinstance(t, dict) and all(_is_number(v) for v in t.values())
                   for t in timings):
            raise ValueError("non-numeric timing")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CorruptFile(path, f"not valid timings ({type(err).__name__}: {err})") from None
    return timings


def read_history(directory: Path) -> RunHistory:
    data = load_history_json(directory / "history.json")
    return RunHistory(records=data["records"], arrays=data.get("arrays", {}),
                      primary=data.get("primary"), timings=read_timings(directory))
