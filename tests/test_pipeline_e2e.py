"""The real pipeline (rendered dvc.yaml + the params files + CLI) end to end, shrunk to
seconds, with real DVC.

What DVC runs is exactly the active suite's stages; a second run is a no-op; code deps
follow imports (a P5 change leaves every P1 cell up to date, a report change re-runs only the
report, a shared-engine change every cell); outputs are the same on every run, also after a
seed trained by hand; `dvc exp run -S`, `dvc plots` and a DVC remote round trip work (one
changed hyperparameter re-runs only its cells); another suite runs beside the default one
without touching it.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.workspace import cli_in_process, copy_pipeline, grid, render

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
pytestmark = pytest.mark.slow

# two papers, so that a change to one can leave the other's cells up to date
CELLS = [("p1", "p1_synthetic_mlr", "fedavg"), ("p1", "p1_synthetic_mlr", "pfedkm_k2"),
         ("p5", "p5_small_noniid", "fedcgds")]
TRAIN = {f"train@{e}-{a}" for _, e, a in CELLS}


def _sh(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _dvc(ws: Path, env: dict[str, str], *args: str) -> str:
    return _sh([str(BIN / "dvc"), *args], ws, env)


def _dvc_json(ws: Path, env: dict[str, str], *args: str) -> object:
    """A DVC command's --json answer (stdout alone: DVC writes warnings to stderr)."""
    proc = subprocess.run([str(BIN / "dvc"), *args, "--json"], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _shrink(params: dict) -> dict:
    params["suite"].update(seeds=[0, 1], training={"rounds": 3},
                           grid=grid([(e, a) for _, e, a in CELLS]))
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=3, max_size=200)
    return params


def _ran(output: str) -> set[str]:
    """Stage names DVC ran, without the `suites/<name>/dvc.yaml:` prefix of other suites."""
    return {name.rsplit(":", 1)[-1] for name in re.findall(r"Running stage '([^']+)'", output)}


def _stale(ws: Path, env: dict[str, str]) -> set[str]:
    """The default suite's stages `dvc status` lists as changed."""
    return set(re.findall(r"^(\S+):\s*$", _dvc(ws, env, "status", "dvc.yaml"), flags=re.M))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("repo")
    copy_pipeline(ws)
    (ws / ".gitignore").write_text("mlflow.db\n/logs/\n/checkpoints/\n__pycache__/\n")
    params = _shrink(yaml.safe_load((ROOT / "params.yaml").read_text()))
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    other = {"name": "other", "seeds": [0], "training": {"rounds": 2},
             "grid": grid([("p1_synthetic_mlr", "fedavg")])}
    (ws / "suites/other").mkdir()
    (ws / "suites/other/params.yaml").write_text(yaml.safe_dump({"suite": other}))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": f"{ws}:{ws / 'src'}", "CLUSTERFL_THREADS": "1",
           "MLFLOW_TRACKING_URI": f"sqlite:///{ws / 'mlflow.db'}"}
    render(ws, env, "default", "other")
    _sh(["git", "init", "-q"], ws, env)
    _dvc(ws, env, "init", "-q")
    first = _dvc(ws, env, "repro")
    return ws, env, first


