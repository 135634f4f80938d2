"""`clusterfl sweep`: every out-of-date cell of a suite on one pool of seed tasks, recorded by DVC.

1. Ask DVC (its Python API, `dvc status <suite>/dvc.yaml`) which of the suite's stages are
   out of date; bring its download and partition stages up to date (`dvc repro` of those).
2. A suite with a tuning grid (the benchmark) first runs its out-of-date
   `tune@<experiment>-<algorithm>` stages: each is the stage's own code (`pipeline.tune.run`,
   one seed at a time) in a pool of worker processes here, a cell per worker, as many workers
   as the executor has (`tune_workers`); `dvc commit` records the ones that finished, with one
   write of the lock. Under `dvc repro` each stage pays DVC's own work (the whole lock
   re-written, the deps hashed) and a process's imports, more than a short cell's training;
   here neither is paid per cell.
3. Every seed of every out-of-date `train@<experiment>-<algorithm>` stage (whose tune stage,
   if it has one, is current: its picks.json is read as the stage's `--picks`) goes to one
   executor
   (`clusterfl.run.execution`: Ray tasks, worker processes, or this process one after another): a
   cell does not wait for the one before it. Each cell is written by the train stage's own
   code (`pipeline.train.run` with the shared executor), in a thread of its own: the same files
   in the same place, all or nothing, one MLflow parent run per cell with a nested run per
   seed.
4. `dvc commit` of the cells that finished (`commit_cells`, one write of the lock for all of
   them) records them in `dvc.lock`, so a following
   `dvc repro` runs only the report, and a second one nothing. A failed cell leaves its
   output as it was, is not committed (it stays out of date), and is reported at the end,
   after every other cell has finished; the exit status is then 1.
"""

import io
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterfl.core.errors import UserError
from clusterfl.run.config import Cell, SuiteConfig, load_params
from clusterfl.run.execution import Executor, SerialExecutor
from clusterfl.run.process_executor import ProcessExecutor
from pipeline import train, tune
from pipeline.common import SuitePaths

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

    `repo.commit` per stage re-reads the pipeline and re-writes the whole lock every time,
    which on a large lock costs more than the cells' training; here the lock is written once
    and comes out byte-identical to the per-stage way. It is `dvc.repo.commit`'s loop
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
    stage: str = "train"


def _reason(err: BaseException) -> str:
    """The last line of an error (a Ray task error carries the worker's whole traceback)."""
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(err).__name__


def tune_workers(executor: Executor | None) -> tuple[int, int | None]:
    """Worker processes for the tune stages, and torch threads in each: the process
    executor's own; for Ray, one per CPU of its local Ray (else of this machine), one thread
    each, here (a tune cell reads the data files where it runs); serial: none (this process,
    its threads as a stage's)."""
    if isinstance(executor, ProcessExecutor):
        return executor.workers, executor.threads
    if executor is None or isinstance(executor, SerialExecutor):
        return 0, None
    return int(getattr(executor, "num_cpus", None) or os.cpu_count() or 1), 1


def _tune_cell(cell: Cell, params_path: Path, device: str, threads: int | None) -> float:
    """One tune stage's work, as its command does it (`pipeline.tune.run`, its seeds one at
    a time); the seconds it took. Its printout stays here: the sweep prints a line per cell."""
    start = time.monotonic()
    tune.run(cell.experiment, cell.algorithm, params_path, Console(file=io.StringIO()),
             workers=1, threads=threads, device=device)
    return time.monotonic() - start


def tune_cells(cells: list[Cell], params_path: Path, executor: Executor | None,
               console: Console, device: str = "cpu") -> list[Outcome]:
    """Run the tune stages of `cells` (`tune_workers` of them at once, each cell in one
    worker process); a cell that fails is reported in its `Outcome`, the others go on."""
    outcomes = {cell.name: Outcome(cell, stage="tune") for cell in cells}
    workers, threads = tune_workers(executor)
    start = time.monotonic()

    def done(k: int, cell: Cell, seconds: float | None) -> None:
        error = outcomes[cell.name].error
        elapsed = time.monotonic() - start
        eta = elapsed / k * (len(cells) - k)
        what = f"failed: {error}" if error else f"{seconds:.1f} s"
        console.print(f"tune {k}/{len(cells)} {cell.name}: {what} (elapsed {elapsed:.0f} s, "
                      f"~{eta:.0f} s left)", highlight=False, soft_wrap=True)

    if workers == 0:
        for k, cell in enumerate(cells, start=1):
            seconds = None
            try:
                seconds = _tune_cell(cell, params_path, device, threads)
            except Exception as err:  # reported at the end; the other cells go on (Ctrl-C
                outcomes[cell.name].error = _reason(err)  # stops the sweep)
            done(k, cell, seconds)
        return list(outcomes.values())
    # spawned: a forked child would inherit this process's torch threads and locks
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_tune_cell, cell, params_path, device, threads): cell
                   for cell in cells}
        for k, future in enumerate(as_completed(futures), start=1):
            cell, seconds = futures[future], None
            try:
                seconds = future.result()
            except Exception as err:  # the cell's error, or its worker's death
                outcomes[cell.name].error = _reason(err)
            done(k, cell, seconds)
    return list(outcomes.values())


