"""Stage `train`: one cell of a suite (experiment x algorithm), every seed of the suite.

Writes results/<suite>/<experiment>/<algorithm>/seed<k>/history.{json,csv} and summary.json
(the DVC out: the same bytes on every run), and, outside it, logs/<suite>/<experiment>/
<algorithm>/seed<k>/timings.json and tracking.json (what `clusterfl track --replay` logs,
with the git commit and an attempt id that differ per run); logs one
MLflow parent run for the cell and a nested run per seed, best effort (a store that is down
costs one warning, never the run). How seeds run (in this process or in workers) is an
executor's business (`clusterfl.run.execution`). Seeds resume from their round checkpoints in
checkpoints/<suite>/<experiment>/<algorithm>/ (`clusterfl.run.checkpoints`), which are removed
once the cell's results are in place. As it ends, a cell of the suite writes finished.json
beside its logs and prints the whole suite's progress (`pipeline.progress`).

`--seed K` (docs/operations.md, "Run one stage by hand") trains seed K alone: the cell keeps
the suite's other seeds already on disk and summary.json covers every seed present, in the
suite's order, so a cell completed by hand is byte for byte the cell `dvc repro` writes (DVC
and `plan` see nothing changed). Such a run writes no finished.json (it is no whole cell of
a repro), and refuses, in one line, to mix in seeds that the cell's last run (tracking.json)
trained with other settings.
"""

import dataclasses
import json
import shutil
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from clusterfl.core.errors import UserError
from clusterfl.core.io import atomic_write_json
from clusterfl.data import load_dataset
from clusterfl.partition import load_partition
from clusterfl.run.checkpoints import CheckpointPolicy, remove_checkpoints
from clusterfl.run.config import AlgorithmConfig, Experiment, SuiteConfig, load_params
from clusterfl.run.execution import Executor, SeedJob, run_jobs
from clusterfl.run.executors import choose_executor
from clusterfl.steps.metrics import METRICS, metric
from clusterfl.training.callbacks import Callback, progress_callback, replay
from clusterfl.training.history import Divergence, RunHistory, divergence, load_history_json
from clusterfl.training.tuning import apply_point
from pipeline.common import (
    SuitePaths,
    cell_lock,
    output_dir,
    remove_orphan_checkpoints,
    require_participation,
    suite_flag,
)
from pipeline.progress import record_finished, suite_progress


def _require(path: Path, hint: str) -> Path:
    if not path.exists():
        raise UserError(f"{path}: missing; run `{hint}` first")
    return path


@dataclasses.dataclass
class Options:
    """How `run` trains a cell: which seeds, tracked or not, the engine and device, and how
    its seeds run (`workers` processes of `threads` threads, or a given `executor` with its
    `submitted` and `lock`); `picks`: a tune stage's picks.json."""
    seeds: list[int] | None = None
    track: bool = True
    engine: str = "vectorized"
    workers: int | None = None
    device: str = "cpu"
    executor: Executor | None = None
    picks: Path | None = None
    threads: int | None = None
    submitted: Callable[[], None] | None = None
    lock: AbstractContextManager[Any] | None = None


@dataclasses.dataclass
class CellRun:
    """One cell, ready to train: its resolved experiment and algorithm, the seed jobs and
    where they run, where it writes, the seeds it keeps and its MLflow tracker."""
    params: SuiteConfig
    experiment: str
    algorithm: str
    exp: Experiment
    alg: AlgorithmConfig
    seeds: list[int]
    executor: Executor
    jobs: list[SeedJob]
    checkpoints: CheckpointPolicy
    paths: SuitePaths
    suite: str  # the --suite (or -p) flag that names it in hints
    position: tuple[int, int] | None
    kept: dict[int, RunHistory]
    record: dict[str, Any]
    tracker: Any


