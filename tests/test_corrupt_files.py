"""Every data, partition and history file is validated when read: a truncated, garbage or
edited file is one line naming it and the command that rebuilds it (exit 2, no traceback),
no MLflow run is left RUNNING, and no output is touched. A failed cell closes its seed runs.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from clusterfl.core.errors import CorruptFile
from clusterfl.core.io import atomic_write_npz, read_npz
from clusterfl.training.history import RunHistory, load_history_json
from tests.workspace import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
DATASET = "data/default/raw/p1_synthetic/dataset.npz"
PARTITION = "data/default/partitions/p1_synthetic/seed0.npz"
HISTORY = "results/default/p1_synthetic_mlr/fedavg/seed0/history.json"
REBUILD = {DATASET: "clusterfl download p1_synthetic --suite default",
           PARTITION: "clusterfl partition p1_synthetic --suite default",
           HISTORY: "clusterfl train p1_synthetic_mlr fedavg --suite default"}


def _env(ws: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    return env | {"PYTHONPATH": f"{ROOT}:{ROOT}/src", "CLUSTERFL_THREADS": "1"}


def _cli(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args, "-p", "params.yaml"],
                          cwd=ws, env=_env(ws), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny default suite with one trained cell, logged to ws/mlflow.db; made in this
    process (the commands under test run in subprocesses)."""
    ws = tmp_path_factory.mktemp("ws")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=[0], training={"rounds": 2})
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=2, max_size=120)
    (ws / "params.yaml").write_text(yaml.safe_dump(params))
    for args in (["download", "p1_synthetic"], ["partition", "p1_synthetic"],
                 ["train", "p1_synthetic_mlr", "fedavg"]):
        cli_in_process(ws, *args, env={"MLFLOW_TRACKING_URI": None, "CLUSTERFL_THREADS": "1"})
    return ws


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(np.random.default_rng(0).bytes(path.stat().st_size))


def _edit(path: Path) -> None:
    """Well-formed, but not what was written: one number changed, the old checksum kept."""
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        data["records"][0]["test_acc"] = 0.99
        path.write_text(json.dumps(data))
        return
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    name = "x" if "x" in arrays else "train"
    arrays[name] = arrays[name].copy()
    arrays[name].flat[0] += 1
    np.savez_compressed(path, **arrays)


def _snapshot(ws: Path, skip: str) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*"))
            if p.is_file() and not p.name.startswith("mlflow") and str(p.relative_to(ws)) != skip}


