"""`clusterfl plan` and the suite's progress: the wall-time arithmetic and the progress line
by hand, then a two-cell, two-paper workspace with real DVC: the stale list is DVC's, costs
come from logs/ or a cached probe, and `dvc repro dvc.yaml:report_p1` trains P1's cell alone,
prints the suite's progress from the written plan and leaves P5's cell stale."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterfl.core.io import atomic_write_json
from clusterfl.run.config import load_params
from pipeline.common import SuitePaths
from pipeline.plan import (
    CellPlan,
    Plan,
    build,
    lpt_makespan,
    one_round_run,
    stage_overhead,
    stale_cells,
    total_line,
)
from pipeline.progress import (
    no_plan_line,
    plan_path,
    progress_line,
    record_finished,
    suite_progress,
)
from tests.workspace import ROOT, copy_pipeline, grid

BIN = Path(sys.executable).parent  # dvc and clusterfl of this interpreter's environment
A, B = ("p1_synthetic_mlr", "fedavg"), ("p5_small_noniid", "fedcgds")


def test_lpt_gives_each_run_longest_first_to_the_worker_free_first():
    # 5 -> w1, 4 -> w2, 3 -> w2 (7), 3 -> w1 (8), 3 -> w2 (10): 10, where 9 ({5,4}, {3,3,3})
    # is best; LPT is a schedule, not the optimum
    assert lpt_makespan([3, 5, 3, 4, 3], 2) == 10
    assert lpt_makespan([3, 5, 3, 4, 3], 1) == 18
    assert lpt_makespan([20, 20, 20], 2) == 40  # ceil(3 / 2) seed runs
    assert lpt_makespan([], 4) == 0


def test_plan_totals_cells_in_sequence_and_the_sweep_pool_by_hand():
    cells = [CellPlan("p1", "e1", "a", seeds=3, rounds=10, seconds_per_round=2.0,
                      source="logs", why="changed"),
             CellPlan("p1", "e2", "a", seeds=3, rounds=5, seconds_per_round=1.0,
                      source="probe", why="after partition@x"),
             CellPlan("p5", "e3", "b", seeds=3, rounds=5, seconds_per_round=None,
                      source="unknown", why="changed")]
    plan = Plan("s", None, jobs=2, cells=cells, total=4)
    # a seed of e1: 2 s x 10 rounds = 20 s; of e2: 5 s. Under `dvc repro`: e1 takes 2 x 20
    # (3 seeds over 2 workers), e2 2 x 5. The sweep pool: 20 -> w1, 20 -> w2, 20 -> w1
    # (40), then the three 5 s runs on w2 (25, 30, 35): 40
    assert [c.cpu_seconds for c in cells] == [60.0, 15.0, None]
    assert plan.totals() == {"cpu_seconds": 75.0, "wall_seconds": 50.0,
                             "sweep_wall_seconds": 40.0, "unknown": ["e3-b"]}
    assert plan.as_json(written=7.0)["cells"][1] == {
        "cell": "e2-a", "paper": "p1", "experiment": "e2", "algorithm": "a", "seeds": 3,
        "rounds": 5, "seconds_per_round": 1.0, "source": "probe", "why": "after partition@x",
        "cpu_seconds": 15.0, "wall_seconds": 10.0}
    assert total_line(plan).startswith("suite s: 3 of 4 cells to train; the 2 of known cost: "
                                       "CPU time 0:01:15; wall with 2 jobs: 0:00:50")
    # a fresh clone with --no-probe: nothing to add up, and the line says how to get numbers
    unknown = Plan("s", None, jobs=2, cells=cells[2:], total=4)
    assert total_line(unknown) == (
        "suite s: 1 of 4 cells to train, none of known cost (no timings in logs/ and not "
        "probed: run `clusterfl plan --suite s` without --no-probe to time them)")


def test_stage_overhead_is_the_median_time_between_cell_ends_beyond_their_rounds(tmp_path):
    """Four cells ended at 100, 130, 150 and 1400 s, each with 2 seeds of 4 + 6 s and 2 + 2 s
    of rounds: 10 s of rounds with 2 jobs, 14 s with 1. Beyond the rounds, with 2 jobs: 30 -
    10 = 20 and 20 - 10 = 10 (the last, 1250 s after: another session, is left out), median
    15; with 1 job: 16 and 6, median 11. A plan adds it to every cell's wall time."""
    paths = SuitePaths("s", tmp_path)
    assert stage_overhead(paths, 2) is None
    for i, end in enumerate([100.0, 130.0, 150.0, 1400.0]):
        record_finished(paths, "e", f"a{i}", seconds=1.0, now=end)
        for seed, rounds in enumerate([[4.0, 6.0], [2.0, 2.0]]):
            atomic_write_json(paths.log_dir("e", f"a{i}") / f"seed{seed}/timings.json",
                              {"records": [{"round": r + 1, "round_seconds": v}
                                           for r, v in enumerate(rounds)]})
    assert stage_overhead(paths, 2) == 15.0
    assert stage_overhead(paths, 1) == 11.0
    cell = CellPlan("p", "e", "a", seeds=2, rounds=10, seconds_per_round=1.0, source="logs",
                    why="changed")
    plan = Plan("s", None, jobs=2, cells=[cell, cell], total=2, stage_seconds=19.0)
    assert plan.totals()["wall_seconds"] == 2 * (10.0 + 19.0)
    assert "19.0 s a stage beyond its rounds, measured here" in total_line(plan)
    assert "no stage overhead measured here yet" in total_line(
        Plan("s", None, jobs=2, cells=[cell], total=1))