def run_cells(cells: list[Cell], params_path: Path, executor: Executor | None,
              console: Console, device: str = "cpu", track: bool = True,
              picks: dict[str, Path] | None = None) -> list[Outcome]:
    """Train `cells` on `executor` (default serial): one after another in this process when it
    is live, else all their seeds at once; a cell that fails is reported in its `Outcome`.
    `picks`: each tuned cell's picks.json by cell name (the train stage's `--picks`)."""
    executor = executor or SerialExecutor()
    outcomes = [Outcome(cell) for cell in cells]
    lock = threading.Lock()  # cells hand on their histories (files, MLflow) one at a time

    def one(outcome: Outcome, submitted: threading.Event | None = None) -> None:
        try:
            train.run(outcome.cell.experiment, outcome.cell.algorithm, params_path, console,
                      track=track, device=device, executor=executor,
                      picks=(picks or {}).get(outcome.cell.name),
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
        from pipeline.render import render_hint

        raise UserError(f"{dvcfile}: missing; run `clusterfl sweep` in the repository root, "
                        f"after {render_hint(params.file)}")
    prepare = sorted(s for s in stale_stages(dvcfile) if s.startswith(PREPARE)
                     and (paper is None or _prepares(s, mine, params)))
    if prepare:
        console.print(f"sweep: dvc repro {' '.join(prepare)}")
        with _dvc("repro") as repo:
            repo.reproduce(targets=[_target(dvcfile, s) for s in prepare])
    failed = [] if params.tuning is None else _tune_stale(mine, params_path, dvcfile,
                                                         executor, console, device)
    stale = stale_stages(dvcfile)
    # a cell whose tune stage is still out of date (it failed) waits, as under `dvc repro`
    cells = [c for c in mine if f"train@{c.name}" in stale and f"tune@{c.name}" not in stale]
    seeds = len(params.seeds)
    scope = f"suite {params.suite!r}" + (f", paper {paper!r}" if paper else "")
    console.print(f"sweep: {scope}: {len(cells)} of {len(mine)} cells out of date, "
                  f"{len(cells) * seeds} seed runs")
    picks = None
    if params.tuning is not None:
        paths = SuitePaths(params.home)
        picks = {c.name: paths.tuning_dir(c.experiment, c.algorithm) / "picks.json"
                 for c in cells}
    start = time.monotonic()
    outcomes = run_cells(cells, params_path, executor, console, device, track, picks)
    console.print(f"sweep: trained in {time.monotonic() - start:.1f} s")
    _commit(dvcfile, "train", outcomes, console)
    failed += [o for o in outcomes if o.error is not None]
    for o in failed:
        console.print(f"[red]failed:[/red] {o.stage}@{o.cell.name}: {o.error}",
                      highlight=False, soft_wrap=True)
    return 1 if failed else 0


def _tune_stale(mine: list[Cell], params_path: Path, dvcfile: Path, executor: Executor | None,
                console: Console, device: str) -> list[Outcome]:
    """Run and commit the out-of-date tune stages of `mine`; the ones that failed."""
    stale = stale_stages(dvcfile)
    cells = [c for c in mine if f"tune@{c.name}" in stale]
    if not cells:
        return []
    console.print(f"sweep: {len(cells)} tune stages out of date")
    start = time.monotonic()
    outcomes = tune_cells(cells, params_path, executor, console, device)
    console.print(f"sweep: tuned in {time.monotonic() - start:.1f} s")
    _commit(dvcfile, "tune", outcomes, console)
    return [o for o in outcomes if o.error is not None]


def _commit(dvcfile: Path, stage: str, outcomes: list[Outcome], console: Console) -> None:
    """Record the `<stage>@<cell>` stages of the outcomes that finished in dvc.lock."""
    done = [o.cell for o in outcomes if o.error is None]
    if done:
        with _dvc("commit") as repo:
            commit_cells(repo, dvcfile, [f"{stage}@{cell.name}" for cell in done])
        console.print(f"sweep: {len(done)} {stage} stages recorded in dvc.lock"
                      + (f"; `dvc repro {dvcfile}` now runs what is left (the report)"
                         if stage == "train" else ""))