@dataclasses.dataclass
class Trained:
    """What a cell's training left: the seeds its summary covers, its mean and std over
    them, the divergence marks, every seed's summary and the primary metric's name."""
    present: list[int]
    mean: dict[str, float]
    marks: dict[str, Any]
    summaries: dict[int, dict[str, float]]
    primary: str | None


def run(experiment: str, algorithm: str, params_path: Path, console: Console,
        seeds: list[int] | None = None, track: bool = True, engine: str = "vectorized",
        workers: int | None = None, device: str = "cpu", executor: Executor | None = None,
        picks: Path | None = None, threads: int | None = None,
        submitted: Callable[[], None] | None = None,
        lock: AbstractContextManager[Any] | None = None) -> None:
    """Train every seed of the cell (the `Options` fields say how). The cell is trained
    holding its lock (`common.cell_lock`): a second train of it while this one runs is a
    one-line error (exit 1) that changes nothing. After the cell, the suite's orphan
    checkpoints are removed (`common.remove_orphan_checkpoints`)."""
    started = time.monotonic()
    params = load_params(params_path, load=())  # the cell's paper alone, on first use
    paths = SuitePaths(params.home)
    options = Options(seeds, track, engine, workers, device, executor, picks, threads,
                      submitted, lock)
    with cell_lock(paths.cell_dir(experiment, algorithm)):
        cell = prepare(params, experiment, algorithm, options, console)
        trained = execute(cell, options, console)
        remove_checkpoints(cell.checkpoints.directory, cell.seeds)
        summarize(cell, trained, console, started)
    remove_orphan_checkpoints(paths, lambda line: console.print(line, highlight=False,
                                                                soft_wrap=True))


def prepare(params: SuiteConfig, experiment: str, algorithm: str, options: Options,
            console: Console) -> CellRun:
    """The cell's settings (a tune stage's picks applied), its seed jobs and executor, its
    data and partitions checked before anything runs, the seeds it keeps and its tracker."""
    exp = params.experiment(experiment)
    alg = params.algorithm(algorithm, experiment=experiment)
    suite = suite_flag(params)  # `-p FILE` for a suite file --suite cannot name
    picked = None
    if options.picks is not None:
        from pipeline.tune import read_picks

        picked = read_picks(options.picks, experiment, algorithm, suite)
    if picked is not None:
        exp, alg = apply_point(exp, alg, picked)
    seeds = options.seeds or params.seeds
    executor, device = options.executor, options.device
    if executor is None:  # how the seeds run (and the device they run on) unless given
        executor, device = choose_executor(jobs=options.workers, runs=len(seeds),
                                           threads=options.threads, device=device)
    paths = SuitePaths(params.home)
    position = cell_position(params.suite_cells(), experiment, algorithm)
    if position is None:
        console.print(f"[yellow]note:[/yellow] {experiment}-{algorithm} is not a cell of suite "
                      f"{params.suite!r}; its report will not include it")
    dataset_name = params.partition(exp.partition)["dataset"]
    dataset = _require(paths.dataset_file(dataset_name), f"clusterfl download {dataset_name} "
                       f"{suite}")
    # absolute: a worker of another executor (Ray) may run in another directory
    checkpoints = CheckpointPolicy(paths.checkpoint_dir(experiment, algorithm).resolve(),
                                   params.checkpoint_every)
    jobs = [SeedJob(exp, alg, dataset, _require(paths.partition_file(exp.partition, seed),
                    f"clusterfl partition {exp.partition} {suite}"), seed, options.engine,
                    device, checkpoints=checkpoints)
            for seed in seeds]
    load_dataset(dataset)  # validated before any run is created: a bad file is one line
    for job in jobs:
        require_participation(params, exp, load_partition(job.partition), job.partition)
    cell = run_params(params.suite, exp, alg, seeds, params.partitions[exp.partition])
    # the suite's other seeds already on disk stay (`clusterfl train ... --seed 0` by hand):
    # checked before any training, so a corrupt or foreign one fails in a second
    kept = kept_seeds(paths.cell_dir(experiment, algorithm),
                      paths.log_dir(experiment, algorithm) / "tracking.json", params.seeds,
                      seeds, cell, f"clusterfl train {experiment} {algorithm} {suite}")
    if position is not None:  # the suite-level line (under `dvc repro` a cell is a process)
        console.print(f"cell {position[0]} of {position[1]} of suite {params.suite!r}: "
                      f"{experiment}/{algorithm}, seeds {seeds}", highlight=False)
    record = _tracking_record(params, experiment, algorithm, cell, picked)
    tracker = _tracker(record, params.suite, console) if options.track else None
    return CellRun(params, experiment, algorithm, exp, alg, seeds, executor, jobs,
                   checkpoints, paths, suite, position, kept, record, tracker)


