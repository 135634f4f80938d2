"""What MLflow shows: a run's params are the values it used; the experiment is tagged for
the runs view; the report attaches each cell's files to its newest parent run and logs the
report to a run of its own."""

from pathlib import Path

from clusterfl.run import tracking
from clusterfl.run.config import load_params
from pipeline.train import cell_position, run_params

ROOT = Path(__file__).resolve().parents[1]


def test_params_are_the_resolved_values_not_the_raw_experiment_block():
    params = load_params(ROOT / "params.yaml")  # the default suite trains 30 rounds
    exp = params.experiment("p1_synthetic_mlr")
    alg = params.algorithm("fedavg", experiment="p1_synthetic_mlr")
    flat = tracking.flatten(run_params("default", exp, alg, [0, 1], {"scheme": "natural"}))
    assert flat["schedule.rounds"] == "30" and flat["schedule.clients_per_round"] == "all"
    assert not any(k.startswith("experiment.training") for k in flat)
    assert "schedule.epochs" not in flat  # unset (local_steps is the one set)
    assert not any("personal_lr" in k for k in flat)  # an algorithm option FedAvg lacks
    assert flat["experiment.model"] == "mlr" and flat["algorithm.name"] == "fedavg"


def test_model_free_runs_log_only_the_schedule_they_use():
    params = load_params(ROOT / "params.yaml")
    exp = params.experiment("p4_fig1_n100")  # P4's linear problem: no model, no lr
    assert exp.model is None
    alg = params.algorithm("pfl_tc", experiment="p4_fig1_n100")
    flat = tracking.flatten(run_params("default", exp, alg, [0], {}))
    assert sorted(k for k in flat if k.startswith("schedule.")) == [
        "schedule.clients_per_round", "schedule.rounds"]


def test_publish_attaches_files_to_the_newest_parent_run(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tags = {"stage": "train", "suite": "s"}
    old = tracking.CellTracker("x", "e/a", {}, tags, uri=uri)
    old.finish({})
    new = tracking.CellTracker("x", "e/a", {}, tags, uri=uri)
    new.finish({})
    figure = tmp_path / "e_curves.png"
    figure.write_bytes(b"png")
    page = tmp_path / "index.html"
    page.write_text("<html></html>")
    run_id, missing = tracking.publish_report(
        "x", "s", {("e", "a"): [(figure, "figures")], ("e", "b"): [(figure, "figures")]},
        [(page, "")], {"git_commit": "abc"}, uri=uri)
    client = new.client
    assert missing == ["e/b"]
    assert [f.path for f in client.list_artifacts(new.parent.info.run_id, "figures")] == [
        "figures/e_curves.png"]
    assert client.list_artifacts(old.parent.info.run_id) == []
    report = client.get_run(run_id)
    assert report.info.run_name == "report/s" and report.data.tags["stage"] == "report"
    assert [f.path for f in client.list_artifacts(run_id)] == ["index.html"]
    experiment = client.get_experiment_by_name("x")
    assert experiment.tags[tracking.EXPERIMENT_KIND[0]] == "custom_model_development"
    assert tracking.runs_page_url("http://h:1/", experiment.experiment_id).endswith(
        f"/#/experiments/{experiment.experiment_id}/runs?workflowType=machine_learning")


def test_cell_position_counts_the_suite_cells_in_file_order():
    cells = [("p1", "e", "a"), ("p1", "e", "b"), ("p2", "f", "a")]
    assert cell_position(cells, "e", "b") == (2, 3)
    assert cell_position(cells, "f", "a") == (3, 3)
    assert cell_position(cells, "f", "b") is None
