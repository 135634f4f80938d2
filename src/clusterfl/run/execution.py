"""Seed jobs and how they run: one executor interface, three implementations, and one
function that runs a cell's jobs on any of them.

An executor starts a job (`submit(job, callbacks) -> handle`), hands back its history
(`result(handle)`) and stops a job that has not finished (`cancel(handle)`):
- `SerialExecutor` (here): each job in this process when its result is asked for, with live
  callbacks (progress bars, MLflow per round);
- `ProcessExecutor` (`process_executor.py`): spawned worker processes, cores / workers threads
  each;
- `RayExecutor` (`ray_executor.py`): Ray tasks, on a local Ray or a cluster.
`run_jobs` runs jobs on any of them, and `executors.choose_executor` picks one from a
command's options, so stages never branch on how jobs run. (This module is the layer the
implementations build on: it imports none of them.)

The parent process owns tracking: an executor that cannot call the job's callbacks live
(`live = False`) hands back finished histories, and the caller replays them into MLflow, so
one process writes the store.
"""

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from clusterfl.data import load_dataset
from clusterfl.partition import load_partition
from clusterfl.run.checkpoints import CheckpointPolicy, SeedCheckpoint, run_key
from clusterfl.run.config import AlgorithmConfig, Experiment
from clusterfl.run.runner import run_seed
from clusterfl.training.callbacks import Callback, replay
from clusterfl.training.history import RunHistory

_dataset = functools.lru_cache(maxsize=1)(load_dataset)  # seeds of a cell share it

@dataclass(frozen=True)
class SeedJob:
    """One seed of a cell: everything a worker needs to train it (picklable)."""

    experiment: Experiment
    algorithm: AlgorithmConfig
    dataset: Path
    partition: Path
    seed: int
    engine: str = "vectorized"
    device: str = "cpu"
    checkpoints: CheckpointPolicy | None = None  # None: no resume, no checkpoints

    @property
    def name(self) -> str:
        return f"{self.experiment.name}/{self.algorithm.name}/seed{self.seed}"

    def checkpoint(self) -> SeedCheckpoint | None:
        """This seed's checkpoint, keyed by what determines its numbers."""
        if self.checkpoints is None:
            return None
        key = run_key(self.experiment, self.algorithm.method, self.algorithm.hyper,
                      [self.dataset, self.partition], self.seed, self.engine, self.device)
        return self.checkpoints.open(self.seed, key, self.name)

    def __call__(self, callbacks: Sequence[Callback] = ()) -> RunHistory:
        """Train the seed, resuming from its checkpoint; a seed that already finished under
        the same key is not trained again (its history goes to `callbacks` as a replay)."""
        checkpoint = self.checkpoint()
        done = checkpoint.finished() if checkpoint is not None else None
        if done is not None:
            for callback in callbacks:
                replay(done, callback)
            return done
        history = run_seed(self.experiment, self.algorithm, _dataset(self.dataset),
                           load_partition(self.partition), self.seed, callbacks,
                           engine=self.engine, device=self.device, checkpoint=checkpoint)
        if checkpoint is not None:
            checkpoint.finish(history)
        return history


LiveCallbacks = Callable[[SeedJob], list[Callback]]


def no_callbacks(job: SeedJob) -> list[Callback]:
    return []


class Executor(Protocol):
    live: bool  # whether `submit`'s callbacks are called, in this process, while a job trains

    def submit(self, job: SeedJob, callbacks: LiveCallbacks = no_callbacks) -> Any:
        """Start `job`, or queue it; a live executor makes its `callbacks(job)` when it starts."""
        ...

    def result(self, handle: Any) -> RunHistory:
        """The job's history once it has finished (its error raised)."""
        ...

    def cancel(self, handle: Any) -> None:
        """Stop the job if it has not finished; a finished one is left alone."""
        ...


@dataclass
class _Deferred:
    job: SeedJob
    callbacks: LiveCallbacks
    cancelled: bool = False


class SerialExecutor:
    """Jobs in this process, each when its result is asked for (one at a time, in the order
    asked), with live callbacks (progress, MLflow)."""

    live = True

    def submit(self, job: SeedJob, callbacks: LiveCallbacks = no_callbacks) -> _Deferred:
        return _Deferred(job, callbacks)

    def result(self, handle: _Deferred) -> RunHistory:
        if handle.cancelled:
            raise RuntimeError(f"{handle.job.name}: cancelled")
        # the callbacks are made as the job starts: a seed's MLflow run opens when it trains
        return handle.job(handle.callbacks(handle.job))

    def cancel(self, handle: _Deferred) -> None:
        handle.cancelled = True


def run_jobs(executor: Executor, jobs: Sequence[SeedJob], callbacks: LiveCallbacks = no_callbacks,
             submitted: Callable[[], None] | None = None,
             lock: AbstractContextManager[Any] | None = None
             ) -> Iterator[tuple[SeedJob, RunHistory]]:
    """Each job with its history, in the order of `jobs`, on any executor.

    Every job is submitted at once (then `submitted()` is called) and each history is handed
    on holding `lock`: `clusterfl sweep`'s cells share one executor, each in a thread, and
    write their files and MLflow runs one at a time. A failed or abandoned run cancels its
    jobs; one that handed on every history cancels none (Ray 2.60 could abort the driver when
    a cancel raced with a task's end).
    """
    handles = [executor.submit(job, callbacks) for job in jobs]
    if submitted is not None:
        submitted()
    finished = False
    try:
        for job, handle in zip(jobs, handles, strict=True):
            history = executor.result(handle)
            with lock or nullcontext():
                yield job, history
        finished = True
    finally:
        if not finished:  # a failed or abandoned cell: stop its other seeds
            for handle in handles:
                executor.cancel(handle)