def execute(cell: CellRun, options: Options, console: Console) -> Trained:
    """Train the cell's seeds into a new copy of its results directory (with the seeds it
    keeps), swapped in whole with its summary.json once every seed is written."""
    tracker, logs = cell.tracker, cell.paths.log_dir(cell.experiment, cell.algorithm)
    final = cell.paths.cell_dir(cell.experiment, cell.algorithm)
    summaries = {seed: history.summary() for seed, history in cell.kept.items()}
    diverged = {seed: divergence(history.records) for seed, history in cell.kept.items()}
    primaries = [history.primary for history in cell.kept.values()]

    def live(job: SeedJob) -> list[Callback]:
        out: list[Callback] = [progress_callback(job.name, cell.exp.schedule.rounds)]
        return out + ([tracker.seed_callback(job.seed)] if tracker is not None else [])

    with output_dir(final) as out:
        for seed in summaries:
            shutil.copytree(final / f"seed{seed}", out / f"seed{seed}")
        try:
            for job, history in run_jobs(cell.executor, cell.jobs, live, options.submitted,
                                         options.lock):
                if not cell.executor.live:
                    if tracker is not None:
                        replay(history, tracker.seed_callback(job.seed))
                    console.print(f"{job.name}: {_last(history)}")
                (logs / f"seed{job.seed}").mkdir(parents=True, exist_ok=True)
                history.write(out / f"seed{job.seed}", timings=logs / f"seed{job.seed}")
                summaries[job.seed] = history.summary()
                primaries.append(history.primary)
                diverged[job.seed] = found = divergence(history.records)
                if found is not None:
                    console.print(f"[yellow]warning:[/yellow] {job.name}: diverged: "
                                  f"{found.describe()}; its numbers say nothing of the "
                                  "method (a smaller lr usually helps)", highlight=False,
                                  soft_wrap=True)
        except BaseException as err:  # close the parent and its open seed runs
            if tracker is not None:
                killed = isinstance(err, KeyboardInterrupt | SystemExit)
                tracker.finish({}, status="KILLED" if killed else "FAILED")
            raise
        present = summary_seeds(cell.params.seeds, summaries)
        rows = [summaries[s] for s in present]
        mean = {k: float(np.mean([s[k] for s in rows])) for k in rows[0]}
        std = {f"{k}_std": float(np.std([s[k] for s in rows])) for k in rows[0]}
        marks = diverged_marks(present, diverged)  # only where a seed diverged
        atomic_write_json(out / "summary.json", {"seeds": present, **mean, **std, **marks})
        atomic_write_json(logs / "tracking.json", cell.record)
        if tracker is not None:
            tracker.log_artifact(out / "summary.json")
            tracker.finish({**mean, **std})
    # every seed of a cell scores the same metrics: the last one trained names the primary
    return Trained(present, mean, marks, summaries, primaries[-1] if primaries else None)


