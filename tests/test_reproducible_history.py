"""Timings live apart from metrics: two trainings of one seed write byte-identical
`history.json`, `history.csv` and `summary.json`; the wall-clock k-means seconds go to
`timings.json` (and still reach MLflow and the figures)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterfl.training.history import RunHistory, read_history
from tests.workspace import cli_in_process

ROOT = Path(__file__).resolve().parents[1]
CELL = "results/default/p1_synthetic_mlr/pfedkm_k4"
LOGS = "logs/default/p1_synthetic_mlr/pfedkm_k4"  # what differs per run: outside the out


def test_append_keeps_wall_clock_values_apart(tmp_path):
    h = RunHistory(primary="test_acc")
    h.append({"round": 1, "test_acc": 0.5, "kmeans_seconds": 0.25, "ari": 1.0})
    assert h.records == [{"round": 1, "test_acc": 0.5, "ari": 1.0}]
    assert h.timings == [{"round": 1, "kmeans_seconds": 0.25}]
    assert h.with_timings() == [{"round": 1, "test_acc": 0.5, "ari": 1.0, "kmeans_seconds": 0.25}]
    h.write(tmp_path)
    assert "kmeans_seconds" not in (tmp_path / "history.json").read_text()
    assert read_history(tmp_path).timings == h.timings


@pytest.mark.slow
def test_two_trainings_of_one_seed_write_the_same_bytes(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=[0], training={"rounds": 3})
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=2, max_size=120)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT}/src", "CLUSTERFL_THREADS": "1"}
    files = ("seed0/history.json", "seed0/history.csv", "summary.json")
    runs = []
    for args in (["download", "p1_synthetic"], ["partition", "p1_synthetic"]):
        cli_in_process(tmp_path, *args)  # the data, not under test
    for _ in range(2):  # two trainings, each in a process of its own
        args = ["train", "p1_synthetic_mlr", "pfedkm_k4", "--no-track"]
        proc = subprocess.run([sys.executable, "-m", "pipeline.cli", *args, "-p", "params.yaml"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        cell = tmp_path / CELL
        runs.append({f: (cell / f).read_bytes() for f in files}
                    | {"timings": (tmp_path / LOGS / "seed0/timings.json").read_bytes()})
    first, second = runs
    assert all(first[f] == second[f] for f in files)
    timings = json.loads(first["timings"])["records"]
    assert [t["round"] for t in timings] == [1, 2, 3]
    assert all(set(t) == {"round", "kmeans_seconds", "round_seconds"}
               and t["kmeans_seconds"] > 0 and t["round_seconds"] > 0 for t in timings)
    assert b"kmeans_seconds" not in first["seed0/history.json"] + first["summary.json"]


def _capability(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if env_value is not None:
        env["ATEN_CPU_CAPABILITY"] = env_value
    code = ("import clusterfl, torch; torch.ones(2).sum(); "
            "print(torch.backends.cpu.get_cpu_capability())")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_every_avx2_machine_runs_torchs_avx2_kernels_unless_the_user_chose():
    """`clusterfl` pins PyTorch's CPU kernels to AVX2 (AVX-512 ones add in another order:
    other last bits, another dvc.lock); a value the user set is kept."""
    cpuinfo = Path("/proc/cpuinfo")
    if not (cpuinfo.exists() and "avx2" in cpuinfo.read_text().split()):
        pytest.skip("this CPU has no AVX2: PyTorch's own choice stands")
    assert _capability(None) == "AVX2"
    assert _capability("default") == "DEFAULT"
