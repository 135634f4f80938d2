"""`clusterfl plan`: the train cells `dvc repro` of a suite will run, and their cost here.

For a suite (or one paper's cells of it): every stale train cell, its CPU seconds on this
machine, their total and the expected wall time with N seeds at once; `--write` keeps the
plan in logs/<suite>/plan.json for the progress lines of the repro that follows
(`pipeline.progress`). Readings:
- stale is DVC's word, not ours: the train stages `dvc status --json <the suite's dvc.yaml>`
  lists, and those whose download, partition or tune stage it lists (DVC runs that first and
  its new output changes the cell's deps; where the rebuilt output is byte-identical DVC
  skips the cell, which the plan still counts);
- a cell costs seconds per round x rounds x seeds. Seconds per round: the mean
  `round_seconds` of the cell's last run in this suite (every seed and round in
  logs/<suite>/<experiment>/<algorithm>/seed<k>/timings.json), else the committed
  reference's (reference/<suite>/<paper>/costs.md, measured on the machine that made it,
  with the rounds its seeds ran from its histories archive),
  else a probe of a few rounds (`pipeline.probe`; cached, and a cached one is used with
  `--no-probe` too), else unknown. Beside the rounds, each train stage costs its process's
  start-up, loading data, MLflow logging and DVC's hashing and lock writes (for short cells
  more than their rounds, so a plan of rounds alone is far too short): the plan adds the
  suite's measured stage overhead, the median over cells that ended one after the other
  in logs/ of the time between the two ends minus the later cell's rounds (`stage_overhead`);
  before two cells have run here it is unknown and said so. Not counted: the download,
  partition and report stages beyond that median, and the rounds a checkpoint of an
  interrupted run would save. A probe's few rounds stand for all of them, so a cell whose
  rounds get cheaper is costed high (FedCAvg at Q-hat = 400 takes floor(400 / s) + 1 local
  W steps in round s, so its first rounds are the dearest);
- wall time with `--jobs N`: `dvc repro` runs the cells one after another and each cell's
  seeds N at a time (CLUSTERFL_JOBS=N), so a cell takes the longest-processing-time (LPT)
  makespan of its seed runs over N workers (its seeds cost the same: ceil(S / N) seed runs)
  and the suite the sum over cells; `clusterfl sweep` puts every seed run of every cell in
  one pool, the LPT makespan of all of them over N workers, shown beside it. Both assume that
  N runs at once each go as fast as one alone, which on shared cores is optimistic.
"""

import heapq
import itertools
import json
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from clusterfl.core.errors import CorruptFile, UserError
from clusterfl.core.io import atomic_write_json
from clusterfl.run.config import SuiteConfig
from clusterfl.training.history import read_timings
from pipeline.common import SuitePaths
from pipeline.progress import FINISHED_FILE, clock, plan_path

LOGS, PROBE, CACHED, UNKNOWN = "logs", "probe", "probe (cached)", "unknown"
REFERENCE = "reference"  # a committed reference's costs.md: measured on the machine that made it


def lpt_makespan(durations: Iterable[float], workers: int) -> float:
    """Longest processing time first: each run, longest first, goes to the worker that is
    free first; the time the last worker finishes."""
    loads = [0.0] * max(1, workers)
    for duration in sorted(durations, reverse=True):
        heapq.heapreplace(loads, loads[0] + duration)
    return max(loads)


@dataclass(frozen=True)
class CellPlan:
    paper: str
    experiment: str
    algorithm: str
    seeds: int
    rounds: int
    seconds_per_round: float | None
    source: str  # LOGS, PROBE, CACHED or UNKNOWN
    why: str  # "changed" (DVC lists its train stage) or "after <stage>"

    @property
    def name(self) -> str:
        return f"{self.experiment}-{self.algorithm}"

    @property
    def seed_seconds(self) -> float | None:
        return None if self.seconds_per_round is None else self.seconds_per_round * self.rounds

    @property
    def cpu_seconds(self) -> float | None:
        return None if self.seed_seconds is None else self.seed_seconds * self.seeds

    def wall_seconds(self, jobs: int) -> float | None:
        """Under `dvc repro` with CLUSTERFL_JOBS=`jobs`: its seeds `jobs` at a time."""
        seed = self.seed_seconds
        return None if seed is None else lpt_makespan([seed] * self.seeds, jobs)