def _plan(written: float, walls: dict[str, float | None]) -> dict:
    return {"written": written, "cells": [
        {"cell": name, "experiment": name.split("-")[0], "algorithm": name.split("-")[1],
         "wall_seconds": wall} for name, wall in walls.items()]}


def test_progress_line_scales_the_estimates_left_by_how_the_done_cells_went():
    plan = _plan(1000.0, {"a-x": 100.0, "b-x": 200.0, "c-x": 300.0})
    # a took 150 s against 100 planned: the 500 s left become 750 s
    assert progress_line("paper", plan, {"a-x": 150.0}, now=1843.0) == (
        "suite paper: 1 of 3 cells done, 0:14:03 elapsed, ETA 0:12:30")
    assert progress_line("paper", plan, {}, now=1000.0) == (
        "suite paper: 0 of 3 cells done, 0:00:00 elapsed, ETA 0:10:00")
    # a cell without an estimate counts as the done cells' mean duration (50 s)...
    unknown = _plan(0.0, {"a-x": 100.0, "b-x": None})
    assert progress_line("s", unknown, {"a-x": 50.0}, now=60.0) == (
        "suite s: 1 of 2 cells done, 0:01:00 elapsed, ETA 0:00:50")
    # ... and is unknown while no cell is done
    assert progress_line("s", unknown, {}, now=3.0).endswith("ETA unknown")
    assert no_plan_line("paper", 7, 193) == (
        "suite paper: 7 of 193 cells have results (no plan: `clusterfl plan --suite paper "
        "--write` before `dvc repro` adds elapsed time and ETA)")


