"""P2 report: matched center x distribution tables, baselines, importance alignment, by exact
numbers; and the summary table with regression and classification cells side by side."""

import json

import numpy as np
import pandas as pd
import pytest

from clusterfl import figures_p2
from clusterfl import report as rep
from clusterfl import report_p2 as p2
from clusterfl.history import RunHistory


def _write(results, alg, seed, holdout, mse, mae, importance):
    h = RunHistory()
    for r, (m, e) in enumerate(zip(mse, mae, strict=True), start=1):
        record = {"round": r, "train_mse": m + 1, "test_mse": m}
        arrays = None
        if holdout is not None:
            record |= {"local_train_mse": m - 1, "mixture_mae": e}
            match = p2.match_centers(np.asarray(holdout), lower_is_better=True)
            arrays = {"holdout_mse": holdout, "center_of_distribution": match.tolist(),
                      "importance": importance}
        h.append(record, arrays)
    h.write(results / "e" / alg / f"seed{seed}")


@pytest.fixture
def cells(tmp_path):
    # seed 0: theta0 best on c0, theta1 on c1. seed 1: swapped (0->1: 10 + 40 < 90 + 50).
    _write(tmp_path, "fedsoft", 0, [[30.0, 70.0], [80.0, 20.0]], [5.0, 4.0], [0.3, 0.1],
           [[0.2, 0.8], [0.9, 0.1]])
    _write(tmp_path, "fedsoft", 1, [[90.0, 10.0], [40.0, 50.0]], [7.0, 6.0], [0.5, 0.3],
           [[0.7, 0.3], [0.4, 0.6]])
    _write(tmp_path, "ifca", 0, None, [9.0, 8.0], [0, 0], None)
    return {alg: p2.read_cell(tmp_path, "e", alg) for alg in ("fedsoft", "ifca")}


def test_center_table_aligns_centers_by_matching_before_averaging(cells):
    assert [s.match.tolist() for s in cells["fedsoft"]] == [[0, 1], [1, 0]]
    mean, std = p2.center_table(cells["fedsoft"])
    assert mean.tolist() == [[20.0, 80.0], [65.0, 30.0]]  # seed 1 read as [[10, 90], [50, 40]]
    assert std.tolist() == [[10.0, 10.0], [15.0, 10.0]]
    assert cells["ifca"][0].holdout is None and cells["fedsoft"][1].mixture_mae == [0.5, 0.3]


def test_paper_matrix_is_matched_the_same_way():
    aligned, match = p2.paper_matched([[68.4, 29.5], [21.8, 58.6]])  # P2 Table 1, 10:90
    assert match.tolist() == [1, 0]
    assert aligned.tolist() == [[29.5, 68.4], [58.6, 21.8]]


def test_table1_markdown_puts_ours_beside_the_matched_paper(cells):
    text = p2.table1_markdown(["theta0", "theta1"], *p2.center_table(cells["fedsoft"]),
                              [[68.4, 29.5], [21.8, 58.6]])
    lines = text.splitlines()
    assert lines[0] == "| distribution | center of theta0 | center of theta1 |"
    assert lines[2] == "| theta0 | 20.0 ± 10.0 (29.5) | 80.0 ± 10.0 (68.4) |"
    assert lines[3] == "| theta1 | 65.0 ± 15.0 (58.6) | 30.0 ± 10.0 (21.8) |"
    assert lines[-1] == "Paper's centers, matched: theta0 → c1, theta1 → c0"
    assert p2.matching_line(["a", "b"], np.array([1, -1])) == "a → c1, b → none"


def test_baseline_rows_best_center_per_distribution_and_dashes_for_ifca(cells):
    rows = p2.baseline_rows(cells, ["theta0", "theta1"])
    # best on theta0: 30 (c0) and 10 (c1); on theta1: 20 (c1) and 40 (c0); last round values
    assert rows[0] == ["fedsoft", "20.00 ± 10.00 (0,1)", "30.00 ± 10.00 (1,0)",
                       "4.00 ± 1.00", "5.00 ± 1.00", "0.20 ± 0.10"]
    assert rows[1] == ["ifca", "–", "–", "–", "8.00 ± 0.00", "–"]
    assert p2.metrics(cells) == {"fedsoft": {"local_train_mse": 4.0, "mixture_mae": 0.2},
                                 "ifca": {}}  # only what every seed recorded


def test_importance_follows_the_center_serving_each_distribution():
    u = np.array([[0.2, 0.8], [0.9, 0.1]])
    assert p2.aligned_importance(u, np.array([1, 0])).tolist() == [[0.8, 0.2], [0.1, 0.9]]
    half = p2.aligned_importance(u, np.array([1, -1]))
    assert half[:, 0].tolist() == [0.8, 0.1] and np.isnan(half[:, 1]).all()


def test_p2_figures_are_written(cells, tmp_path):
    mixture = np.array([[0.1, 0.9], [0.9, 0.1]])
    assert figures_p2.importance_figure("t", cells, mixture, "theta0", tmp_path / "i.png")
    assert figures_p2.mixture_error_figure("t", cells, tmp_path / "m.png")
    assert not figures_p2.mixture_error_figure("t", {"ifca": cells["ifca"]}, tmp_path / "n.png")
    assert (tmp_path / "i.png").read_bytes()[:4] == b"\x89PNG"


def test_summary_table_labels_mse_and_accuracy_cells(tmp_path):
    _write(tmp_path, "fedsoft", 0, [[30.0, 70.0], [80.0, 20.0]], [5.0, 4.0], [0.3, 0.1],
           [[0.2, 0.8], [0.9, 0.1]])
    h = RunHistory()
    for r, acc in enumerate([0.5, 0.7], start=1):
        h.append({"round": r, "test_acc": acc, "test_loss": 1.0, "train_loss": 1.0})
    h.write(tmp_path / "e" / "fedavg" / "seed0")
    rows = rep.seed_rows(tmp_path, "e", "fedsoft") + rep.seed_rows(tmp_path, "e", "fedavg")
    assert [(r["metric"], r["last"], r["best"], r["best_round"]) for r in rows] == [
        ("test_mse", 4.0, 4.0, 2), ("test_acc", 70.0, 70.0, 2)]
    table = rep.summary_table(pd.DataFrame(rows), {})
    lines = rep.markdown_table(table, {}).splitlines()
    assert lines[2].startswith("| e | fedsoft | test MSE | – | 4.00 ± 0.00 |")
    assert lines[3].startswith("| e | fedavg | test accuracy (%) | – | 70.00 ± 0.00 |")
    assert json.loads(json.dumps(rep.metrics_json(table))) == {
        "e": {"fedsoft": {"last_mse": 4.0, "best_mse": 4.0},
              "fedavg": {"last_acc": 70.0, "best_acc": 70.0}}}
    curve = rep.mean_curve(tmp_path, "e", "fedsoft")
    assert rep.curve_metric(curve) == "test_mse" and curve["mixture_mae"].tolist() == [0.3, 0.1]