@dataclass(frozen=True)
class Plan:
    suite: str
    paper: str | None
    jobs: int
    cells: list[CellPlan]  # the stale ones
    total: int  # the cells of the suite (of `paper`), stale or not
    stage_seconds: float | None = None  # a train stage's cost beyond its rounds, measured here

    def stage_wall(self, cell: CellPlan) -> float | None:
        """The cell's wall time under `dvc repro`: its rounds plus the stage overhead."""
        rounds = cell.wall_seconds(self.jobs)
        return None if rounds is None else rounds + (self.stage_seconds or 0.0)

    def totals(self) -> dict[str, Any]:
        known = [c for c in self.cells if c.seed_seconds is not None]
        return {"cpu_seconds": sum(c.cpu_seconds or 0.0 for c in known),
                "wall_seconds": sum(self.stage_wall(c) or 0.0 for c in known),
                "sweep_wall_seconds": lpt_makespan(
                    [c.seed_seconds or 0.0 for c in known for _ in range(c.seeds)], self.jobs),
                "unknown": [c.name for c in self.cells if c.seed_seconds is None]}

    def as_json(self, written: float | None = None) -> dict[str, Any]:
        cells = [{"cell": c.name, "paper": c.paper, "experiment": c.experiment,
                  "algorithm": c.algorithm, "seeds": c.seeds, "rounds": c.rounds,
                  "seconds_per_round": c.seconds_per_round, "source": c.source, "why": c.why,
                  "cpu_seconds": c.cpu_seconds, "wall_seconds": self.stage_wall(c)}
                 for c in self.cells]
        out = {"suite": self.suite, "paper": self.paper, "jobs": self.jobs,
               "cells_in_suite": self.total, "stage_seconds": self.stage_seconds,
               "cells": cells, **self.totals()}
        return out if written is None else {"written": written, **out}


def dvc_status(root: Path, dvc_yaml: Path) -> dict[str, Any]:
    """`dvc status --json` of one dvc.yaml, run at the repository root."""
    target = dvc_yaml.resolve().relative_to(root.resolve()).as_posix()
    proc = subprocess.run([sys.executable, "-m", "dvc", "status", "--json", target],
                          cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"dvc status {target}: failed ({reason})")
    status: dict[str, Any] = json.loads(proc.stdout or "{}")
    return status


def stale_cells(status: Mapping[str, Any], params: SuiteConfig) -> dict[str, str]:
    """Cell name -> why it will train, from `dvc status --json` (keys `train@<cell>`, or
    `<dvc.yaml>:train@<cell>` for a suite's file)."""
    listed = {name.rsplit(":", 1)[-1] for name in status}
    stale = {}
    for cell in params.cells:
        partition = params.experiment(cell.experiment).partition
        upstream = [f"download@{params.partition(partition)['dataset']}",
                    f"partition@{partition}", f"tune@{cell.name}"]
        if f"train@{cell.name}" in listed:
            stale[cell.name] = "changed"
        elif before := [s for s in upstream if s in listed]:
            stale[cell.name] = f"after {before[0]}"
    return stale


def logged_rounds(paths: SuitePaths, experiment: str, algorithm: str) -> list[list[float]]:
    """Each seed's round_seconds in the cell's last run (its timings under logs/)."""
    seeds = []
    for seed in sorted(paths.log_dir(experiment, algorithm).glob("seed*")):
        try:
            seeds.append([t["round_seconds"] for t in read_timings(seed)
                          if "round_seconds" in t])
        except CorruptFile:
            continue
    return [s for s in seeds if s]


def logged_seconds_per_round(paths: SuitePaths, experiment: str, algorithm: str
                             ) -> float | None:
    """The mean round_seconds of the cell's last run (every seed's timings under logs/)."""
    return mean_round_seconds(logged_rounds(paths, experiment, algorithm))


def mean_round_seconds(seeds: list[list[float]]) -> float | None:
    seconds = [s for seed in seeds for s in seed]
    return sum(seconds) / len(seconds) if seconds else None


def one_round_run(rounds_run: list[int], asked: int) -> bool:
    """Whether a cell's algorithm runs a single round whatever its schedule asks (P5's
    K-means++ is one call, not `rounds` iterations): every seed seen ran 1 of > 1 asked."""
    return asked > 1 and bool(rounds_run) and all(n == 1 for n in rounds_run)


