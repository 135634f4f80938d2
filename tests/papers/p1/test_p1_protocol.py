"""P1's reported protocol (last round, best round, mean of the last 10) on hand histories,
and the table the report shows for a pFedMe cell's four models."""

import pytest

from clusterfl.papers.p1.report.protocol import Protocol, protocol, protocol_markdown, protocol_rows
from clusterfl.training.history import RunHistory

SERIES = [0.1, 0.5, 0.9, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.6]


def test_last_best_and_mean_of_the_last_ten_by_hand():
    # last 10: 0.9 .. 0.6 -> (0.9+0.2+0.3+0.4+0.5+0.6+0.7+0.8+0.9+0.6)/10 = 0.59
    assert protocol(SERIES) == Protocol(last=0.6, best=0.9, best_round=3,
                                        mean_last=pytest.approx(0.59))
    assert protocol(SERIES, lower_is_better=True).best_round == 1
    assert protocol([2.0, 4.0], window=10).mean_last == 3.0  # fewer rounds than the window
    with pytest.raises(ValueError):
        protocol([])


def test_protocol_table_for_a_cell_recording_the_four_models(tmp_path):
    exp, alg = "p1_mnist_subset_dnn", "pfedme"
    for seed, shift in enumerate((0.0, 0.1)):
        h = RunHistory(primary="test_acc")
        for r, acc in enumerate(SERIES, start=1):
            h.append({"round": r, "test_acc": acc, "theta_test_acc": acc,
                      "local_w_test_acc": acc - 0.1 + shift, "global_test_acc": 0.5,
                      "global_mixed_test_acc": 0.25})
        h.write(tmp_path / exp / alg / f"seed{seed}")
    rows = protocol_rows(tmp_path, exp, alg)
    assert [(r["view"], r["seed"]) for r in rows] == [
        (v, s) for s in (0, 1) for v in ("theta", "local_w", "global", "global_mixed")]
    local = [r for r in rows if r["view"] == "local_w"]
    assert [r["last"] for r in local] == pytest.approx([50.0, 60.0])
    assert [r["mean_last"] for r in local] == pytest.approx([49.0, 59.0])
    assert [r["best_round"] for r in local] == [3, 3]
    lines = protocol_markdown(rows).splitlines()
    assert lines[0] == ("| experiment | algorithm | model | last round | best round | "
                        "mean of last 10 | seeds |")
    assert lines[3] == (f"| {exp} | {alg} | local w_i after local training | 55.00 ± 5.00 "
                        "| 85.00 ± 5.00 (r 3) | 54.00 ± 5.00 | 2 |")


def test_a_cell_without_views_gets_one_row_of_its_primary_metric(tmp_path):
    exp, alg = "p1f_paper", "ifca_k2"
    h = RunHistory(primary="test_acc")
    for r, acc in enumerate(SERIES, start=1):
        h.append({"round": r, "test_acc": acc, "train_loss": 1.0})
    h.write(tmp_path / exp / alg / "seed0")
    rows = protocol_rows(tmp_path, exp, alg)
    assert [(r["view"], r["last"], r["best"], r["best_round"]) for r in rows] == [
        ("own", pytest.approx(60.0), pytest.approx(90.0), 3)]
    assert protocol_markdown(rows).splitlines()[2] == (
        f"| {exp} | {alg} | its evaluated model (no views recorded) | 60.00 ± 0.00 "
        "| 90.00 ± 0.00 (r 3) | 59.00 ± 0.00 | 1 |")
