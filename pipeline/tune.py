"""Stage `tune` (the benchmark suite): pick one cell's learning rate (and K) on validation.

Every point of the suite's `tuning` grid (`clusterfl.training.tuning`) is trained with the tuning
seeds on the partition's validation split (`seed<k>_validation.npz`: the clients' training
samples minus their validation samples, scored on the validation samples) and scored by the
run's primary metric in the last round, mean over the tuning seeds. Writes
results/<suite>/tuning/<experiment>/<algorithm>/picks.json (the picked point and every
point's score) and grid.csv; `clusterfl train ... --picks` then trains the suite's seeds
with the picked values on the test protocol. Tuning runs are not logged to MLflow: the
picks reach MLflow as the cell's params and its `picked` tag.
"""

import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console

from clusterfl.core.errors import UserError
from clusterfl.core.io import atomic_write_json, atomic_write_text, shown
from clusterfl.partition import load_partition
from clusterfl.run.config import VALIDATION_KEY, load_params
from clusterfl.run.execution import SeedJob, run_jobs
from clusterfl.run.executors import choose_executor
from clusterfl.training.history import lower_is_better
from clusterfl.training.tuning import apply_point, grid_points, pick
from pipeline.common import SuitePaths, output_dir, require_participation, suite_flag


def run(experiment: str, algorithm: str, params_path: Path, console: Console,
        engine: str = "vectorized", workers: int | None = None, device: str = "cpu",
        threads: int | None = None) -> None:
    """Score every grid point; `workers` (--jobs) and `threads`: `execution.choose_executor`."""
    params = load_params(params_path, load=())  # the cell's paper alone, on first use
    if params.tuning is None:
        raise UserError(f"{params.file}:suite.tuning: missing; suite {params.suite!r} has no "
                        "tuning grid")
    tuning = params.tuning
    exp = params.experiment(experiment)
    alg = params.algorithm(algorithm, experiment=experiment)
    entry = params.partition(exp.partition)
    if VALIDATION_KEY not in entry:
        tunable = sorted({e for _, e, _ in params.suite_cells()
                          if VALIDATION_KEY in params.partition(params.experiment(e).partition)})
        raise UserError(f"{experiment}: its partition {exp.partition!r} has no "
                        f"{VALIDATION_KEY} (suite {params.suite!r}, {shown(params.file)}); "
                        f"tuning needs a validation split; the suite's experiments with one: "
                        f"{', '.join(tunable) or '(none)'}")
    if not set(tuning.seeds) <= set(params.seeds):
        raise UserError(f"{params.file}:suite.tuning.seeds: {list(tuning.seeds)} must be among "
                        f"suite.seeds {params.seeds} (their partitions are the ones written)")
    paths = SuitePaths(params.home)
    dataset = paths.dataset_file(entry["dataset"])
    hint = suite_flag(params)
    if not dataset.exists():
        raise UserError(f"{dataset}: missing; run `clusterfl download {entry['dataset']} "
                        f"{hint}` first")
    points = grid_points(tuning, experiment, alg.hyper, alg.method)
    executor, device = choose_executor(jobs=workers, runs=len(points) * len(tuning.seeds),
                                       threads=threads, device=device)
    jobs: list[tuple[int, SeedJob]] = []
    for i, point in enumerate(points):
        e, a = apply_point(exp, alg, point)
        for seed in tuning.seeds:
            split = paths.validation_file(exp.partition, seed)
            if not split.exists():
                raise UserError(f"{split}: missing; run `clusterfl partition {exp.partition} "
                                f"{hint}` first")
            if i == 0:  # the grid varies lr and K, never the clients a round takes
                require_participation(params, e, load_partition(split), split)
            jobs.append((i, SeedJob(e, a, dataset, split, seed, engine, device)))
    console.print(f"tune {experiment}/{algorithm}: {len(points)} grid points x seeds "
                  f"{list(tuning.seeds)} on the validation split", highlight=False)
    scores: list[list[float]] = [[] for _ in points]
    metric = None
    start = time.perf_counter()
    for job, history in run_jobs(executor, [j for _, j in jobs]):
        i = next(i for i, j in jobs if j == job)
        metric = history.primary
        scores[i].append(float(history.summary()[f"last_{metric}"]))
    if metric is None:
        raise UserError(f"{experiment}/{algorithm}: its runs name no primary metric to tune by")
    best = pick(points, scores, lower_is_better(metric))
    grid = [{**point, "score": float(sum(s) / len(s)), "scores": s}
            for point, s in zip(points, scores, strict=True)]
    for row in grid:
        console.print(f"  {_point(row)}: validation {metric} {row['score']:.4f}",
                      highlight=False)
    result = {"experiment": experiment, "algorithm": algorithm, "metric": metric,
              "seeds": list(tuning.seeds), "picked": points[best], "grid": grid,
              "seconds": time.perf_counter() - start}
    with output_dir(paths.tuning_dir(experiment, algorithm)) as out:
        atomic_write_json(out / "picks.json", result)
        atomic_write_text(out / "grid.csv", pd.DataFrame(
            [{k: v for k, v in row.items() if k != "scores"} for row in grid]).to_csv(index=False))
    console.print(f"picked {_point(points[best])} -> {paths.tuning_dir(experiment, algorithm)}",
                  highlight=False)


def _point(point: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in point.items() if k not in ("score", "scores"))


def read_picks(path: Path, experiment: str, algorithm: str, suite: str) -> dict[str, Any]:
    """The picked grid point of this cell's picks.json (written by `clusterfl tune`);
    `suite`: how hints name the suite (`common.suite_flag`: `tune` defaults to the
    benchmark, so the hint names the suite of the train that asked)."""
    try:
        data = json.loads(path.read_text())
        cell, picked = (data["experiment"], data["algorithm"]), dict(data["picked"])
    except FileNotFoundError:
        raise UserError(f"{path}: missing; run `clusterfl tune {experiment} {algorithm} "
                        f"{suite}` first") from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UserError(f"{path}: not a picks file ({type(err).__name__}: {err})") from None
    if cell != (experiment, algorithm):
        raise UserError(f"{path}: picks of {cell[0]}/{cell[1]}, not {experiment}/{algorithm}")
    return picked
