from clusterfl.training.history import RunHistory, read_history


def _history() -> RunHistory:
    h = RunHistory()
    for r, acc in enumerate([0.5, 0.8, 0.7], start=1):
        h.append({"round": r, "test_acc": acc, "test_loss": 1.0 / r}, {"assignment": [r, r]})
    return h


def test_summary_reports_last_best_and_best_round():
    s = _history().summary()
    assert s["last_test_acc"] == 0.7
    assert s["best_test_acc"] == 0.8
    assert s["best_round"] == 2
    assert s["rounds"] == 3


def test_write_and_read_round_trip(tmp_path):
    h = _history()
    h.write(tmp_path)
    back = read_history(tmp_path)
    assert back.records == h.records
    assert back.arrays == {"assignment": [[1, 1], [2, 2], [3, 3]]}
    assert (tmp_path / "history.csv").read_text().splitlines()[0] == "round,test_acc,test_loss"


def test_regression_runs_are_summarised_by_the_lowest_test_mse():
    h = RunHistory()
    for r, mse in enumerate([9.0, 2.0, 3.0], start=1):
        h.append({"round": r, "test_mse": mse, "train_mse": mse / 2})
    s = h.summary()
    assert s["best_test_mse"] == 2.0  # the minimum, not the maximum
    assert s["best_round"] == 2
    assert s["last_test_mse"] == 3.0
    assert "best_test_acc" not in s


def test_summary_of_a_named_metric_and_of_a_run_without_test_metric():
    h = _history()
    assert h.summary("test_loss")["best_test_loss"] == 1.0 / 3  # a loss: lower is better
    bare = RunHistory()
    bare.append({"round": 1, "train_mse": 1.0})
    assert bare.summary() == {"last_train_mse": 1.0, "rounds": 1}
