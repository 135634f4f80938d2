"""`clusterfl track`: which trained cells of a suite the MLflow store holds, and (`--replay`)
log the others from their outputs on disk (`tracking.json`, the seed histories, the summary),
e.g. cells trained while the store was down. A cell is never logged twice
(`clusterfl.tracking.replay_cell`)."""

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterfl.errors import CorruptFile
from clusterfl.history import read_history
from pipeline.common import SuitePaths


def cells(results: Path) -> list[Path]:
    """The cell directories under a suite's results that can be replayed, in name order."""
    return sorted(p.parent for p in results.glob("*/*/tracking.json"))


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return data
    except (OSError, ValueError) as err:
        raise CorruptFile(path, f"not valid JSON ({type(err).__name__}: {err})") from None


def load_cell(cell: Path) -> tuple[dict[str, Any], list[tuple[int, Any]], dict[str, float]]:
    """(tracking record, [(seed, history)], summary metrics) of a cell's outputs."""
    record = _read(cell / "tracking.json")
    summary = _read(cell / "summary.json")
    seeds = [(seed, read_history(cell / f"seed{seed}")) for seed in summary.get("seeds", [])]
    return record, seeds, {k: v for k, v in summary.items() if k != "seeds"}


def run(suite: str, console: Console, replay: bool, uri: str | None = None) -> int:
    """Log (with `replay`) every cell of `suite` the store lacks; returns how many were."""
    from clusterfl.tracking import default_tracking_uri, replay_cell

    uri = uri or default_tracking_uri()
    found = cells(SuitePaths(suite).results)
    if not found:
        console.print(f"no trained cells under {SuitePaths(suite).results}")
        return 0
    logged = 0
    for cell in found:
        record, seeds, summary = load_cell(cell)
        if replay:
            done = replay_cell(record, seeds, summary, uri=uri)
            logged += done
            console.print(f"{cell}: {'logged' if done else 'already in the store'}")
    if replay:
        console.print(f"{logged} of {len(found)} cells logged to {uri}")
    return logged