def _runs(ws: Path) -> list[tuple[str, str]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{ws / 'mlflow.db'}")
    exp = client.get_experiment_by_name("clusterfl")
    return sorted((r.info.run_name, r.info.status) for r in client.search_runs([exp.experiment_id]))


COMMANDS = {DATASET: [["partition", "p1_synthetic"], ["train", "p1_synthetic_mlr", "fedavg"]],
            PARTITION: [["train", "p1_synthetic_mlr", "fedavg"]],
            HISTORY: [["report", "--partial"], ["compare", "results", "results"]]}


# Each file's commands run once, in real processes (the one line, exit 2 and no traceback
# are the entry point's), with one kind of damage each; every kind of damage of every file
# is the reader's error in `test_every_damage_of_every_file_is_its_readers_corrupt_file`.
DAMAGE = {DATASET: _truncate, PARTITION: _garbage, HISTORY: _edit}


@pytest.mark.slow
@pytest.mark.parametrize("name", [DATASET, PARTITION, HISTORY])
def test_a_damaged_file_is_one_line_naming_it_and_its_rebuild(trained, tmp_path, name):
    ws = tmp_path / "ws"
    shutil.copytree(trained, ws)
    runs = _runs(ws)
    DAMAGE[name](ws / name)
    before = _snapshot(ws, name)
    for args in COMMANDS[name]:
        if args[0] == "compare":  # takes no -p
            proc = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=ws,
                                  env=_env(ws), capture_output=True, text=True, timeout=300)
        else:
            proc = _cli(ws, *args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, proc.stderr
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert lines[0].startswith(f"error: {name}: "), lines[0]
        assert lines[0].endswith(f"; rebuild it with `{REBUILD[name]}`"), lines[0]
    assert _snapshot(ws, name) == before  # no output touched, none half-written
    assert _runs(ws) == runs and all(status != "RUNNING" for _, status in runs)


@pytest.mark.parametrize("damage", [_truncate, _garbage, _edit])
@pytest.mark.parametrize("name", [DATASET, PARTITION, HISTORY])
def test_every_damage_of_every_file_is_its_readers_corrupt_file(trained, tmp_path, name,
                                                                 damage):
    from clusterfl.data.dataset import load_dataset
    from clusterfl.partition.base import load_partition

    read = {DATASET: load_dataset, PARTITION: load_partition, HISTORY: load_history_json}[name]
    path = tmp_path / Path(name).name
    shutil.copy(trained / name, path)
    read(path)  # the intact copy reads
    damage(path)
    with pytest.raises(CorruptFile) as caught:
        read(path)
    assert Path(caught.value.path) == path


def test_read_npz_checks_format_checksum_and_dtypes(tmp_path):
    path = tmp_path / "a.npz"
    atomic_write_npz(path, {"x": np.arange(3.0), "y": np.arange(3)})
    assert sorted(read_npz(path, {"x": "f", "y": "iu"}, "test file")) == ["x", "y"]
    with pytest.raises(CorruptFile, match=r"a\.npz: not a valid test file: 'y' has dtype int64"):
        read_npz(path, {"y": "f"}, "test file")
    with pytest.raises(CorruptFile, match=r"a\.npz: not a valid test file: no array 'z'"):
        read_npz(path, {"z": "f"}, "test file")
    np.savez(path, x=np.arange(3.0))
    with pytest.raises(CorruptFile, match=r"not a test file written by clusterfl \(no recorded"):
        read_npz(path, {}, "test file")
    np.savez(path, x=np.array([object()], dtype=object))
    with pytest.raises(CorruptFile, match=r"not a valid test file \(ValueError: .*pickle"):
        read_npz(path, {}, "test file")
    path.write_bytes(b"\x80\x04garbage")
    with pytest.raises(CorruptFile, match=r"a\.npz: not a valid test file \(not an \.npz "):
        read_npz(path, {}, "test file")
    with pytest.raises(CorruptFile, match=r"b\.npz: missing"):
        read_npz(tmp_path / "b.npz", {}, "test file")


def test_history_checksum_format_and_rounds(tmp_path):
    h = RunHistory(primary="test_acc")
    h.append({"round": 1, "test_acc": 0.5})
    h.append({"round": 2, "test_acc": 0.25})
    h.write(tmp_path)
    path = tmp_path / "history.json"
    assert load_history_json(path)["records"][1] == {"round": 2, "test_acc": 0.25}
    data = json.loads(path.read_text())
    data["records"][1]["round"] = 3
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptFile, match=r"`records` must hold rounds 1\.\.n in order"):
        load_history_json(path)
    data["records"][1]["round"] = 2
    data["records"][1]["test_acc"] = "high"
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptFile, match=r"non-empty list of numeric records"):
        load_history_json(path)
    del data["checksum"]  # hand-written histories carry none: format checks only
    data["records"][1]["test_acc"] = 0.75
    path.write_text(json.dumps(data))
    assert load_history_json(path)["records"][1]["test_acc"] == 0.75


def test_a_failed_cell_closes_its_open_seed_runs(tmp_path):
    from mlflow.tracking import MlflowClient

    from clusterfl.run.tracking import CellTracker

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    tracker = CellTracker("e", "exp/alg", {"a": 1}, {"suite": "s"}, uri=uri)
    done = tracker.seed_callback(0)
    done.on_round_end(1, {"round": 1, "test_acc": 0.5})
    done.on_run_end({})
    tracker.seed_callback(1).on_round_end(1, {"round": 1, "test_acc": 0.5})  # cut off
    tracker.finish({}, status="FAILED")
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("e").experiment_id])
    assert sorted((r.info.run_name, r.info.status) for r in runs) == [
        ("exp/alg", "FAILED"), ("exp/alg/seed0", "FINISHED"), ("exp/alg/seed1", "FAILED")]