def test_suite_progress_counts_only_cells_finished_after_the_plan(tmp_path):
    paths = SuitePaths("s", tmp_path)
    (tmp_path / "suites/s").mkdir(parents=True)  # `--suite s` names it: hints say so
    (tmp_path / "suites/s/params.yaml").write_text("")
    cells = [("e1", "a"), ("e2", "a"), ("e3", "a")]
    (paths.cell_dir("e2", "a")).mkdir(parents=True)
    (paths.cell_dir("e2", "a") / "summary.json").write_text("{}")
    assert suite_progress(paths, cells, "e1", "a", now=0.0) == no_plan_line("s", 1, 3)
    atomic_write_json(plan_path(paths), _plan(100.0, {"e1-a": 40.0, "e3-a": 60.0}))
    record_finished(paths, "e3", "a", seconds=99.0, now=50.0)  # a run before the plan
    record_finished(paths, "e1", "a", seconds=20.0, now=130.0)
    assert suite_progress(paths, cells, "e1", "a", now=160.0) == (
        "suite s: 1 of 2 cells done, 0:01:00 elapsed, ETA 0:00:30")
    # a cell the plan does not name: what can be said without it
    assert suite_progress(paths, cells, "e2", "a", now=160.0) == no_plan_line("s", 1, 3)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Two one-seed, two-round cells of two papers in the default suite, DVC initialised,
    nothing run."""
    ws = tmp_path_factory.mktemp("plan")
    copy_pipeline(ws)
    (ws / ".gitignore").write_text("mlflow.db\n/logs/\n/checkpoints/\n__pycache__/\n")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=[0], training={"rounds": 2}, grid=grid([A, B]))
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=3, max_size=200)
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": f"{ws}:{ws / 'src'}", "CLUSTERFL_THREADS": "1",
           "MLFLOW_TRACKING_URI": f"sqlite:///{ws / 'mlflow.db'}"}
    env.pop("CLUSTERFL_JOBS", None)
    _clusterfl(ws, env, "render", "default")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run([str(BIN / "dvc"), "init", "-q"], cwd=ws, env=env, check=True)
    return ws, env


def _clusterfl(ws: Path, env: dict[str, str], *args: str) -> str:
    """`clusterfl ARGS` in `ws` in its own process: rendering (and so `plan`, which checks
    that the dvc.yaml is current) derives paths from where the package is imported from,
    the workspace's copy here; stdout alone."""
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _plan_json(ws: Path, env: dict[str, str], *args: str) -> dict:
    """`clusterfl plan --json ARGS`."""
    return json.loads(_clusterfl(ws, env, "plan", "--json", *args))


def _rows(plan: dict) -> list[tuple]:
    return [(c["cell"], c["why"], c["source"], c["seconds_per_round"], c["cpu_seconds"])
            for c in plan["cells"]]


def _timings(ws: Path) -> None:
    """A last run of P1's cell in logs/: 1 s and 3 s rounds, 2 s a round on average."""
    seed0 = ws / "logs/default/p1_synthetic_mlr/fedavg/seed0"
    seed0.mkdir(parents=True, exist_ok=True)
    (seed0 / "timings.json").write_text(json.dumps({"records": [
        {"round": 1, "round_seconds": 1.0}, {"round": 2, "round_seconds": 3.0}]}))


def test_stale_cells_are_dvcs_and_those_after_a_stale_data_stage(workspace):
    """In process, without DVC: `dvc status --json`'s stage names (with the file prefix of a
    suite's dvc.yaml) -> cells, and a cell's cost from logs/ or none."""
    ws, _ = workspace
    params = load_params(ws / "params.yaml")
    status = {"suites/s/dvc.yaml:train@p1_synthetic_mlr-fedavg": ["changed command"],
              "partition@p5_small_noniid": [{"changed outs": {}}], "report": []}
    stale = stale_cells(status, params)
    assert stale == {"p1_synthetic_mlr-fedavg": "changed",
                     "p5_small_noniid-fedcgds": "after partition@p5_small_noniid"}
    _timings(ws)
    plan = build(params, stale, jobs=1, root=ws)
    assert [(c.name, c.source, c.seconds_per_round, c.cpu_seconds) for c in plan.cells] == [
        ("p1_synthetic_mlr-fedavg", "logs", 2.0, 4.0),  # 2 s a round x 2 rounds x 1 seed
        ("p5_small_noniid-fedcgds", "unknown", None, None)]
    assert build(params, stale, jobs=1, paper="p5", root=ws).total == 1


