"""Seed jobs and the executors that run them: serial (in this process, live callbacks) and
process (spawned workers, `cores / workers` threads each). A cluster executor plugs in here
with the same interface; stages never branch on how jobs run.

The parent process owns tracking: an executor that cannot call the job's callbacks live
(`live = False`) hands back finished histories, and the caller replays them into MLflow, so
one process writes the store.
"""

import functools
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from clusterfl.callbacks import Callback, replay
from clusterfl.checkpoints import CheckpointPolicy, SeedCheckpoint, run_key
from clusterfl.config import AlgorithmConfig, Experiment
from clusterfl.data import load_dataset
from clusterfl.engine.threads import configure_threads, split_threads
from clusterfl.history import RunHistory
from clusterfl.partition import load_partition
from clusterfl.runner import run_seed

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


class Executor(Protocol):
    live: bool  # whether `run` calls each job's callbacks while it trains

    def run(self, jobs: Sequence[SeedJob], callbacks: LiveCallbacks
            ) -> Iterator[tuple[SeedJob, RunHistory]]:
        """Each job with its history, in the order of `jobs`."""
        ...


class SerialExecutor:
    """Jobs one after another in this process, with live callbacks (progress, MLflow)."""

    live = True

    def run(self, jobs: Sequence[SeedJob], callbacks: LiveCallbacks
            ) -> Iterator[tuple[SeedJob, RunHistory]]:
        for job in jobs:
            yield job, job(callbacks(job))


def _in_worker(job: SeedJob, threads: int) -> RunHistory:
    configure_threads(threads)
    return job()


class ProcessExecutor:
    """Jobs in `workers` spawned processes (no forked torch thread pools); histories come
    back when each job ends. Threads per worker: CLUSTERFL_THREADS, else cores / workers."""

    live = False

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.threads = int(os.environ.get("CLUSTERFL_THREADS", "0")) or split_threads(workers)

    def run(self, jobs: Sequence[SeedJob], callbacks: LiveCallbacks
            ) -> Iterator[tuple[SeedJob, RunHistory]]:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(self.workers, len(jobs)), mp_context=context) as pool:
            yield from zip(jobs, pool.map(_in_worker, jobs, [self.threads] * len(jobs)),
                           strict=True)


def default_executor(workers: int) -> Executor:
    """Serial for one worker (live progress and tracking), processes otherwise."""
    return SerialExecutor() if workers <= 1 else ProcessExecutor(workers)