def stage_overhead(paths: SuitePaths, jobs: int, within: float = 900.0) -> float | None:
    """Seconds a train stage of the suite costs here beyond its rounds: for each cell whose
    end (logs/<suite>/<experiment>/<algorithm>/finished.json) came at most `within` s plus
    its rounds after another cell's (one `dvc repro`), the time between the two ends minus
    its rounds (its seeds' round seconds, `jobs` at a time, LPT); the median of those. None
    before two cells have ended one after the other."""
    ends = []
    for record in (paths.root / "logs" / paths.suite).glob(f"*/*/{FINISHED_FILE}"):
        try:
            ends.append((float(json.loads(record.read_text())["finished"]), record.parent))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    ends.sort()
    overheads = []
    for (before, _), (end, cell) in itertools.pairwise(ends):
        try:
            seeds = [sum(t.get("round_seconds", 0.0) for t in read_timings(seed))
                     for seed in sorted(cell.glob("seed*"))]
        except CorruptFile:
            continue
        rounds = lpt_makespan(seeds, jobs)
        if end - before <= within + rounds:
            overheads.append(max(0.0, end - before - rounds))
    return statistics.median(overheads) if overheads else None


def reference_costs(suite: str, root: Path = Path(".")) -> dict[tuple[str, str], float]:
    """(experiment, algorithm) -> mean round seconds from the committed references of
    `suite` (reference/<suite>/<paper>/costs.md, `pipeline.reference`): a cell never trained
    here still has a cost without a probe (the paper suite's 198 cells: ~200 process starts).
    A row that does not read as `| exp/alg | seconds | ... |` is skipped."""
    costs = {}
    for page in sorted((root / "reference" / suite).glob("*/costs.md")):
        for line in page.read_text().splitlines():
            fields = [f.strip() for f in line.strip().strip("|").split("|")]
            if len(fields) < 2 or fields[0].count("/") != 1:
                continue
            try:
                seconds = float(fields[1])
            except ValueError:
                continue
            if seconds > 0 and seconds != float("inf"):
                experiment, algorithm = fields[0].split("/")
                costs[(experiment, algorithm)] = seconds
    return costs


def reference_rounds(suite: str, root: Path = Path("."), paper: str | None = None
                     ) -> dict[tuple[str, str], list[int]]:
    """(experiment, algorithm) -> the rounds each seed of the committed reference ran (the
    records of its history.json in reference/<suite>/<paper>/histories/histories.tar.xz):
    costs.md gives seconds a round, and a one-round algorithm (P5's K-means++) would be
    costed at the schedule's rounds without them. Only `paper`'s archive if given; an
    archive with a member that does not read is skipped whole (its cells are then planned
    at the schedule's rounds)."""
    from pipeline.reference import ARCHIVE, REFERENCE  # its archive's name and place

    rounds: dict[tuple[str, str], list[int]] = {}
    for archive in sorted((root / REFERENCE / suite).glob(f"{paper or '*'}/histories/{ARCHIVE}")):
        try:
            with tarfile.open(archive) as tar:
                for member in tar:
                    parts = member.name.split("/")
                    file = tar.extractfile(member) if len(parts) == 4 else None
                    if file is None or parts[3] != "history.json":
                        continue
                    records = json.load(file).get("records")
                    if isinstance(records, list):
                        rounds.setdefault((parts[0], parts[1]), []).append(len(records))
        except (OSError, tarfile.TarError, ValueError, AttributeError):
            continue
    return rounds


# (experiment, algorithm) -> (seconds per round or None, its source, rounds the probe ran)
Probe = Callable[[str, str], tuple[float | None, str, int | None]]


def build(params: SuiteConfig, stale: Mapping[str, str], jobs: int, paper: str | None = None,
          probe: Probe | None = None, root: Path = Path(".")) -> Plan:
    """The plan of the suite's `stale` cells (of `paper` alone if given); a cell without
    timings in logs/ costs what the committed reference measured (`reference_costs`), else
    what `probe` gives (None: its cost is unknown)."""
    paths = SuitePaths(params.home, root)  # where its cells train (and log)
    reference = reference_costs(params.home, root)
    ran_in_reference: dict[tuple[str, str], list[int]] | None = None  # read when needed
    mine = params.paper_cells(paper)
    cells = []
    for cell in (c for c in mine if c.name in stale):
        logged = logged_rounds(paths, cell.experiment, cell.algorithm)  # read once
        seconds = mean_round_seconds(logged)
        source, ran = (LOGS, [len(s) for s in logged]) if seconds is not None else (UNKNOWN, [])
        if seconds is None and (cell.experiment, cell.algorithm) in reference:
            seconds, source = reference[(cell.experiment, cell.algorithm)], REFERENCE
            if ran_in_reference is None:
                ran_in_reference = reference_rounds(params.home, root, paper)
            ran = ran_in_reference.get((cell.experiment, cell.algorithm), [])
        if seconds is None and probe is not None:
            seconds, source, probed = probe(cell.experiment, cell.algorithm)
            ran = [] if probed is None else [probed]
        rounds = params.experiment(cell.experiment).schedule.rounds
        cells.append(CellPlan(cell.paper, cell.experiment, cell.algorithm, len(params.seeds),
                              1 if one_round_run(ran, rounds) else rounds, seconds,
                              source, stale[cell.name]))
    return Plan(params.suite, paper, jobs, cells, len(mine), stage_overhead(paths, jobs))


