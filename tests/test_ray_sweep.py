"""The grid on Ray, with a real `mlflow server` and DVC in a temporary repo (both on 127.0.0.1).

- `clusterfl sweep --executor ray` on a local Ray with 2 CPUs trains a shrunk suite's cells:
  every history equals the serial run's byte for byte, DVC records them (only the report is
  left), and the server holds one parent run per cell with a nested run per seed;
- a worker process that dies mid-task is retried by Ray and gives the serial numbers;
- the serial, process and Ray executors give the same histories through `run_jobs`;
- a cell that fails leaves no output and does not stop the others;
- 4 tasks logging to one server at once: every run and every per-round metric arrives.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.mlflow_servers import free_port, start_server, stop_server
from tests.workspace import copy_pipeline, render

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.slow, pytest.mark.server]

ray = pytest.importorskip("ray")

CELLS = [("p1_synthetic_mlr", "fedavg"), ("p1_synthetic_mlr", "pfedkm_k2")]
SEEDS = [0, 1]
ROUNDS = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`mlflow server` on a sqlite database, 2 workers (writes arrive concurrently)."""
    tmp = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    proc = start_server(tmp / "server.db", port, artifacts=tmp / "artifacts", workers=2)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)


def _sh(cmd: list[str], cwd: Path, env: dict[str, str], ok: bool = True) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if ok:
        assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A DVC repo with the default suite shrunk to 2 cells x 2 seeds x 3 rounds."""
    ws = tmp_path_factory.mktemp("repo")
    copy_pipeline(ws)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=SEEDS, training={"rounds": ROUNDS},
                           grid=[{"experiments": [e], "algorithms": [a]} for e, a in CELLS])
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=3, max_size=200)
    params["tracking"] = {"experiment": "sweep-test"}
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": f"{ws}:{ws / 'src'}", "CLUSTERFL_THREADS": "1",
           "MLFLOW_TRACKING_URI": f"sqlite:///{ws / 'mlflow.db'}"}
    env.pop("RAY_ADDRESS", None)
    render(ws, env, "default")
    _sh(["git", "init", "-q"], ws, env)
    _sh([str(BIN / "dvc"), "init", "-q"], ws, env)
    return ws, env


@pytest.fixture(scope="module")
def data(workspace):
    """The suite's dataset and partitions (made by the sweep when it ran first)."""
    ws, env = workspace
    if not (ws / "data/default/partitions/p1_synthetic").exists():
        for stage in ("download", "partition"):
            _sh([str(BIN / "clusterfl"), stage, "p1_synthetic"], ws, env)
    return ws


def _serial_jobs(ws: Path) -> list:
    from clusterfl.run.config import load_params
    from clusterfl.run.execution import SeedJob
    from pipeline.common import SuitePaths

    params = load_params(ws / "params.yaml")
    paths = SuitePaths("default", ws)
    return [SeedJob(exp := params.experiment(e), params.algorithm(a, experiment=e),
                    paths.dataset_file("p1_synthetic"),
                    paths.partition_file(exp.partition, seed), seed)
            for e, a in CELLS for seed in SEEDS]


@pytest.fixture(scope="module")
def serial(data) -> dict[str, dict]:
    """Each seed job's history from a serial run in this process (`_json`), by job name:
    the numbers that the sweep on Ray and the retried Ray tasks must equal."""
    return {job.name: _json(job()) for job in _serial_jobs(data)}


def _json(history) -> dict:
    """A history as its history.json holds it (JSON floats round-trip exactly), without the
    wall-clock metrics (`kmeans_seconds`), which differ between any two runs."""
    from pipeline.compare import WALL_CLOCK

    data = json.loads(json.dumps(history if isinstance(history, dict) else history.to_json()))
    data["records"] = [{k: v for k, v in r.items() if k not in WALL_CLOCK}
                       for r in data["records"]]
    data.pop("summary")
    return data


