"""Stage `train`: one cell of the grid (experiment x algorithm), every seed of the suite.

Writes results/<experiment>/<algorithm>/seed<k>/history.{json,csv} and summary.json; logs
one MLflow parent run for the cell and a nested run per seed.
"""

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from clusterfl.callbacks import Callback, ProgressCallback
from clusterfl.config import load_params
from clusterfl.data import load_dataset
from clusterfl.errors import UserError
from clusterfl.io import atomic_write_json
from clusterfl.partition import load_partition
from clusterfl.runner import run_seed
from pipeline.common import cell_dir, dataset_file, output_dir, partition_file, write_skipped


def _require(path: Path, hint: str) -> Path:
    if not path.exists():
        raise UserError(f"{path}: missing; run `{hint}` first")
    return path


def run(experiment: str, algorithm: str, params_path: Path, console: Console,
        seeds: list[int] | None = None, track: bool = True, engine: str = "vectorized") -> None:
    params = load_params(params_path)
    exp = params.experiment(experiment)
    alg = params.algorithm(algorithm, experiment=experiment)
    seeds = seeds or params.seeds
    with output_dir(cell_dir(experiment, algorithm)) as out:
        if not params.experiment_in_suite(experiment):
            write_skipped(out, f"experiment {experiment!r} is not in suite {params.suite!r}")
            console.print(f"[dim]{experiment}/{algorithm}: not in suite, skipped[/dim]")
            return
        dataset_name = params.partition(exp.partition)["dataset"]
        dataset = load_dataset(_require(dataset_file(dataset_name),
                                        f"clusterfl download {dataset_name}"))
        cell_params: dict[str, Any] = {
            "suite": params.suite, "experiment": params.experiments[experiment],
            "algorithm": {"method": alg.method, **dataclasses.asdict(alg.hyper)}, "seeds": seeds,
            "partition": params.partitions[exp.partition], "schedule": vars(exp.schedule),
        }
        tracker = _tracker(params, experiment, algorithm, cell_params) if track else None
        summaries = []
        try:
            for seed in seeds:
                partition = load_partition(_require(partition_file(exp.partition, seed),
                                                    f"clusterfl partition {exp.partition}"))
                callbacks: list[Callback] = [ProgressCallback(
                    f"{experiment}/{algorithm} seed {seed}", exp.schedule.rounds)]
                if tracker is not None:
                    callbacks.append(tracker.seed_callback(seed))
                history = run_seed(exp, alg, dataset, partition, seed, callbacks, engine=engine)
                history.write(out / f"seed{seed}")
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
    console.print(f"{experiment}/{algorithm}: test_acc last {100 * mean['last_test_acc']:.2f}% "
                  f"best {100 * mean['best_test_acc']:.2f}% over seeds {seeds}")


def _tracker(params, experiment: str, algorithm: str, cell_params: dict[str, Any]):
    from clusterfl.tracking import CellTracker, git_commit

    tags = {"stage": "train", "git_commit": git_commit(), "experiment": experiment,
            "algorithm": algorithm, "suite": params.suite}
    name = params.tracking.get("experiment", "clusterfl")
    return CellTracker(name, f"{experiment}/{algorithm}", cell_params, tags)
