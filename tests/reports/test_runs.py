"""Reading seed histories: mean curves over seeds, last/best per seed, assignments, and the
primary metric (declared by the history, else test_acc, else test_mse)."""

import pytest

from clusterfl.core.errors import UserError
from clusterfl.reports import runs
from clusterfl.steps.metrics import ARI, TEST_ACC, TEST_MSE
from clusterfl.training.history import RunHistory
from tests.reports.histories import declare_primary, write_accuracy_run


def test_mean_curve_averages_seeds_and_keeps_clustering_metrics(tmp_path):
    write_accuracy_run(tmp_path, "e", "pfedkm_k2", 0, [0.5, 0.7], [[0, 1], [1, 1]], ari=[0, 1])
    write_accuracy_run(tmp_path, "e", "pfedkm_k2", 1, [0.7, 0.9], [[1, 1], [0, 0]],
                       ari=[0.5, 1.0])
    curve = runs.mean_curve(tmp_path, "e", "pfedkm_k2")
    assert curve.primary is TEST_ACC
    assert curve["test_acc"].tolist() == pytest.approx([60.0, 80.0])  # percent
    assert curve["test_acc_std"].tolist() == pytest.approx([10.0, 10.0])
    assert curve["train_loss"].tolist() == pytest.approx([2.0, 1.0])  # not a percent metric
    assert curve[ARI.name].tolist() == pytest.approx([0.25, 1.0])
    assert "kmeans_seconds" not in curve
    assert runs.assignments(tmp_path, "e", "pfedkm_k2").tolist() == [[0, 1], [1, 1]]  # seed 0
    write_accuracy_run(tmp_path, "e", "fedavg", 0, [0.5, 0.6])
    assert runs.assignments(tmp_path, "e", "fedavg") is None


def _regression_run(results, seed, mse):
    h = RunHistory()
    for r, m in enumerate(mse, start=1):
        h.append({"round": r, "train_mse": m + 1, "test_mse": m, "mixture_mae": 0.1 * r})
    h.write(results / "e" / "fedsoft" / f"seed{seed}")


def test_seed_rows_of_accuracy_and_mse_runs(tmp_path):
    _regression_run(tmp_path, 0, [5.0, 4.0, 4.5])
    write_accuracy_run(tmp_path, "e", "fedavg", 0, [0.5, 0.7, 0.6])
    rows = runs.seed_rows(tmp_path, "e", "fedsoft") + runs.seed_rows(tmp_path, "e", "fedavg")
    assert [(r["metric"], r["last"], r["best"], r["best_round"], r["last_loss"])
            for r in rows] == [("test_mse", 4.5, 4.0, 2, None), ("test_acc", 60.0, 70.0, 2, 1.0)]
    curve = runs.mean_curve(tmp_path, "e", "fedsoft")
    assert curve.primary is TEST_MSE
    assert curve["mixture_mae"].tolist() == pytest.approx([0.1, 0.2, 0.3])
    assert "test_acc_std" not in curve and curve["test_mse_std"].tolist() == [0.0, 0.0, 0.0]


def test_a_declared_primary_metric_is_the_one_summarised(tmp_path):
    _regression_run(tmp_path, 0, [5.0, 4.0])
    declare_primary(tmp_path / "e" / "fedsoft" / "seed0", "mixture_mae")
    [row] = runs.seed_rows(tmp_path, "e", "fedsoft")
    # mixture_mae is lower-is-better: best is round 1's 0.1, although test_mse is best later
    assert (row["metric"], row["last"], row["best"], row["best_round"]) == (
        "mixture_mae", 0.2, 0.1, 1)
    curve = runs.mean_curve(tmp_path, "e", "fedsoft")
    assert curve.primary.name == "mixture_mae" and "mixture_mae_std" in curve


def test_a_history_without_a_primary_metric_is_a_user_error(tmp_path):
    h = RunHistory()
    h.append({"round": 1, "ari": 1.0})
    h.write(tmp_path / "e" / "kmeans" / "seed0")
    with pytest.raises(UserError, match="no `primary` metric"):
        runs.seed_rows(tmp_path, "e", "kmeans")
    declare_primary(tmp_path / "e" / "kmeans" / "seed0", "not_a_metric")
    with pytest.raises(UserError, match="not_a_metric"):
        runs.read_cell(tmp_path, "e", "kmeans")


def test_cells_grouped_by_experiment_in_order():
    assert runs.by_experiment([("b", "x"), ("a", "y"), ("b", "z")]) == {"b": ["x", "z"],
                                                                     "a": ["y"]}


def test_histories_read_once_parses_each_file_once_and_rereads_a_rewritten_one(
        tmp_path, monkeypatch):
    write_accuracy_run(tmp_path, "e", "fedavg", 0, [0.5, 0.6])
    write_accuracy_run(tmp_path, "e", "fedavg", 1, [0.7, 0.8])
    parsed = []
    load = runs.load_history_json
    monkeypatch.setattr(runs, "load_history_json", lambda p: parsed.append(p) or load(p))
    with runs.histories_read_once():
        first = runs.read_cell(tmp_path, "e", "fedavg")
        assert runs.read_cell(tmp_path, "e", "fedavg") == first
        assert runs.mean_curve(tmp_path, "e", "fedavg")["test_acc"].tolist() == pytest.approx(
            [60.0, 70.0])
        assert len(parsed) == 2  # two seeds, each parsed once for three reads
        write_accuracy_run(tmp_path, "e", "fedavg", 1, [0.7, 0.9, 0.95])  # rewritten
        assert [len(h.records) for h in runs.read_cell(tmp_path, "e", "fedavg")] == [2, 3]
        assert len(parsed) == 3
        with pytest.raises(UserError, match=r"seed7.*history\.json"):  # missing: its error
            runs.read_seed(tmp_path / "e" / "fedavg" / "seed7")
        assert len(parsed) == 4
    runs.read_cell(tmp_path, "e", "fedavg")
    assert len(parsed) == 6  # outside it, every read parses