def write(plan: Plan, paths: SuitePaths, now: float | None = None) -> Path:
    """logs/<suite>/plan.json, stamped with the time the repro starts from."""
    path = plan_path(paths)
    atomic_write_json(path, plan.as_json(time.time() if now is None else now))
    return path


def total_line(plan: Plan) -> str:
    """What the table's numbers add up to, and how the wall times are computed."""
    t, n = plan.totals(), plan.jobs
    scope = f"suite {plan.suite}" + (f", paper {plan.paper}" if plan.paper else "")
    known = len(plan.cells) - len(t["unknown"])
    overhead = (f"{plan.stage_seconds:.1f} s a stage beyond its rounds, measured here"
                if plan.stage_seconds is not None else
                "rounds only: no stage overhead measured here yet (no two cells of the suite "
                "ended one after the other in logs/)")
    if plan.cells and not known:  # nothing to add up: say how to get numbers
        return (f"{scope}: {len(plan.cells)} of {plan.total} cells to train, none of known "
                f"cost (no timings in logs/ and not probed: run `clusterfl plan --suite "
                f"{plan.suite}` without --no-probe to time them)")
    line = (f"{scope}: {len(plan.cells)} of {plan.total} cells to train"
            f"{f'; the {known} of known cost' if t['unknown'] else ''}: CPU time "
            f"{clock(t['cpu_seconds'])}; wall with {n} job{'s' * (n > 1)}: "
            f"{clock(t['wall_seconds'])} under `dvc repro` (cells one after another, each "
            f"cell's seeds {n} at a time, {overhead}), {clock(t['sweep_wall_seconds'])} of "
            f"rounds under `clusterfl sweep` (every seed run in one pool of {n}, longest first)")
    if t["unknown"]:
        line += (f"; not counted: {len(t['unknown'])} cells of unknown cost (no timings in "
                 "logs/, not probed)")
    return line


def table_rows(plan: Plan) -> list[Sequence[str]]:
    def shown(seconds: float | None) -> str:
        return UNKNOWN if seconds is None else clock(seconds)

    return [(c.name, c.paper, str(c.seeds), str(c.rounds),
             UNKNOWN if c.seconds_per_round is None else f"{c.seconds_per_round:.3g}",
             c.source, shown(c.cpu_seconds), shown(plan.stage_wall(c)), c.why)
            for c in plan.cells]


COLUMNS = ("cell", "paper", "seeds", "rounds", "s/round", "from", "CPU time", "wall", "why")


def make(suite_file: Path, jobs: int, paper: str | None, probe: bool, console: Console
         ) -> Plan:
    """The plan of a suite file as it is now: its dvc.yaml must be current (`clusterfl
    render`), DVC says what is stale, cached probes and (unless not `probe`) new ones, with
    a progress bar, fill in the costs that logs/ lacks."""
    from clusterfl.run.config import load_params
    from pipeline.probe import Prober
    from pipeline.render import dvc_file, require_current, require_inside, require_rendered

    require_inside(suite_file)  # DVC is asked about it from here
    require_rendered(suite_file)
    require_current(suite_file)
    params = load_params(suite_file)
    params.paper_cells(paper)  # an unknown paper: one line, before DVC is asked
    stale = stale_cells(dvc_status(Path("."), dvc_file(suite_file)), params)
    prober = Prober(params, jobs)
    paths = SuitePaths(params.home)
    reference = reference_costs(params.home)
    todo = [c for c in params.paper_cells(paper) if probe and c.name in stale
            and logged_seconds_per_round(paths, c.experiment, c.algorithm) is None
            and (c.experiment, c.algorithm) not in reference
            and prober.cached(c.experiment, c.algorithm) is None]
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console, transient=True, disable=not todo)
    task = bar.add_task("probing", total=len(todo))

    def measure(experiment: str, algorithm: str) -> tuple[float | None, str, int | None]:
        cached = prober.cached(experiment, algorithm)
        if cached is not None or not probe:
            return (cached, UNKNOWN if cached is None else CACHED,
                    prober.rounds_run(experiment, algorithm))
        bar.update(task, description=f"probing {experiment}-{algorithm}")
        seconds = prober.measure(experiment, algorithm)
        bar.advance(task)
        return seconds, PROBE, prober.rounds_run(experiment, algorithm)

    try:
        with bar:
            return build(params, stale, jobs, paper, measure)
    finally:
        prober.close()
