"""The whole suite's progress under `dvc repro`: one line as each train stage finishes.

DVC runs a suite's cells one process after another, so no process sees the whole run; the
files under logs/<suite>/ do (never a DVC out: nothing here is the same on two runs):
- `plan.json`, written by `clusterfl plan --write` just before `dvc repro` (`make paper`,
  `clusterfl reproduce` do both): the cells the repro will train, when it started (the plan's
  time) and each cell's expected wall seconds (`pipeline.plan`);
- `<experiment>/<algorithm>/finished.json`, written by each train stage as it ends: when, and
  how many seconds the cell took.
From them the stage prints `suite paper: 12 of 46 cells done, 0:14:03 elapsed, ETA 0:40:10`.

Readings:
- a plan cell is done when its finished.json is newer than the plan: an older one belongs to
  an earlier run;
- the ETA is the plan's estimate of the cells left, scaled by how long the done cells took
  against their own estimates (the probe's few rounds, or another run's timings, rarely match
  this run's machine load); a cell left without an estimate counts as the done cells' mean
  duration; with no done cell to measure that by, the ETA is unknown;
- elapsed counts from the plan's time, so a plan written long before the repro overstates it;
- without a plan (or for a cell the plan does not name) the line says how many of the suite's
  cells have results, and how to get a plan.
"""

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from clusterfl.core.io import atomic_write_json
from clusterfl.core.suite import suite_file
from pipeline.common import SuitePaths

PLAN_FILE = "plan.json"
FINISHED_FILE = "finished.json"


def plan_path(paths: SuitePaths) -> Path:
    """Where `clusterfl plan --write` puts a suite's plan: logs/<suite>/plan.json."""
    return paths.root / "logs" / paths.suite / PLAN_FILE


def record_finished(paths: SuitePaths, experiment: str, algorithm: str, seconds: float,
                    now: float | None = None) -> None:
    """A cell's end, for the progress of the run it belongs to."""
    atomic_write_json(paths.log_dir(experiment, algorithm) / FINISHED_FILE,
                      {"finished": time.time() if now is None else now, "seconds": seconds})


def finished_cells(paths: SuitePaths, cells: list[tuple[str, str]], since: float
                   ) -> dict[str, float]:
    """`<experiment>-<algorithm>` -> seconds taken, of `cells` that finished at or after
    `since` (an unreadable record counts as not finished)."""
    done = {}
    for experiment, algorithm in cells:
        path = paths.log_dir(experiment, algorithm) / FINISHED_FILE
        try:
            record = json.loads(path.read_text())
            if float(record["finished"]) >= since:
                done[f"{experiment}-{algorithm}"] = float(record["seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return done


def clock(seconds: float) -> str:
    """0:14:03."""
    return str(timedelta(seconds=round(seconds)))


def eta_seconds(estimates: dict[str, float | None], done: dict[str, float]) -> float | None:
    """Seconds left: the estimates of the cells not done, scaled by actual / estimated of the
    done ones (1 before any is done); a cell without an estimate counts as the done cells'
    mean duration; None when that is needed and no cell is done."""
    left = [c for c in estimates if c not in done]
    measured = [c for c in done if estimates.get(c)]
    planned = sum(estimates[c] or 0.0 for c in measured)
    ratio = sum(done[c] for c in measured) / planned if planned > 0 else 1.0
    unknown = [c for c in left if estimates[c] is None]
    if unknown and not done:
        return None
    mean = sum(done.values()) / len(done) if done else 0.0
    return ratio * sum(estimates[c] or 0.0 for c in left) + mean * len(unknown)


def progress_line(suite: str, plan: dict[str, Any], done: dict[str, float],
                  now: float) -> str:
    """The line a finished train stage prints, from the plan and the plan's done cells."""
    estimates = {c["cell"]: c.get("wall_seconds") for c in plan["cells"]}
    eta = eta_seconds(estimates, done)
    return (f"suite {suite}: {len(done)} of {len(estimates)} cells done, "
            f"{clock(now - plan['written'])} elapsed, "
            f"ETA {'unknown' if eta is None else clock(eta)}")


def no_plan_line(suite: str, with_results: int, total: int, named: bool = True) -> str:
    """`named`: `--suite` finds the suite's file (else it came from a file of your own)."""
    which = f"--suite {suite}" if named else "-p <its params file>"
    return (f"suite {suite}: {with_results} of {total} cells have results (no plan: "
            f"`clusterfl plan {which} --write` before `dvc repro` adds elapsed time and ETA)")


def read_plan(paths: SuitePaths) -> dict[str, Any] | None:
    """The suite's plan, or None where there is none or it cannot be read (progress is a
    convenience: it never fails a stage)."""
    try:
        plan = json.loads(plan_path(paths).read_text())
        return plan if isinstance(plan.get("written"), int | float) else None
    except (OSError, ValueError, AttributeError):
        return None


def suite_progress(paths: SuitePaths, cells: list[tuple[str, str]], experiment: str,
                   algorithm: str, now: float | None = None) -> str:
    """The line for cell `experiment`-`algorithm` of a suite with `cells`, just finished."""
    now = time.time() if now is None else now
    plan = read_plan(paths)
    names = {c["cell"] for c in plan["cells"]} if plan else set()
    if plan is None or f"{experiment}-{algorithm}" not in names:
        with_results = sum((paths.cell_dir(e, a) / "summary.json").exists() for e, a in cells)
        named = suite_file(paths.suite, paths.root).exists()
        return no_plan_line(paths.suite, with_results, len(cells), named)
    planned = [(c["experiment"], c["algorithm"]) for c in plan["cells"]]
    done = finished_cells(paths, planned, plan["written"])
    return progress_line(paths.suite, plan, done, now)
