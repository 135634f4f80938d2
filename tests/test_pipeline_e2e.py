"""The real pipeline (dvc.yaml + params.yaml + CLI) end to end, shrunk to seconds."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
pytestmark = pytest.mark.slow


def _sh(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _shrink(params: dict) -> dict:
    params["suites"]["default"]["seeds"] = [0, 1]
    params["suites"]["default"]["training"] = {"rounds": 3}
    params["datasets"]["p1_synthetic"]["clients_per_cluster"] = 3
    params["datasets"]["p1_synthetic"]["max_size"] = 200
    params["partitions"]["p1_mnist_subset"]["num_clients"] = 6
    params["grid"]["p1"] = {
        "experiments": ["p1_synthetic_mlr", "p1_mnist_subset_mlr", "p1_mnist_subset_dnn"],
        "algorithms": ["fedavg", "pfedkm_k2"],
    }
    # P2: 6 clients of 10-20 samples; p2_synth_1090 runs fedsoft and fedem (the default suite
    # skips its ifca_p2 cell), p2_synth_3070 is a paper-suite cell (skipped here)
    params["datasets"]["p2_synthetic"].update(samples_per_distribution=600,
                                              test_per_distribution=100)
    for entry in params["partitions"].values():
        if entry["dataset"] == "p2_synthetic":
            entry.update(num_clients=6, size_range=[10, 20], holdout_size=100)
    params["grid"]["p2"] = {"experiments": ["p2_synth_1090", "p2_synth_3070"],
                            "algorithms": ["fedsoft", "fedem", "ifca_p2"]}
    params["grid"]["p2_sweeps"] = {"experiments": ["p2_synth_random_s0_1"],  # paper suite
                                   "algorithms": ["fedsoft"]}
    return params


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("repo")
    for name in ("dvc.yaml", "pyproject.toml"):
        shutil.copy(ROOT / name, ws / name)
    for name in ("src", "pipeline"):
        shutil.copytree(ROOT / name, ws / name, ignore=shutil.ignore_patterns("__pycache__"))
    params = _shrink(yaml.safe_load((ROOT / "params.yaml").read_text()))
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": f"{ws}:{ws / 'src'}", "CLUSTERFL_THREADS": "1",
           "MLFLOW_TRACKING_URI": f"sqlite:///{ws / 'mlflow.db'}"}
    _sh(["git", "init", "-q"], ws, env)
    _sh([str(BIN / "dvc"), "init", "-q"], ws, env)
    first = _sh([str(BIN / "dvc"), "repro"], ws, env)
    return ws, env, first


def test_repro_writes_table_figure_metrics_and_mlflow_runs(workspace):
    ws, env, _ = workspace
    table = (ws / "reports/tables/results.md").read_text()
    for exp in ("p1_synthetic_mlr", "p1_mnist_subset_dnn"):
        for alg in ("fedavg", "pfedkm_k2"):
            assert re.search(rf"\| {exp} \| {alg} \| .* \| 2 \|", table), (exp, alg)
    assert "p1_mnist_subset_mlr" not in table  # a paper-suite cell, skipped by default
    for alg in ("fedsoft", "fedem"):
        assert re.search(rf"\| p2_synth_1090 \| {alg} \| test MSE \| .* \| 2 \|", table), alg
    assert "ifca_p2" not in table and "p2_synth_3070" not in table  # suite skip, paper suite
    p2 = (ws / "reports/tables/p2_tables.md").read_text()
    assert "| theta0 |" in p2 and "Hungarian matching): seed 0: theta0 → c" in p2
    assert (ws / "reports/figures/convergence.png").read_bytes()[:4] == b"\x89PNG"
    metrics = _sh([str(BIN / "dvc"), "metrics", "show"], ws, env)
    assert "p1_synthetic_mlr.pfedkm_k2.last_acc" in metrics
    assert "p2_synth_1090.fedsoft.last_mse" in metrics
    assert "p2_synth_1090.fedem.mixture_mae" in metrics
    for figure in ("p1_synthetic_mlr_curves", "p1_synthetic_mlr_clustering",
                   "p1_synthetic_mlr_assignments", "p2_synth_1090_curves",
                   "p2_synth_1090_importance", "p2_synth_1090_mixture_mae"):
        assert (ws / f"reports/figures/{figure}.png").exists(), figure
    from mlflow.tracking import MlflowClient

    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("clusterfl")
    runs = client.search_runs([exp.experiment_id], max_results=200)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 6 and len(children) == 12  # P1: 4 cells, P2: 2 cells; 2 seeds
    p1_child = next(r for r in children if r.data.tags["experiment"].startswith("p1_"))
    curve = client.get_metric_history(p1_child.info.run_id, "test_acc")
    assert [m.step for m in curve] == [1, 2, 3]
    assert parents[0].data.tags["stage"] == "train" and len(parents[0].data.tags["git_commit"])


def test_second_repro_does_nothing_and_one_hyperparameter_reruns_its_cells(workspace):
    ws, env, _ = workspace
    assert "Data and pipelines are up to date" in _sh([str(BIN / "dvc"), "repro"], ws, env)
    params = yaml.safe_load((ws / "params.yaml").read_text())
    params["algorithms"]["fedavg"]["server_lr"] = 0.5
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    out = _sh([str(BIN / "dvc"), "repro"], ws, env)
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert ran == {"train_p1@p1_synthetic_mlr-fedavg", "train_p1@p1_mnist_subset_mlr-fedavg",
                   "train_p1@p1_mnist_subset_dnn-fedavg", "report"}
