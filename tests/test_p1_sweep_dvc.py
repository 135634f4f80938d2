"""A P1 sensitivity sweep through the real pipeline: two swept values (two experiments, as
in references.yaml `p1_sweeps`) are two DVC train stages, two MLflow parent runs, and one
sensitivity figure and row of metrics in the report."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.workspace import copy_pipeline, render

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
pytestmark = pytest.mark.slow
POINTS = {"sw_a": 0.01, "sw_b": 0.05}  # experiment -> personal lr


def _sh(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _write_sweep(ws: Path) -> None:
    """Two tiny validation experiments in P1's params, a sweep over them in its references,
    and a suite that trains exactly their pFedMe cells."""
    p1 = ws / "src/clusterfl/papers/p1"
    params = yaml.safe_load((p1 / "params.yaml").read_text())
    for name, plr in POINTS.items():
        params["experiments"][name] = {
            "partition": "p1_synthetic", "model": "mlr", "validation_fraction": 0.25,
            "training": {"rounds": 2, "lr": 0.005, "local_steps": 2, "batch_size": 20},
            "algorithm_options": {"personal_lr": plr}}
    (p1 / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    refs = yaml.safe_load((p1 / "references.yaml").read_text())
    refs["p1_sweeps"] = {"tiny": {"title": "personal lr", "variable": "personal lr",
                                  "algorithms": ["pfedme"],
                                  "values": [{"label": str(plr), "experiment": name}
                                             for name, plr in POINTS.items()]}}
    (p1 / "references.yaml").write_text(yaml.safe_dump(refs, sort_keys=False))
    root = yaml.safe_load((ROOT / "params.yaml").read_text())
    root["suite"].update(seeds=[0], training={},
                         grid=[{"experiments": list(POINTS), "algorithms": ["pfedme"]}])
    root["datasets"]["p1_synthetic"].update(clients_per_cluster=3, max_size=200)
    (ws / "params.yaml").write_text(yaml.safe_dump(root, sort_keys=False))


def test_a_two_point_sweep_is_two_runs_and_a_figure(tmp_path):
    ws = tmp_path / "repo"
    ws.mkdir()
    copy_pipeline(ws)
    _write_sweep(ws)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": f"{ws}:{ws / 'src'}", "CLUSTERFL_THREADS": "1",
           "MLFLOW_TRACKING_URI": f"sqlite:///{ws / 'mlflow.db'}"}
    render(ws, env, "default")
    _sh(["git", "init", "-q"], ws, env)
    _sh([str(BIN / "dvc"), "init", "-q"], ws, env)
    out = _sh([str(BIN / "dvc"), "repro"], ws, env)
    assert "Running stage 'train@sw_a-pfedme'" in out
    assert "Running stage 'train@sw_b-pfedme'" in out
    from mlflow.tracking import MlflowClient

    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("clusterfl")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    parents = [r for r in runs if r.data.tags.get("stage") == "train"
               and "mlflow.parentRunId" not in r.data.tags]
    assert sorted(r.data.params["experiment.name"] for r in parents) == ["sw_a", "sw_b"]
    assert {r.data.params["experiment.validation_fraction"] for r in parents} == {"0.25"}
    assert (ws / "reports/default/figures/p1_sensitivity_tiny.png").stat().st_size > 0
    metrics = json.loads((ws / "reports/default/metrics.json").read_text())
    values = metrics["p1_sensitivity"]["tiny"]["values"]["pfedme"]
    assert sorted(values) == ["0.01", "0.05"]