def test_repro_runs_exactly_the_suite_and_writes_reports_and_mlflow_runs(workspace):
    ws, env, first = workspace
    expected = ({f"download@{d}" for d in ("p1_synthetic", "p5_fedc_small")}
                | {f"partition@{p}" for p in ("p1_synthetic", "p5_small_noniid")}
                | TRAIN | {"report", "report_p1", "report_p5"})  # two papers: one report each
    assert _ran(first) == expected
    assert not (ws / "results/other").exists()
    table = (ws / "reports/default/tables/results.md").read_text()
    for _, exp, alg in CELLS:
        assert re.search(rf"\| {exp} \| {alg} \| .* \| 2 \|", table), (exp, alg)
    metrics = _dvc(ws, env, "metrics", "show")
    assert "p1_synthetic_mlr.pfedkm_k2.last_acc" in metrics
    assert "p5_small_noniid.fedcgds.last_clustering_accuracy" in metrics
    assert any((ws / "reports/default/figures").glob("*.png"))
    from mlflow.tracking import MlflowClient

    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("clusterfl")
    runs = client.search_runs([exp.experiment_id], max_results=200)
    trained = [r for r in runs if r.data.tags.get("stage") == "train"]
    parents = [r for r in trained if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in trained if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 3 and len(children) == 6  # 3 cells, 2 seeds each
    assert sorted(r.info.run_name for r in runs if r.data.tags.get("stage") == "report") == [
        "report/default", "report/default/p1", "report/default/p5"]
    assert "<table>" in (ws / "reports/default/index.html").read_text()  # a DVC out too
    p1_child = next(r for r in children if r.data.tags["experiment"].startswith("p1_"))
    curve = client.get_metric_history(p1_child.info.run_id, "test_acc")
    assert [m.step for m in curve] == [1, 2, 3]
    assert parents[0].data.tags["suite"] == "default"


def test_what_differs_per_run_lives_outside_the_outs(workspace):
    """Timings and tracking records (git commit, attempt id) are in logs/, not in the DVC
    outs; they still reach the report's costs page, which is not an out either."""
    ws, _, _ = workspace
    cell = Path("p1_synthetic_mlr/pfedkm_k2")
    assert sorted(p.name for p in (ws / "results/default" / cell).rglob("*.json")) == [
        "history.json", "history.json", "summary.json"]
    logs = ws / "logs/default" / cell
    assert (logs / "tracking.json").exists()
    timings = json.loads((logs / "seed0/timings.json").read_text())["records"]
    assert [t["round"] for t in timings] == [1, 2, 3]
    assert all(t["round_seconds"] > 0 and t["kmeans_seconds"] > 0 for t in timings)
    costs = (ws / "reports/default/costs.md").read_text()
    assert "p1_synthetic_mlr/pfedkm_k2" in costs and "kmeans_seconds (mean)" in costs
    lock = (ws / "dvc.lock").read_text()
    assert "costs.md" not in lock and "timings.json" not in lock and "logs/" not in lock


def test_outputs_are_the_same_on_every_run(workspace):
    """A second run does nothing; training a cell again and rebuilding the report gives
    byte-identical outs, so the lock does not change (`git checkout dvc.lock` and a fresh
    clone's run stay clean)."""
    ws, env, _ = workspace
    assert "Data and pipelines are up to date" in _dvc(ws, env, "repro")
    lock = (ws / "dvc.lock").read_bytes()
    out = _dvc(ws, env, "repro", "-f", "-s", "train@p1_synthetic_mlr-fedavg")
    assert _ran(out) == {"train@p1_synthetic_mlr-fedavg"}
    _dvc(ws, env, "repro", "-f", "-s", "report")
    assert (ws / "dvc.lock").read_bytes() == lock
    assert "Data and pipelines are up to date" in _dvc(ws, env, "repro")


def test_after_dvc_repro_a_seed_trained_by_hand_leaves_plan_nothing_to_train(workspace):
    """docs/operations.md's `clusterfl train <experiment> <algorithm> --seed 0` on a cell that
    `dvc repro` trained: the other seed stays, every file of the cell is the same bytes, and
    `plan` (DVC's status) has no cell to train."""
    ws, env, _ = workspace
    cell = ws / "results/default/p1_synthetic_mlr/fedavg"

    def files() -> dict[str, bytes]:
        return {p.relative_to(cell).as_posix(): p.read_bytes()
                for p in sorted(cell.rglob("*")) if p.is_file()}

    whole = files()
    assert "seed1/history.json" in whole
    cli_in_process(ws, "train", "p1_synthetic_mlr", "fedavg", "--seed", "0", "--no-track",
                   params=None, env={"CLUSTERFL_THREADS": "1"})
    proc = subprocess.run([str(BIN / "clusterfl"), "plan", "--json", "--no-probe"], cwd=ws,
                          env={k: v for k, v in env.items() if k != "CLUSTERFL_JOBS"},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["cells"] == [], plan["cells"]
    assert files() == whole


@pytest.mark.parametrize(("touched", "stale"), [
    # a paper's training code: its own cells and the report, never another paper's cells
    ("src/clusterfl/papers/p5/training/onmf.py",
     {"train@p5_small_noniid-fedcgds", "report", "report_p5"}),
    # report code: the reports that use it alone
    ("src/clusterfl/papers/p1/report/protocol.py", {"report", "report_p1"}),
])
def test_code_deps_follow_imports(workspace, touched, stale):
    ws, env, _ = workspace
    module = ws / touched
    text = module.read_text()
    module.write_text(text + "\n# touched\n")
    try:
        assert _stale(ws, env) == stale
    finally:
        module.write_text(text)
    assert _stale(ws, env) == set()


def test_a_change_in_the_shared_engine_makes_every_cell_out_of_date(workspace):
    ws, env, _ = workspace
    module = ws / "src/clusterfl/engine/base.py"
    text = module.read_text()
    module.write_text(text + "\n# touched\n")
    try:
        stale = _stale(ws, env)
    finally:
        module.write_text(text)
    assert {s for s in stale if s.startswith("train@")} == TRAIN


def test_another_suite_runs_beside_the_default_without_touching_it(workspace):
    ws, env, _ = workspace
    before = {p: p.read_bytes() for p in (ws / "results/default").rglob("history.json")}
    out = _dvc(ws, env, "repro", "suites/other/dvc.yaml")
    assert _ran(out) == {"download@p1_synthetic", "partition@p1_synthetic",
                         "train@p1_synthetic_mlr-fedavg", "report"}
    assert (ws / "results/other/p1_synthetic_mlr/fedavg/seed0/history.json").exists()
    assert (ws / "reports/other/tables/results.md").exists()
    after = {p: p.read_bytes() for p in (ws / "results/default").rglob("history.json")}
    assert after == before
    assert "Data and pipelines are up to date" in _dvc(ws, env, "repro")


def test_push_then_a_fresh_clone_pulls_and_has_nothing_to_run(workspace, tmp_path):
    ws, env, _ = workspace
    _dvc(ws, env, "remote", "add", "-d", "store", str(tmp_path / "store"))
    _dvc(ws, env, "push")
    _sh(["git", "add", "-A"], ws, env)
    _sh(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "run"], ws, env)
    clone = tmp_path / "clone"
    _sh(["git", "clone", "-q", str(ws), str(clone)], tmp_path, env)
    clone_env = {**env, "PYTHONPATH": f"{clone}:{clone / 'src'}"}
    _dvc(clone, clone_env, "pull", "dvc.yaml")  # the suite's pipeline: others never ran
    assert (clone / "results/default/p1_synthetic_mlr/fedavg/seed0/history.json").read_bytes() \
        == (ws / "results/default/p1_synthetic_mlr/fedavg/seed0/history.json").read_bytes()
    assert "Data and pipelines are up to date" in _dvc(clone, clone_env, "repro")


def test_exp_run_reruns_only_the_changed_cells_and_plots_compare(workspace):
    """One changed hyperparameter re-runs only its cells: `dvc exp run -S` (the last test
    here: it leaves the experiment applied) re-runs the cell whose params changed and the
    report; `exp show` lists it; `plots diff` compares it with HEAD."""
    ws, env, _ = workspace
    out = _dvc(ws, env, "exp", "run", "-n", "lr05", "-S",
               "src/clusterfl/papers/p1/params.yaml:algorithms.fedavg.server_lr=0.5")
    assert _ran(out) == {"train@p1_synthetic_mlr-fedavg", "report", "report_p1"}
    shown = json.dumps(_dvc_json(ws, env, "exp", "show"))
    assert "lr05" in shown and "server_lr" in shown and "last_acc" in shown
    plots = _dvc_json(ws, env, "plots", "diff", "HEAD")["data"]  # one entry per curve file
    assert "reports/default/curves/test_acc/p1_synthetic_mlr__fedavg.csv" in plots, list(plots)
    assert "reports/default/curves/clustering_accuracy/p5_small_noniid__fedcgds.csv" in plots
