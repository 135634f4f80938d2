"""The real pipeline (dvc.yaml + the params files + CLI) end to end, shrunk to seconds.

What DVC runs is exactly the active suite's stages; a second run is a no-op; one changed
hyperparameter re-runs only its cells; a change anywhere in the code a cell imports makes
its cell out of date; another suite runs beside the default one without touching it.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.workspace import copy_pipeline

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
pytestmark = pytest.mark.slow

CELLS = [("p1", "p1_synthetic_mlr", "fedavg"), ("p1", "p1_synthetic_mlr", "pfedkm_k2"),
         ("p1", "p1_mnist_subset_dnn", "fedavg"), ("p1", "p1_mnist_subset_dnn", "pfedkm_k2"),
         ("p2", "p2_synth_1090", "fedsoft"), ("p2", "p2_synth_1090", "fedem")]


def _sh(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _cells(cells: list[tuple[str, str, str]]) -> dict:
    return {f"{e}-{a}": {"paper": p, "experiment": e, "algorithm": a} for p, e, a in cells}


def _shrink(params: dict) -> dict:
    params["suite"].update(seeds=[0, 1], training={"rounds": 3}, cells=_cells(CELLS),
                           datasets=["p1_synthetic", "mnist_subset", "p2_synthetic"],
                           partitions=["p1_synthetic", "p1_mnist_subset", "p2_1090"])
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=3, max_size=200)
    params["partitions"]["p1_mnist_subset"]["num_clients"] = 6
    params["datasets"]["p2_synthetic"].update(samples_per_distribution=600,
                                              test_per_distribution=100)
    for entry in params["partitions"].values():
        if entry["dataset"] == "p2_synthetic":
            entry.update(num_clients=6, size_range=[10, 20], holdout_size=100)
    return params


def _ran(output: str) -> set[str]:
    """Stage names DVC ran, without the `suites/<name>/dvc.yaml:` prefix of other suites."""
    return {name.rsplit(":", 1)[-1] for name in re.findall(r"Running stage '([^']+)'", output)}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("repo")
    copy_pipeline(ws)
    params = _shrink(yaml.safe_load((ROOT / "params.yaml").read_text()))
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    other = yaml.safe_load((ROOT / "suites/paper/params.yaml").read_text())
    other["suite"].update(name="other", file="suites/other/params.yaml", seeds=[0],
                          training={"rounds": 2}, datasets=["p1_synthetic"],
                          partitions=["p1_synthetic"],
                          cells=_cells([("p1", "p1_synthetic_mlr", "fedavg")]))
    (ws / "suites/other").mkdir()
    (ws / "suites/other/dvc.yaml").symlink_to("../../dvc.yaml")
    (ws / "suites/other/params.yaml").write_text(yaml.safe_dump(other, sort_keys=False))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": f"{ws}:{ws / 'src'}", "CLUSTERFL_THREADS": "1",
           "MLFLOW_TRACKING_URI": f"sqlite:///{ws / 'mlflow.db'}"}
    _sh(["git", "init", "-q"], ws, env)
    _sh([str(BIN / "dvc"), "init", "-q"], ws, env)
    first = _sh([str(BIN / "dvc"), "repro"], ws, env)
    return ws, env, first


def test_repro_runs_exactly_the_suite_and_writes_reports_and_mlflow_runs(workspace):
    ws, env, first = workspace
    expected = ({f"download@{d}" for d in ("p1_synthetic", "mnist_subset", "p2_synthetic")}
                | {f"partition@{p}" for p in ("p1_synthetic", "p1_mnist_subset", "p2_1090")}
                | {f"train@{e}-{a}" for _, e, a in CELLS} | {"report"})
    assert _ran(first) == expected
    assert not (ws / "results/other").exists()
    table = (ws / "reports/default/tables/results.md").read_text()
    for _, exp, alg in CELLS:
        assert re.search(rf"\| {exp} \| {alg} \| .* \| 2 \|", table), (exp, alg)
    metrics = _sh([str(BIN / "dvc"), "metrics", "show"], ws, env)
    assert "p1_synthetic_mlr.pfedkm_k2.last_acc" in metrics
    assert "p2_synth_1090.fedsoft.last_mse" in metrics
    assert any((ws / "reports/default/figures").glob("*.png"))
    from mlflow.tracking import MlflowClient

    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("clusterfl")
    runs = client.search_runs([exp.experiment_id], max_results=200)
    trained = [r for r in runs if r.data.tags.get("stage") == "train"]
    parents = [r for r in trained if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in trained if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 6 and len(children) == 12  # 6 cells, 2 seeds each
    assert [r.info.run_name for r in runs if r.data.tags.get("stage") == "report"] == [
        "report/default"]
    assert "<table>" in (ws / "reports/default/index.html").read_text()  # a DVC out too
    p1_child = next(r for r in children if r.data.tags["experiment"].startswith("p1_"))
    curve = client.get_metric_history(p1_child.info.run_id, "test_acc")
    assert [m.step for m in curve] == [1, 2, 3]
    assert parents[0].data.tags["suite"] == "default"


def test_second_repro_does_nothing_and_one_hyperparameter_reruns_its_cells(workspace):
    ws, env, _ = workspace
    assert "Data and pipelines are up to date" in _sh([str(BIN / "dvc"), "repro"], ws, env)
    paper = ws / "src/clusterfl/papers/p1/params.yaml"
    text = paper.read_text()
    paper.write_text(text.replace("server_lr: 1.0", "server_lr: 0.5"))
    try:
        out = _sh([str(BIN / "dvc"), "repro"], ws, env)
    finally:
        paper.write_text(text)
    assert _ran(out) == {"train@p1_synthetic_mlr-fedavg", "train@p1_mnist_subset_dnn-fedavg",
                         "report"}
    _sh([str(BIN / "dvc"), "repro"], ws, env)  # back to the original numbers


def test_a_change_in_code_a_cell_imports_makes_every_cell_out_of_date(workspace):
    ws, env, _ = workspace
    module = ws / "src/clusterfl/partition/views.py"
    text = module.read_text()
    module.write_text(text + "\n# touched\n")
    try:
        status = _sh([str(BIN / "dvc"), "status", "dvc.yaml"], ws, env)  # the default suite
    finally:
        module.write_text(text)
    stale = set(re.findall(r"^(train@\S+):", status, flags=re.M))
    assert stale == {f"train@{e}-{a}" for _, e, a in CELLS}
    assert "Data and pipelines are up to date" in _sh([str(BIN / "dvc"), "status", "dvc.yaml"],
                                                      ws, env)


def test_another_suite_runs_beside_the_default_without_touching_it(workspace):
    ws, env, _ = workspace
    before = {p: p.read_bytes() for p in (ws / "results/default").rglob("history.json")}
    out = _sh([str(BIN / "dvc"), "repro", "suites/other/dvc.yaml"], ws, env)
    assert _ran(out) == {"download@p1_synthetic", "partition@p1_synthetic",
                         "train@p1_synthetic_mlr-fedavg", "report"}
    assert (ws / "results/other/p1_synthetic_mlr/fedavg/seed0/history.json").exists()
    assert (ws / "reports/other/tables/results.md").exists()
    after = {p: p.read_bytes() for p in (ws / "results/default").rglob("history.json")}
    assert after == before
    assert "Data and pipelines are up to date" in _sh([str(BIN / "dvc"), "repro"], ws, env)
