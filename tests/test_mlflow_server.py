"""A real `mlflow server` on 127.0.0.1: `clusterfl train` sends its runs there; a server
that is down never stops a run, and `clusterfl track --replay` logs it later, once."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.mlflow_servers import free_port, start_server, stop_server
from tests.workspace import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.server, pytest.mark.slow]


def _start(tmp_path: Path, port: int) -> subprocess.Popen:
    return start_server(tmp_path / "server.db", port, artifacts=tmp_path / "artifacts",
                        timeout=120)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module (a start is ~15 s of CPU); each test its own experiment."""
    tmp_path = tmp_path_factory.mktemp("server")
    port = free_port()
    proc = _start(tmp_path, port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)


def _workspace(tmp_path: Path, data: Path | None = None, rounds: int = 4,
               experiment: str = "server-test") -> Path:
    """A tiny default suite (one seed, `rounds` rounds, 6 clients) in `tmp_path / "ws"`, with
    a copy of the `data` folder (its dataset and partition) when given."""
    ws = tmp_path / "ws"
    ws.mkdir()
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=[0], training={"rounds": rounds})
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=2, max_size=120)
    params["tracking"] = {"experiment": experiment}
    (ws / "params.yaml").write_text(yaml.safe_dump(params))
    if data is not None:
        shutil.copytree(data, ws / "data")
    return ws


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """The suite's dataset and partition, made once for both tests and in this process
    (neither command talks to MLflow; the rounds, which differ, are not their params)."""
    ws = _workspace(tmp_path_factory.mktemp("data"))
    for args in (["download", "p1_synthetic"], ["partition", "p1_synthetic"]):
        cli_in_process(ws, *args)
    return ws / "data"


def _cli(ws: Path, uri: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "PYTHONPATH": f"{ROOT}:{ROOT}/src"}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args, "-p", "params.yaml"],
                          cwd=ws, env=env, capture_output=True, text=True, timeout=300)


def test_train_logs_per_round_metrics_to_the_server(server, data, tmp_path):
    ws = _workspace(tmp_path, data)
    proc = _cli(ws, server, "train", "p1_synthetic_mlr", "fedavg")
    assert proc.returncode == 0, proc.stderr
    assert not (ws / "mlflow.db").exists()  # the env var won over the default store

    from mlflow.tracking import MlflowClient

    client = MlflowClient(server)
    exp = client.get_experiment_by_name("server-test")
    runs = client.search_runs([exp.experiment_id])
    child = next(r for r in runs if r.info.run_name == "p1_synthetic_mlr/fedavg/seed0")
    history = client.get_metric_history(child.info.run_id, "test_acc")
    assert [m.step for m in history] == [1, 2, 3, 4]
    assert all(0.0 <= m.value <= 1.0 for m in history)
    parent = next(r for r in runs if r.info.run_name == "p1_synthetic_mlr/fedavg")
    assert parent.info.status == "FINISHED"
    assert parent.data.params["algorithm.method"] == "fedavg"
    assert "last_test_acc" in parent.data.metrics
    # the live run carries its attempt id: a replay finds it and logs nothing
    assert _cli(ws, server, "track", "--replay").returncode == 0
    assert len(client.search_runs([exp.experiment_id])) == len(runs)


def test_a_server_that_is_down_costs_one_warning_and_the_replay_logs_once(data, tmp_path,
                                                                          server):
    """Server down (a port nothing listens on): the cell trains, warns once, writes its
    history. Server up (the store the user points at next): the next stage (report) logs
    the parent and the seed run with every round's metrics; a replay after it logs nothing."""
    ws = _workspace(tmp_path, data, rounds=3, experiment="server-down-test")
    uri = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    proc = _cli(ws, uri, "train", "p1_synthetic_mlr", "pfedkm_k4")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - start < 120  # no minutes of retries
    assert proc.stderr.count("warning:") == 1 and "Traceback" not in proc.stderr
    assert f"MLflow store {uri} unreachable" in proc.stderr
    assert "clusterfl track --replay --suite default" in proc.stderr
    cell = ws / "results/default/p1_synthetic_mlr/pfedkm_k4"
    history = json.loads((cell / "seed0/history.json").read_text())
    assert [r["round"] for r in history["records"]] == [1, 2, 3]
    down = _cli(ws, uri, "track", "--replay")
    assert down.returncode == 2 and down.stderr.count("\n") == 1
    assert "MLflow store unreachable ([Errno 111] Connection refused)" in down.stderr

    uri = server  # the store is up now
    first = _cli(ws, uri, "report", "--partial")  # the next stage that reaches it
    assert first.returncode == 0, first.stderr
    assert "1 of 1 cells logged" in first.stderr
    second = _cli(ws, uri, "track", "--replay")
    assert second.returncode == 0, second.stderr
    assert "0 of 1 cells logged" in second.stderr and "1 were there already" in second.stderr

    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("server-down-test")
    runs = client.search_runs([exp.experiment_id], filter_string="tags.stage = 'train'")
    assert sorted(r.info.run_name for r in runs) == [
        "p1_synthetic_mlr/pfedkm_k4", "p1_synthetic_mlr/pfedkm_k4/seed0"]
    assert all(r.info.status == "FINISHED" for r in runs)
    child = next(r for r in runs if r.info.run_name.endswith("seed0"))
    logged = client.get_metric_history(child.info.run_id, "test_acc")
    assert [(m.step, m.value) for m in logged] == [
        (r["round"], r["test_acc"]) for r in history["records"]]
    logs = ws / "logs/default/p1_synthetic_mlr/pfedkm_k4"  # timings: outside the DVC out
    timings = json.loads((logs / "seed0/timings.json").read_text())["records"]
    seconds = client.get_metric_history(child.info.run_id, "kmeans_seconds")
    assert [m.value for m in seconds] == [t["kmeans_seconds"] for t in timings]
    parent = next(r for r in runs if r.info.run_name == "p1_synthetic_mlr/pfedkm_k4")
    assert parent.data.metrics["last_test_acc"] == history["records"][-1]["test_acc"]
    assert parent.data.params["algorithm.method"] == "pfedkm"