def summarize(cell: CellRun, trained: Trained, console: Console, started: float) -> None:
    """The cell's closing lines: its primary metric over seeds (and any divergence), the
    suite's seeds it still lacks, and the whole suite's progress."""
    experiment, algorithm, params = cell.experiment, cell.algorithm, cell.params
    name = trained.primary
    if name is not None:
        last, best = (_fmt(name, trained.mean[f"{k}_{name}"]) for k in ("last", "best"))
        console.print(f"{experiment}/{algorithm}: {name} last {last} best {best} "
                      f"over seeds {trained.present}" + "".join(
                          f"; seed {m['seed']} diverged ({m['metric']} at round {m['round']})"
                          for m in trained.marks.get("diverged", [])), highlight=False,
                      soft_wrap=bool(trained.marks))
    missing = [s for s in params.seeds if s not in trained.summaries]
    if missing:
        console.print(f"{experiment}/{algorithm}: seeds {missing} of suite {params.suite!r} "
                      f"have no results yet; `clusterfl train {experiment} {algorithm} "
                      f"{cell.suite}` trains them", highlight=False)
    if cell.position is not None:  # the whole suite's progress (`pipeline.progress`)
        if set(params.seeds) <= set(cell.seeds):  # a whole cell, not a seed trained by hand
            record_finished(cell.paths, experiment, algorithm, time.monotonic() - started)
        console.print(suite_progress(cell.paths, [(e, a) for _, e, a in params.suite_cells()],
                                     experiment, algorithm), highlight=False)


def kept_seeds(cell: Path, tracking: Path, suite_seeds: list[int], training: list[int],
               params: dict[str, Any], command: str) -> dict[int, RunHistory]:
    """Seed -> history of each of the suite's seeds that `cell` holds and this run does
    not train: they stay in the cell and its summary. Their histories are validated (a
    `CorruptFile` names the file); if the cell's last run (`tracking`, where there is one)
    used other settings than `params` (seeds aside), mixing them would be a summary of two
    experiments: a one-line error that says to train every seed."""
    others = [s for s in suite_seeds
              if s not in training and (cell / f"seed{s}" / "history.json").exists()]
    if not others:
        return {}
    try:
        before = json.loads(tracking.read_text())["params"]
    except (OSError, ValueError, KeyError, TypeError):
        before = None  # results without logs (e.g. pulled from a DVC remote): nothing to check
    if isinstance(before, dict) and _but_seeds(before) != _but_seeds(params):
        raise UserError(f"{cell}: seeds {others} were trained with other settings "
                        f"({tracking}); train every seed: `{command}`")
    out = {}
    for seed in others:
        data = load_history_json(cell / f"seed{seed}" / "history.json")
        out[seed] = RunHistory(records=data["records"], primary=data.get("primary"))
    return out


def diverged_marks(seeds: list[int], diverged: dict[int, Divergence | None]
                   ) -> dict[str, list[dict[str, Any]]]:
    """The summary's mark of the seeds (of `seeds`, in order) whose loss became non-finite
    or exploded (`history.divergence`): {"diverged": [{seed, round, metric}, ...]}, or
    nothing at all where none did (a normal run's summary.json keeps its bytes)."""
    marks = [{"seed": seed, "round": found.round, "metric": found.metric}
             for seed in seeds if (found := diverged.get(seed)) is not None]
    return {"diverged": marks} if marks else {}


def _but_seeds(params: dict[str, Any]) -> str:
    # through JSON: tracking.json's copy has lists where the live params may have tuples
    return json.dumps({k: v for k, v in params.items() if k != "seeds"}, sort_keys=True)


def summary_seeds(suite_seeds: list[int], summaries: dict[int, Any]) -> list[int]:
    """The seeds a cell's summary covers: the suite's in its order (so a cell completed by
    hand writes the same bytes as one trained whole), then any others, sorted."""
    return ([s for s in suite_seeds if s in summaries]
            + sorted(s for s in summaries if s not in suite_seeds))