def test_a_one_round_algorithm_is_planned_at_one_round_from_logs_or_a_probe(workspace):
    """P5's K-means++ runs one round whatever the schedule says: costing it at the
    schedule's rounds made the first P5 plan 2 CPU-hours too long."""
    ws, _ = workspace
    params = load_params(ws / "params.yaml")
    stale = {"p1_synthetic_mlr-fedavg": "changed", "p5_small_noniid-fedcgds": "changed"}
    seed0 = ws / "logs/default/p1_synthetic_mlr/fedavg/seed0"
    seed0.mkdir(parents=True, exist_ok=True)
    (seed0 / "timings.json").write_text(json.dumps({"records": [
        {"round": 1, "round_seconds": 5.0}]}))
    plan = build(params, stale, jobs=1, root=ws,
                 probe=lambda e, a: (0.5, "probe", 1))
    assert [(c.name, c.rounds, c.cpu_seconds) for c in plan.cells] == [
        ("p1_synthetic_mlr-fedavg", 1, 5.0), ("p5_small_noniid-fedcgds", 1, 0.5)]
    rounds = params.experiment("p5_small_noniid").schedule.rounds
    plan = build(params, stale, jobs=1, root=ws, probe=lambda e, a: (0.5, "probe", 2))
    assert plan.cells[1].rounds == rounds > 1
    assert not one_round_run([1, 2], 30) and not one_round_run([1], 1)


def test_a_cell_without_logs_costs_what_the_committed_reference_measured(tmp_path):
    """`make plan SUITE=paper` probed all 198 cells although reference/paper/*/costs.md
    holds each one's seconds per round: logs first, then the reference, then a probe."""
    from pipeline.plan import reference_costs

    committed = reference_costs("paper", ROOT)
    assert committed[("p1_synthetic_mlr", "fedavg")] > 0 and len(committed) > 100
    params = load_params(ROOT / "params.yaml")
    page = tmp_path / "reference/default/p5/costs.md"
    page.parent.mkdir(parents=True)
    page.write_text("# costs\n\n| cell | round_seconds (mean) | kmeans_seconds (mean) |\n"
                    "|---|---|---|\n| p5_small_noniid/fedcgds | 0.25 |  |\n"
                    "| p1_synthetic_mlr/local | n/a |  |\n")
    _timings(tmp_path)  # P1's fedavg: 2 s a round in logs/, which wins over any reference
    probed = []

    def probe(experiment: str, algorithm: str) -> tuple[float, str, int]:
        probed.append((experiment, algorithm))
        return 9.0, "probe", 2

    stale = {f"{e}-{a}": "changed" for e, a in (A, B, ("p1_synthetic_mlr", "local"))}
    plan = build(params, stale, jobs=1, probe=probe, root=tmp_path)
    assert [(c.name, c.source, c.seconds_per_round) for c in plan.cells] == [
        ("p1_synthetic_mlr-fedavg", "logs", 2.0),
        ("p1_synthetic_mlr-local", "probe", 9.0),  # its reference row is not a number
        ("p5_small_noniid-fedcgds", "reference", 0.25)]
    assert probed == [("p1_synthetic_mlr", "local")]


def test_plan_probes_no_cell_the_committed_reference_has_costed(monkeypatch):
    """The probing list of `plan` (paper suite, its committed reference) is empty."""
    from pipeline import plan as planning
    from pipeline.probe import Prober

    monkeypatch.chdir(ROOT)
    suite = load_params(ROOT / "suites/paper/params.yaml")
    cells = [c for c in suite.cells if c.paper == "p1"][:3]
    monkeypatch.setattr(planning, "dvc_status",
                        lambda root, target: {f"train@{c.name}": [] for c in cells})
    monkeypatch.setattr(planning, "logged_seconds_per_round", lambda *a: None)
    monkeypatch.setattr(planning, "logged_rounds", lambda *a: [])  # this checkout's logs/
    monkeypatch.setattr(Prober, "cached", lambda self, e, a: None)

    def no_probe(self, experiment: str, algorithm: str) -> float:
        raise AssertionError(f"probed {experiment}-{algorithm}")

    monkeypatch.setattr(Prober, "measure", no_probe)
    from rich.console import Console

    made = planning.make(ROOT / "suites/paper/params.yaml", 1, "p1", True, Console())
    assert [(c.name, c.source) for c in made.cells] == [(c.name, "reference") for c in cells]