def test_sweep_on_local_ray_equals_serial_and_dvc_records_it(workspace, server, request):
    ws, env = workspace
    env = {**env, "MLFLOW_TRACKING_URI": server}
    out = _sh([str(BIN / "clusterfl"), "sweep", "--executor", "ray", "--cpus", "2"], ws, env)
    assert "2 of 2 cells out of date, 4 seed runs" in out
    serial = request.getfixturevalue("serial")  # after the sweep: its data, not data's
    for job in _serial_jobs(ws):
        written = ws / "results/default" / job.experiment.name / job.algorithm.name
        stored = json.loads((written / f"seed{job.seed}/history.json").read_text())
        assert _json(stored) == serial[job.name], job.name  # every number, bit for bit
    status = json.loads(_sh([str(BIN / "dvc"), "status", "--json", "dvc.yaml"], ws, env))
    assert set(status) == {"report"}
    ran = re.findall(r"Running stage '([^']+)'", _sh([str(BIN / "dvc"), "repro"], ws, env))
    assert ran == ["report"]
    assert "up to date" in _sh([str(BIN / "dvc"), "repro"], ws, env)

    from mlflow.tracking import MlflowClient

    client = MlflowClient(server)
    runs = client.search_runs([client.get_experiment_by_name("sweep-test").experiment_id],
                              filter_string="tags.stage = 'train'")  # not the report run
    parents = {r.info.run_name: r for r in runs if "mlflow.parentRunId" not in r.data.tags}
    assert set(parents) == {f"{e}/{a}" for e, a in CELLS}
    for r in runs:
        if "mlflow.parentRunId" in r.data.tags:
            parent = client.get_run(r.data.tags["mlflow.parentRunId"]).info.run_name
            assert r.info.run_name.startswith(f"{parent}/seed")
            steps = [m.step for m in client.get_metric_history(r.info.run_id, "test_acc")]
            assert steps == list(range(1, ROUNDS + 1))
    assert len(runs) == len(CELLS) * (1 + len(SEEDS))


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def test_a_worker_killed_mid_task_is_retried_with_the_same_numbers(data, serial, local_ray,
                                                                    tmp_path):
    from clusterfl.run.execution import run_jobs
    from clusterfl.run.ray_executor import RayExecutor, run_task

    ws = data
    marker = tmp_path / "died-once"

    def dies_once(job, threads, *files):
        """seed 1 of every cell: the worker process exits in round 2 of its first attempt."""

        class Exit:
            def on_run_start(self, info): pass

            def on_round_end(self, round_, metrics):
                if round_ == 2 and job.seed == 1 and not marker.exists():
                    marker.touch()
                    os._exit(1)

            def on_run_end(self, summary): pass

        return run_task(job, threads, *files, callbacks=[Exit()])

    jobs = _serial_jobs(ws)
    done = list(run_jobs(RayExecutor(max_retries=2, task=dies_once), jobs))
    assert marker.exists()  # a worker did die
    assert [job.name for job, _ in done] == [job.name for job in jobs]
    for job, history in done:
        assert _json(history) == serial[job.name], job.name


def test_serial_process_and_ray_executors_give_the_same_histories(data, local_ray):
    from clusterfl.run.execution import SerialExecutor, run_jobs
    from clusterfl.run.process_executor import ProcessExecutor
    from clusterfl.run.ray_executor import RayExecutor

    jobs = _serial_jobs(data)[2:]  # pfedkm_k2, seeds 0 and 1
    runs = [[(job.name, _json(h)) for job, h in run_jobs(executor, jobs)]
            for executor in (SerialExecutor(), ProcessExecutor(2, threads=1), RayExecutor())]
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][0][1] != runs[0][1][1]  # the seeds differ


def test_a_failed_cell_leaves_no_output_and_the_others_finish(data, local_ray):
    from clusterfl.run.config import Cell
    from clusterfl.run.ray_executor import RayExecutor, run_task
    from pipeline.sweep import run_cells

    ws = data

    def fails_for_pfedkm(job, threads, *files):
        if job.algorithm.name == "pfedkm_k2" and job.seed == 1:
            raise ValueError("boom in seed 1")
        return run_task(job, threads, *files)

    results = ws / "results/failing"
    cells = [Cell("p1", e, a) for e, a in CELLS]
    cwd = Path.cwd()
    os.chdir(ws)
    suite = yaml.safe_load((ws / "params.yaml").read_text())["suite"]
    suite.update(name="failing")  # its own output folders, same data
    (ws / "data/failing").symlink_to(ws / "data/default")
    (ws / "failing.yaml").write_text(yaml.safe_dump({"suite": suite}, sort_keys=False))
    try:
        from rich.console import Console

        outcomes = run_cells(cells, Path("failing.yaml"),
                             RayExecutor(task=fails_for_pfedkm), Console(), track=False)
    finally:
        os.chdir(cwd)
    assert [o.error for o in outcomes] == [None, "ValueError: boom in seed 1"]
    assert sorted(p.name for p in (results / "p1_synthetic_mlr").iterdir()) == ["fedavg"]
    assert (results / "p1_synthetic_mlr/fedavg/summary.json").exists()


def test_four_tasks_log_to_one_server_at_once_and_every_metric_arrives(server, local_ray):
    rounds, metrics = 25, ("test_acc", "train_loss", "ari", "drift")

    @ray.remote(num_cpus=0.25)
    def log_cell(i: int) -> None:
        from clusterfl.run.tracking import CellTracker

        tracker = CellTracker("concurrent", f"cell{i}", {"cell": i}, {"stage": "test"},
                              uri=server)
        for seed in (0, 1):
            callback = tracker.seed_callback(seed)
            callback.on_run_start({})
            for r in range(1, rounds + 1):
                callback.on_round_end(r, {m: 1000 * i + 10 * seed + r / 100 for m in metrics})
            callback.on_run_end({})
        tracker.finish({"last_test_acc": float(i)})

    ray.get([log_cell.remote(i) for i in range(4)])
    from mlflow.tracking import MlflowClient

    client = MlflowClient(server)
    runs = client.search_runs([client.get_experiment_by_name("concurrent").experiment_id])
    assert len(runs) == 4 * 3
    assert all(r.info.status == "FINISHED" for r in runs)
    for r in runs:
        if "mlflow.parentRunId" not in r.data.tags:
            i = int(r.info.run_name[len("cell"):])
            assert r.data.metrics["last_test_acc"] == i
            continue
        i, seed = int(r.info.run_name[4]), int(r.data.tags["seed"])
        for m in metrics:
            history = client.get_metric_history(r.info.run_id, m)
            assert sorted((h.step, h.value) for h in history) == [
                (s, 1000 * i + 10 * seed + s / 100) for s in range(1, rounds + 1)]
