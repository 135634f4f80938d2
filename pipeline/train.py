"""Stage `train`: one cell of the grid (experiment x algorithm), every seed of the suite.

Writes results/<experiment>/<algorithm>/seed<k>/history.{json,csv} and summary.json; logs
one MLflow parent run for the cell and a nested run per seed.
"""

import dataclasses
import functools
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from clusterfl.callbacks import Callback, ProgressCallback, replay
from clusterfl.config import AlgorithmConfig, Experiment, load_params
from clusterfl.data import load_dataset
from clusterfl.engine.threads import configure_threads, split_threads
from clusterfl.errors import UserError
from clusterfl.history import RunHistory, primary_metric
from clusterfl.io import atomic_write_json
from clusterfl.partition import load_partition
from clusterfl.runner import run_seed
from pipeline.common import cell_dir, dataset_file, output_dir, partition_file, write_skipped


def _require(path: Path, hint: str) -> Path:
    if not path.exists():
        raise UserError(f"{path}: missing; run `{hint}` first")
    return path


def run(experiment: str, algorithm: str, params_path: Path, console: Console,
        seeds: list[int] | None = None, track: bool = True, engine: str = "vectorized",
        workers: int = 1) -> None:
    """Train every seed of the cell; `workers` > 1 trains seeds in that many processes."""
    params = load_params(params_path)
    exp = params.experiment(experiment)
    alg = params.algorithm(algorithm, experiment=experiment)
    seeds = seeds or params.seeds
    with output_dir(cell_dir(experiment, algorithm)) as out:
        if not params.cell_in_suite(experiment, algorithm):
            write_skipped(out, f"cell {experiment}/{algorithm} is not in suite {params.suite!r}")
            console.print(f"[dim]{experiment}/{algorithm}: not in suite, skipped[/dim]")
            return
        dataset_name = params.partition(exp.partition)["dataset"]
        _require(dataset_file(dataset_name), f"clusterfl download {dataset_name}")
        cell_params: dict[str, Any] = {
            "suite": params.suite, "experiment": params.experiments[experiment],
            "algorithm": {"method": alg.method, **dataclasses.asdict(alg.hyper)}, "seeds": seeds,
            "partition": params.partitions[exp.partition], "schedule": vars(exp.schedule),
        }
        tracker = _tracker(params, experiment, algorithm, cell_params) if track else None
        jobs = [SeedJob(exp, alg, dataset_file(dataset_name), _require(
            partition_file(exp.partition, seed), f"clusterfl partition {exp.partition}"),
            seed, engine) for seed in seeds]
        summaries = []
        try:
            for job, history in zip(jobs, _histories(jobs, workers, tracker, console),
                                    strict=True):
                history.write(out / f"seed{job.seed}")
                summaries.append(history.summary())
        except BaseException:
            if tracker is not None:
                tracker.finish({}, status="FAILED")
            raise
        mean = {k: float(np.mean([s[k] for s in summaries])) for k in summaries[0]}
        std = {f"{k}_std": float(np.std([s[k] for s in summaries])) for k in summaries[0]}
        atomic_write_json(out / "summary.json", {"seeds": seeds, **mean, **std})
        if tracker is not None:
            tracker.finish({**mean, **std})
    metric = primary_metric({k.removeprefix("last_"): v for k, v in mean.items()})
    if metric is not None:
        last, best = (_fmt(metric, mean[f"{k}_{metric}"]) for k in ("last", "best"))
        console.print(f"{experiment}/{algorithm}: {metric} last {last} best {best} "
                      f"over seeds {seeds}")


def _fmt(metric: str, value: float) -> str:
    return f"{100 * value:.2f}%" if metric.endswith("_acc") else f"{value:.4g}"


_dataset = functools.lru_cache(maxsize=1)(load_dataset)  # seeds of a cell share it


@dataclass(frozen=True)
class SeedJob:
    """One seed of a cell: everything a worker process needs to train it."""

    experiment: Experiment
    algorithm: AlgorithmConfig
    dataset: Path
    partition: Path
    seed: int
    engine: str

    def __call__(self, callbacks: list[Callback]) -> RunHistory:
        return run_seed(self.experiment, self.algorithm, _dataset(self.dataset),
                        load_partition(self.partition), self.seed, callbacks, engine=self.engine)


def _in_worker(job: SeedJob, threads: int) -> RunHistory:
    configure_threads(threads)
    return job([])


def _histories(jobs: list[SeedJob], workers: int, tracker, console: Console
               ) -> Iterator[RunHistory]:
    """Each job's history, in order. One worker: live progress bar and per-round MLflow
    logging. Several: seeds run in separate processes (spawned, `cores / workers` threads
    each) and each history is logged to MLflow when its seed ends (one writer to the store)."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            name = f"{job.experiment.name}/{job.algorithm.name} seed {job.seed}"
            callbacks: list[Callback] = [ProgressCallback(name, job.experiment.schedule.rounds)]
            if tracker is not None:
                callbacks.append(tracker.seed_callback(job.seed))
            yield job(callbacks)
        return
    threads = int(os.environ.get("CLUSTERFL_THREADS", "0")) or split_threads(workers)
    context = multiprocessing.get_context("spawn")  # no forked torch thread pools
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=context) as pool:
        for job, history in zip(jobs, pool.map(_in_worker, jobs, [threads] * len(jobs)),
                                strict=True):
            if tracker is not None:
                replay(history, tracker.seed_callback(job.seed))
            last = history.records[-1]
            metric = primary_metric(last) or "round"
            console.print(f"{job.experiment.name}/{job.algorithm.name} seed {job.seed}: "
                          f"{metric} {_fmt(metric, last[metric])} after {last['round']} rounds")
            yield history


def _tracker(params, experiment: str, algorithm: str, cell_params: dict[str, Any]):
    from clusterfl.tracking import CellTracker, git_commit

    tags = {"stage": "train", "git_commit": git_commit(), "experiment": experiment,
            "algorithm": algorithm, "suite": params.suite}
    name = params.tracking.get("experiment", "clusterfl")
    return CellTracker(name, f"{experiment}/{algorithm}", cell_params, tags)
