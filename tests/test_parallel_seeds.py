"""Executors: seeds in worker processes (`clusterfl train --jobs N`) give the same histories
as in one process, and the caller can replay them to a tracker; `run_jobs` cancels a cell's
jobs only when it fails or is abandoned, and a cancelled process job leaves no worker."""

import multiprocessing
import os
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import numpy as np
import pytest

from clusterfl.algorithms import Schedule
from clusterfl.algorithms.pfedkm import PFedKM, PFedKMHyper
from clusterfl.data import build_dataset, save_dataset
from clusterfl.partition import build_partition
from clusterfl.partition.base import save_partition
from clusterfl.run.config import AlgorithmConfig, Experiment
from clusterfl.run.execution import SeedJob, SerialExecutor, run_jobs
from clusterfl.run.executors import choose_executor
from clusterfl.run.process_executor import ProcessExecutor
from clusterfl.training.callbacks import replay


class Recorder:
    def __init__(self) -> None:
        self.rounds: list[int] = []

    def seed_callback(self, seed: int) -> "Recorder":
        return self

    def on_run_start(self, info) -> None:
        pass

    def on_round_end(self, round_: int, metrics) -> None:
        self.rounds.append(round_)

    def on_run_end(self, summary) -> None:
        pass


def test_two_workers_reproduce_the_serial_histories(tmp_path):
    options = {"clients_per_cluster": 2, "max_size": 80, "dimension": 10}
    dataset = build_dataset("clustered_synthetic", options, "datasets.tiny")
    save_dataset(dataset, tmp_path / "dataset.npz")
    jobs = []
    for seed in (0, 1):
        partition = build_partition(dataset, "natural", {}, seed, "partitions.tiny")
        save_partition(partition, tmp_path / f"seed{seed}.npz")
        jobs.append(SeedJob(
            Experiment("tiny", "tiny", "tiny", "mlr", {},
                       Schedule(lr=0.01, rounds=3, local_steps=2), "tiny", {}, None),
            AlgorithmConfig("pfedkm_k2", "pfedkm", PFedKM, PFedKMHyper(num_clusters=2)),
            tmp_path / "dataset.npz", tmp_path / f"seed{seed}.npz", seed, "vectorized"))
    tracker = Recorder()
    serial = [h for _, h in run_jobs(SerialExecutor(), jobs, lambda job: [tracker])]
    assert tracker.rounds == [1, 2, 3, 1, 2, 3]  # live callbacks in this process
    tracker = Recorder()
    executor = ProcessExecutor(2)
    assert not executor.live
    parallel = []
    for _, history in run_jobs(executor, jobs, lambda job: [tracker]):
        replay(history, tracker.seed_callback(0))
        parallel.append(history)
    def timeless(records):  # k-means wall time is the one value allowed to differ
        return [{k: v for k, v in r.items() if k != "kmeans_seconds"} for r in records]

    for a, b in zip(serial, parallel, strict=True):
        assert timeless(a.records) == timeless(b.records)
        assert a.arrays == b.arrays
    assert serial[0].records != serial[1].records  # the seeds differ
    assert tracker.rounds == [1, 2, 3, 1, 2, 3]  # both histories replayed to the tracker
    assert np.isfinite(parallel[0].records[-1]["test_acc"])
    assert parallel[0].primary == "test_acc"


def test_default_executor_is_serial_for_one_worker():
    assert isinstance(choose_executor(jobs=1)[0], SerialExecutor)
    assert isinstance(choose_executor(jobs=3)[0], ProcessExecutor)


class Ledger:
    """An executor that records what `run_jobs` asks of it; job "bad" fails."""

    live = False

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    def submit(self, job, callbacks=None):
        return job

    def result(self, handle):
        if handle == "bad":
            raise ValueError("bad")
        return f"history of {handle}"

    def cancel(self, handle) -> None:
        self.cancelled.append(handle)


def test_run_jobs_cancels_only_a_failed_or_abandoned_cell():
    done = Ledger()
    assert list(run_jobs(done, ["a", "b"])) == [("a", "history of a"), ("b", "history of b")]
    assert done.cancelled == []  # a finished cell cancels nothing (Ray 2.60's race)
    failed = Ledger()
    with pytest.raises(ValueError):
        list(run_jobs(failed, ["a", "bad", "c"]))
    assert failed.cancelled == ["a", "bad", "c"]
    abandoned = Ledger()
    for _ in run_jobs(abandoned, ["a", "b"]):
        break
    assert abandoned.cancelled == ["a", "b"]


class Sleeper:
    """A job for a worker process: writes its pid to `marker`, then sleeps."""

    def __init__(self, marker: Path, seconds: float) -> None:
        self.marker, self.seconds, self.name = marker, seconds, "sleeper"

    def __call__(self) -> str:
        self.marker.write_text(str(os.getpid()))
        time.sleep(self.seconds)
        return "slept"


def _wait(condition, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def test_cancel_of_a_process_job_leaves_no_running_worker(tmp_path):
    executor = ProcessExecutor(1, threads=1)
    running = executor.submit(Sleeper(tmp_path / "running", 600))
    queued = executor.submit(Sleeper(tmp_path / "queued", 600))
    _wait((tmp_path / "running").exists)
    pid = int((tmp_path / "running").read_text())
    executor.cancel(running)
    executor.cancel(queued)
    with pytest.raises(CancelledError):
        queued.result()
    assert running.exception(timeout=60) is not None  # its worker got SIGTERM
    _wait(lambda: not multiprocessing.active_children() and not any(
        t.name == "clusterfl-slot" for t in threading.enumerate()))
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not (tmp_path / "queued").exists()  # never started
    # the executor goes on with a fresh worker (a sweep's other cells share it)
    assert executor.result(executor.submit(Sleeper(tmp_path / "next", 0))) == "slept"