def cell_position(cells: list[tuple[str, str, str]], experiment: str, algorithm: str
                  ) -> tuple[int, int] | None:
    """(i, n): the cell is the i-th (from 1) of the suite's n cells in file order (the order
    `dvc repro` runs them); None if the suite does not train it."""
    names = [(e, a) for _, e, a in cells]
    if (experiment, algorithm) not in names:
        return None
    return names.index((experiment, algorithm)) + 1, len(names)


def run_params(suite: str, exp: Experiment, alg: AlgorithmConfig, seeds: list[int],
               partition: dict[str, Any]) -> dict[str, Any]:
    """What a cell's runs used, as MLflow params: the experiment's resolved values (its
    schedule with the suite's overrides applied, not the paper's raw `training` block; its
    `algorithm_options` are already in the hyperparameters), the partition's entry, seeds.
    A model-free experiment uses only rounds and participation of the schedule; an unset
    field (None) is left out, except participation, where None means every client."""
    schedule = dataclasses.asdict(exp.schedule)
    if exp.model is None:
        schedule = {k: schedule[k] for k in ("rounds", "clients_per_round")}
    schedule = {k: ("all" if v is None and k == "clients_per_round" else v)
                for k, v in schedule.items()}
    experiment = {"name": exp.name, "paper": exp.paper, "title": exp.title,
                  "partition": exp.partition, "model": exp.model,
                  "model_options": exp.model_options or None,
                  "evaluators": None if exp.evaluators is None else ",".join(exp.evaluators),
                  "validation_fraction": exp.validation_fraction}
    return {"suite": suite,
            "experiment": {k: v for k, v in experiment.items() if v is not None},
            "algorithm": {"name": alg.name, "method": alg.method,
                          **dataclasses.asdict(alg.hyper)},
            "schedule": {k: v for k, v in schedule.items() if v is not None},
            "partition": partition, "seeds": seeds}


def _fmt(name: str, value: float) -> str:
    if name in METRICS and metric(name).percent:
        return f"{100 * value:.2f}%"
    return f"{value:.4g}"


def _last(history: RunHistory) -> str:
    last = history.records[-1]
    name = history.primary or "round"
    return f"{name} {_fmt(name, last[name])} after {last['round']} rounds"


def _tracking_record(params: Any, experiment: str, algorithm: str, cell: dict[str, Any],
                     picked: dict[str, Any] | None = None) -> dict[str, Any]:
    """What MLflow gets for this cell (written as tracking.json for a later replay): tags
    to group runs by in the UI (suite, experiment, algorithm, partition and its scheme; the
    benchmark's picked values)."""
    from clusterfl.run.tracking import ATTEMPT_TAG, git_commit

    partition = params.experiment(experiment).partition
    tags = {"stage": "train", "git_commit": git_commit(), "experiment": experiment,
            "algorithm": algorithm, "suite": params.suite, "partition": partition,
            "scheme": params.partitions[partition]["scheme"], ATTEMPT_TAG: uuid.uuid4().hex}
    if picked is not None:
        tags["picked"] = ", ".join(f"{k}={v:g}" for k, v in picked.items())
    return {"experiment": params.tracking.get("experiment", "clusterfl"),
            "run_name": f"{experiment}/{algorithm}", "params": cell, "tags": tags}


def _tracker(record: dict[str, Any], suite: str, console: Console) -> Any:
    from clusterfl.run.tracking import (
        BestEffortTracker,
        CellTracker,
        default_tracking_uri,
        show_runs,
    )

    uri = default_tracking_uri()

    def make() -> CellTracker:
        tracker = CellTracker(record["experiment"], record["run_name"], record["params"],
                              record["tags"], uri=uri)
        show_runs(tracker.client, tracker.experiment_id)  # the UI opens on the runs table
        return tracker

    return BestEffortTracker(
        make, lambda line: console.print(f"[yellow]warning:[/yellow] {line}", highlight=False,
                                         soft_wrap=True),
        uri, f"clusterfl track --replay --suite {suite}")