@pytest.mark.slow
def test_plan_lists_dvcs_stale_cells_with_costs_from_logs_or_a_cached_probe(workspace):
    ws, env = workspace
    _timings(ws)
    plan = _plan_json(ws, env, "--jobs", "2")  # P5's cell: no data yet, built in a temp dir
    logged, probed = _rows(plan)
    assert logged == ("p1_synthetic_mlr-fedavg", "changed", "logs", 2.0, 4.0)
    assert probed[:3] == ("p5_small_noniid-fedcgds", "changed", "probe") and probed[3] > 0
    assert probed[4] == probed[3] * 2
    assert (plan["cpu_seconds"], plan["wall_seconds"], plan["jobs"]) == (
        4.0 + probed[4], 4.0 + probed[4], 2)
    assert not (ws / "data").exists()
    again = _plan_json(ws, env, "--paper", "p5", "--jobs", "2", "--no-probe")
    assert _rows(again) == [(*probed[:2], "probe (cached)", *probed[3:])]


@pytest.mark.slow
def test_reproduce_one_paper_trains_its_cells_alone_and_prints_the_suite_progress(workspace):
    ws, env = workspace
    _timings(ws)  # the plan's estimate of P1's cell: 4 s
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "reproduce", "--suite",
                           "default", "--paper", "p1", "--no-probe"], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    written = json.loads((ws / "logs/default/plan.json").read_text())
    assert [c["cell"] for c in written["cells"]] == ["p1_synthetic_mlr-fedavg"]
    assert set(re.findall(r"Running stage '([^']+)'", out)) == {
        "download@p1_synthetic", "partition@p1_synthetic", "train@p1_synthetic_mlr-fedavg",
        "report_p1"}
    assert re.search(r"^suite default: 1 of 1 cells done, 0:\d\d:\d\d elapsed, "
                     r"ETA 0:00:00$", out, flags=re.M), out
    table = (ws / "reports/default/p1/tables/results.md").read_text()
    assert "p1_synthetic_mlr" in table and "p5_small_noniid" not in table
    assert (ws / "reports/default/p1/index.html").exists()
    assert not (ws / "reports/default/tables").exists()  # the whole suite's report: not run
    assert "logs/" not in (ws / "dvc.lock").read_text()
    # in the suite's own lock: a later `dvc repro` of the whole suite trains P5's cell alone
    status = json.loads(subprocess.run(
        [sys.executable, "-m", "dvc", "status", "--json", "dvc.yaml"], cwd=ws, env=env,
        capture_output=True, text=True, check=True).stdout)
    assert {s for s in status if s.startswith("train@")} == {"train@p5_small_noniid-fedcgds"}


def test_a_one_round_algorithm_costed_from_the_reference_is_planned_at_one_round(tmp_path):
    """The committed P5 reference ran K-means++ one round a seed (1.9 s on p5_syn_noniid):
    planned at the schedule's 400 rounds it made the P5 plan 2.6 CPU-hours too long."""
    from pipeline.plan import reference_rounds

    (tmp_path / "reference").symlink_to(ROOT / "reference")  # no logs/: the reference costs
    params = load_params(ROOT / "suites/paper/params.yaml")
    stale = {"p5_syn_unf-kmeanspp": "changed", "p5_syn_unf-sncp": "changed"}
    plan = build(params, stale, jobs=2, paper="p5", root=tmp_path)
    assert [(c.name, c.source, c.rounds) for c in plan.cells] == [
        ("p5_syn_unf-sncp", "reference", 400), ("p5_syn_unf-kmeanspp", "reference", 1)]
    ran = reference_rounds("paper", ROOT, "p5")
    assert ran[("p5_syn_unf", "kmeanspp")] == [1] * 5
    assert ("p1_synthetic_mlr", "fedavg") not in ran  # another paper's archive is not read
