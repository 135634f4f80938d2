"""`clusterfl track`: which trained cells of a suite the MLflow store holds, and (`--replay`)
log the others from their outputs on disk (`tracking.json`, the seed histories, the summary),
e.g. cells trained while the store was down. A cell is never logged twice
(`clusterfl.run.tracking.replay_cell`)."""

import json
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterfl.core.errors import CorruptFile
from clusterfl.training.history import log_dir, read_history
from pipeline.common import SuitePaths


def cells(results: Path) -> list[Path]:
    """The cell directories under a suite's results that can be replayed (their
    `tracking.json` is in the suite's logs), in name order."""
    return sorted(c for c in results.glob("*/*") if (log_dir(c) / "tracking.json").exists())


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return data
    except (OSError, ValueError) as err:
        raise CorruptFile(path, f"not valid JSON ({type(err).__name__}: {err})") from None


def load_cell(cell: Path) -> tuple[list[tuple[int, Any]], dict[str, float]]:
    """([(seed, history)], summary metrics) of a cell's outputs, validated (the summary's
    numbers: its `seeds` and the `diverged` mark of a run that diverged are no metrics)."""
    summary = _read(cell / "summary.json")
    seeds = [(seed, read_history(cell / f"seed{seed}")) for seed in summary.get("seeds", [])]
    return seeds, {k: v for k, v in summary.items() if k not in ("seeds", "diverged")}


def run(suite: str, console: Console, uri: str | None = None, quiet: bool = False) -> int:
    """Log every trained cell of `suite` the store lacks; returns how many were logged
    (`quiet`: say nothing where nothing had to be logged)."""
    from clusterfl.run.tracking import default_tracking_uri, replay_cell

    uri = uri or default_tracking_uri()
    found = cells(SuitePaths(suite).results)
    logged = 0
    for cell in found:
        record = _read(log_dir(cell) / "tracking.json")
        done = replay_cell(record, partial(load_cell, cell), uri=uri)
        logged += done
        if done:
            console.print(f"{cell}: logged")
    if logged or not quiet:
        console.print(f"{logged} of {len(found)} cells logged to {uri}; "
                      f"{len(found) - logged} were there already")
    return logged


def replay_pending(suite: str, console: Console) -> None:
    """`run`, best effort (the report stage calls it): a store that is down is one warning."""
    from clusterfl.run.tracking import reason

    if not cells(SuitePaths(suite).results):
        return
    try:
        run(suite, console, quiet=True)
    except CorruptFile:
        raise
    except Exception as err:
        console.print(f"[yellow]warning:[/yellow] MLflow store unreachable ({reason(err)}); "
                      f"cells not logged yet stay on disk: `clusterfl track --replay --suite "
                      f"{suite}` logs them", highlight=False, soft_wrap=True)
