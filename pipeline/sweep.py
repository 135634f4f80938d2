"""`clusterfl sweep`: every out-of-date cell of a suite on one pool of seed tasks, recorded by DVC.

1. Ask DVC (its Python API, `dvc status <suite>/dvc.yaml`) which of the suite's stages are
   out of date; bring its download and partition stages up to date (`dvc repro` of those).
2. Every seed of every out-of-date `train@<experiment>-<algorithm>` stage goes to one executor
   (`clusterfl.execution`: Ray tasks, worker processes, or this process one after another): a
   cell does not wait for the one before it. Each cell is written by the train stage's own
   code (`pipeline.train.run` with the shared executor), in a thread of its own: the same files
   in the same place, all or nothing, one MLflow parent run per cell with a nested run per
   seed.
3. `dvc commit` of the cells that finished (`commit_cells`, one write of the lock for all of
   them) records them in `dvc.lock`, so a following
   `dvc repro` runs only the report, and a second one nothing. A failed cell leaves its
   output as it was, is not committed (it stays out of date), and is reported at the end,
   after every other cell has finished; the exit status is then 1.
"""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterfl.config import Cell, SuiteConfig, load_params
from clusterfl.errors import UserError
from clusterfl.execution import Executor, SerialExecutor
from pipeline import train

PREPARE = ("download@", "partition@")


def dvc_file(params: SuiteConfig) -> Path:
    """The dvc.yaml DVC reads this suite from: the one beside the suite's params file
    (relative to the repository root, the working directory, where it lies inside it)."""
    path = Path(params.file).parent / "dvc.yaml"
    return path.relative_to(Path.cwd()) if path.is_absolute() and path.is_relative_to(
        Path.cwd()) else path


@contextmanager
def _dvc(what: str) -> Iterator[Any]:
    """A DVC repo of the working directory; a DVC error becomes one line."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    try:
        with Repo(".") as repo:
            yield repo
    except DvcException as err:
        raise UserError(f"dvc {what}: {err}") from None


def stale_stages(dvcfile: Path) -> set[str]:
    """Names (`train@...`, without the `<file>:` prefix) of the out-of-date stages."""
    with _dvc("status") as repo:
        return {name.rsplit(":", 1)[-1] for name in repo.status(targets=[str(dvcfile)])}


def _prepares(stage: str, cells: list[Cell], params: SuiteConfig) -> bool:
    """Whether a `download@<dataset>` / `partition@<partition>` stage feeds one of `cells`."""
    kind, key = stage.split("@", 1)
    partitions = {params.experiment(c.experiment).partition for c in cells}
    if kind == "partition":
        return key in partitions
    return key in {params.partition(p)["dataset"] for p in partitions}


def commit_cells(repo: Any, dvcfile: Path, names: list[str]) -> None:
    """`dvc commit --force` of the stages `names` of `dvcfile`, with one write of its lock.

    `repo.commit` per stage re-reads the pipeline and re-writes the whole lock every time:
    on the paper suite's 1.9 MB lock the 36 P2 cells took 582 s that way, 16 s a cell (and
    117 P4 cells longer than their 14.5 min of training); committing the same 36 again this
    way took 28 s and left the lock byte-identical. It is `dvc.repo.commit`'s loop
    (force=True) with the stages loaded once and dumped together."""
    from dvc.repo import lock_repo

    with lock_repo(repo):
        loaded = {s.name: s for s in repo.stage.load_all(str(dvcfile))}
        stages = [loaded[name] for name in names]
        for stage in stages:
            stage.save()
            stage.commit()
        if stages:
            stages[0].dvcfile.dump_stages(stages, update_pipeline=False)


def _target(dvcfile: Path, stage: str) -> str:
    return stage if dvcfile == Path("dvc.yaml") else f"{dvcfile}:{stage}"


@dataclass
class Outcome:
    cell: Cell
    error: str | None = None


def _reason(err: BaseException) -> str:
    """The last line of an error (a Ray task error carries the worker's whole traceback)."""
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(err).__name__


def run_cells(cells: list[Cell], params_path: Path, executor: Executor | None,
              console: Console, device: str = "cpu", track: bool = True) -> list[Outcome]:
    """Train `cells` on `executor` (default serial): one after another in this process when it
    is live, else all their seeds at once; a cell that fails is reported in its `Outcome`."""
    executor = executor or SerialExecutor()
    outcomes = [Outcome(cell) for cell in cells]
    lock = threading.Lock()  # cells hand on their histories (files, MLflow) one at a time

    def one(outcome: Outcome, submitted: threading.Event | None = None) -> None:
        try:
            train.run(outcome.cell.experiment, outcome.cell.algorithm, params_path, console,
                      track=track, device=device, executor=executor,
                      submitted=submitted.set if submitted else None, lock=lock)
        except BaseException as err:  # reported at the end; the other cells go on
            outcome.error = _reason(err)

    if executor.live:  # its jobs run in the thread asking for them: the main one
        for outcome in outcomes:
            one(outcome)
        return outcomes
    threads = []
    for outcome in outcomes:
        submitted = threading.Event()
        thread = threading.Thread(target=one, args=(outcome, submitted), daemon=True)
        thread.start()
        threads.append(thread)
        # the next cell starts once this one's seeds are submitted: MLflow parent runs are
        # created one at a time, and the executor sees every seed of every cell in order
        while not submitted.wait(0.05) and thread.is_alive():
            pass
    for thread in threads:
        thread.join()
    return outcomes


def run(params_path: Path, executor: Executor | None, console: Console, device: str = "cpu",
        track: bool = True, paper: str | None = None) -> int:
    """The sweep (of `paper`'s cells alone if given); returns the exit status (1 when a cell
    failed)."""
    params = load_params(params_path)
    mine = params.paper_cells(paper)  # an unknown paper: one line, before DVC is asked
    dvcfile = dvc_file(params)
    if not dvcfile.exists():
        raise UserError(f"{dvcfile}: missing; run `clusterfl sweep` in the repository root")
    prepare = sorted(s for s in stale_stages(dvcfile) if s.startswith(PREPARE)
                     and (paper is None or _prepares(s, mine, params)))
    if prepare:
        console.print(f"sweep: dvc repro {' '.join(prepare)}")
        with _dvc("repro") as repo:
            repo.reproduce(targets=[_target(dvcfile, s) for s in prepare])
    stale = stale_stages(dvcfile)
    cells = [c for c in mine if f"train@{c.name}" in stale]
    seeds = len(params.seeds)
    scope = f"suite {params.suite!r}" + (f", paper {paper!r}" if paper else "")
    console.print(f"sweep: {scope}: {len(cells)} of {len(mine)} cells out of date, "
                  f"{len(cells) * seeds} seed runs")
    start = time.monotonic()
    outcomes = run_cells(cells, params_path, executor, console, device, track)
    console.print(f"sweep: trained in {time.monotonic() - start:.1f} s")
    done = [o.cell for o in outcomes if o.error is None]
    if done:
        with _dvc("commit") as repo:
            commit_cells(repo, dvcfile, [f"train@{cell.name}" for cell in done])
        console.print(f"sweep: {len(done)} cells recorded in dvc.lock; `dvc repro "
                      f"{dvcfile}` now runs what is left (the report)")
    failed = [o for o in outcomes if o.error is not None]
    for o in failed:
        console.print(f"[red]failed:[/red] train@{o.cell.name}: {o.error}", highlight=False,
                      soft_wrap=True)
    return 1 if failed else 0
