"""P2 report: matched center x distribution tables, baselines, importance alignment, by exact
numbers, for MSE and accuracy cells; stand-ins' references kept apart; sweep tables; the
evolution figure's client groups; and the suite's summary table with both kinds of cells."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from clusterfl.papers.p2 import PAPER
from clusterfl.papers.p2.report import cells as p2
from clusterfl.papers.p2.report import figures as figures_p2
from clusterfl.papers.p2.report import sweeps
from clusterfl.papers.p2.report import tables as t2
from clusterfl.reports import results, runs
from clusterfl.steps.clustering import match_centers
from clusterfl.training.history import RunHistory
from tests.papers.p2.histories import write_soft_run


@pytest.fixture
def cells(tmp_path):
    # seed 0: theta0 best on c0, theta1 on c1. seed 1: swapped (0->1: 10 + 40 < 90 + 50).
    write_soft_run(tmp_path, "fedsoft", 0, [[30.0, 70.0], [80.0, 20.0]], [5.0, 4.0], [0.3, 0.1],
                   [[0.2, 0.8], [0.9, 0.1]])
    write_soft_run(tmp_path, "fedsoft", 1, [[90.0, 10.0], [40.0, 50.0]], [7.0, 6.0], [0.5, 0.3],
                   [[0.7, 0.3], [0.4, 0.6]])
    write_soft_run(tmp_path, "ifca", 0, None, [9.0, 8.0], [0, 0], None)
    return {alg: p2.read_cell(tmp_path, "e", alg) for alg in ("fedsoft", "ifca")}


def test_center_table_aligns_centers_by_matching_before_averaging(cells):
    assert [s.match.tolist() for s in cells["fedsoft"]] == [[0, 1], [1, 0]]
    mean, std = p2.center_table(cells["fedsoft"])
    assert mean.tolist() == [[20.0, 80.0], [65.0, 30.0]]  # seed 1 read as [[10, 90], [50, 40]]
    assert std.tolist() == [[10.0, 10.0], [15.0, 10.0]]
    assert cells["ifca"][0].holdout is None and cells["fedsoft"][1].mixture_mae == [0.5, 0.3]


def test_paper_matrix_is_matched_the_same_way():
    aligned, match = t2.paper_matched([[68.4, 29.5], [21.8, 58.6]])  # P2 Table 1, 10:90
    assert match.tolist() == [1, 0]
    assert aligned.tolist() == [[29.5, 68.4], [58.6, 21.8]]


def test_table1_markdown_puts_ours_beside_the_matched_paper(cells):
    text = t2.table1_markdown(["theta0", "theta1"], *p2.center_table(cells["fedsoft"]),
                              [[68.4, 29.5], [21.8, 58.6]])
    lines = text.splitlines()
    assert lines[0] == "| distribution | center of theta0 | center of theta1 |"
    assert lines[2] == "| theta0 | 20.0 ± 10.0 (29.5) | 80.0 ± 10.0 (68.4) |"
    assert lines[3] == "| theta1 | 65.0 ± 15.0 (58.6) | 30.0 ± 10.0 (21.8) |"
    assert lines[-1] == "Paper's centers, matched: theta0 → c1, theta1 → c0"
    assert t2.matching_line(["a", "b"], np.array([1, -1])) == "a → c1, b → none"


def test_baseline_rows_best_center_per_distribution_and_dashes_for_ifca(cells):
    rows = t2.baseline_rows(cells, ["theta0", "theta1"])
    # best on theta0: 30 (c0) and 10 (c1); on theta1: 20 (c1) and 40 (c0); last round values
    assert rows[0] == ["fedsoft", "20.00 ± 10.00 (0,1)", "30.00 ± 10.00 (1,0)",
                       "4.00 ± 1.00", "5.00 ± 1.00", "0.20 ± 0.10"]
    assert rows[1] == ["ifca", "–", "–", "–", "8.00 ± 0.00", "–"]
    assert p2.cell_metrics(cells) == {"fedsoft": {"local_train_mse": 4.0, "mixture_mae": 0.2},
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
    write_soft_run(tmp_path, "fedsoft", 0, [[30.0, 70.0], [80.0, 20.0]], [5.0, 4.0], [0.3, 0.1],
                   [[0.2, 0.8], [0.9, 0.1]])
    h = RunHistory()
    for r, acc in enumerate([0.5, 0.7], start=1):
        h.append({"round": r, "test_acc": acc, "test_loss": 1.0, "train_loss": 1.0})
    h.write(tmp_path / "e" / "fedavg" / "seed0")
    rows = runs.seed_rows(tmp_path, "e", "fedsoft") + runs.seed_rows(tmp_path, "e", "fedavg")
    assert [(r["metric"], r["last"], r["best"], r["best_round"]) for r in rows] == [
        ("test_mse", 4.0, 4.0, 2), ("test_acc", 70.0, 70.0, 2)]
    table = results.summary_table(pd.DataFrame(rows), {})
    lines = results.results_markdown(table, {}).splitlines()
    assert lines[2].startswith("| e | fedsoft | test MSE | – | 4.00 ± 0.00 |")
    assert lines[3].startswith("| e | fedavg | test accuracy (%) | – | 70.00 ± 0.00 |")
    assert json.loads(json.dumps(results.metrics_json(table))) == {
        "e": {"fedsoft": {"last_mse": 4.0, "best_mse": 4.0},
              "fedavg": {"last_acc": 70.0, "best_acc": 70.0}}}
    curve = runs.mean_curve(tmp_path, "e", "fedsoft")
    assert curve.primary.name == "test_mse" and curve["mixture_mae"].tolist() == [0.3, 0.1]


REFERENCES = yaml.safe_load(PAPER.references_file.read_text())


def _write_acc(root, seed, holdout, local, exp="c", alg="fedsoft"):
    """A classification run of two rounds (accuracy recorded as a fraction, as soft_eval)."""
    h = RunHistory()
    for r in (1, 2):
        match = match_centers(np.asarray(holdout), lower_is_better=False)
        h.append({"round": r, "test_acc": local - 0.1, "local_train_acc": local,
                  "mixture_mae": 0.1},
                 {"holdout_acc": holdout, "center_of_distribution": match.tolist(),
                  "importance": [[0.5, 0.5]]})
    h.write(root / exp / alg / f"seed{seed}")


@pytest.fixture
def acc_seeds(tmp_path):
    # seed 0: d0 best on c1 (0.8), d1 on c0 (0.7); seed 1: d0 on c0 (0.9), d1 on c1 (0.7)
    _write_acc(tmp_path, 0, [[0.6, 0.8], [0.7, 0.5]], 0.9)
    _write_acc(tmp_path, 1, [[0.9, 0.5], [0.6, 0.7]], 0.8)
    return p2.read_cell(tmp_path, "c", "fedsoft")


def test_accuracy_is_read_in_percent_and_matching_picks_the_highest(acc_seeds):
    assert [s.measure for s in acc_seeds] == [p2.ACCURACY, p2.ACCURACY]
    assert acc_seeds[0].holdout == pytest.approx(np.array([[60.0, 80.0], [70.0, 50.0]]))
    assert acc_seeds[0].last["local_train_acc"] == pytest.approx(90.0)
    assert [s.match.tolist() for s in acc_seeds] == [[1, 0], [0, 1]]
    aligned, match = t2.paper_matched([[68.9, 70.3], [74.6, 73.3]], lower_is_better=False)
    assert match.tolist() == [1, 0]  # lowest would be [0, 1]: 68.9 + 73.3 < 70.3 + 74.6
    assert aligned.tolist() == [[70.3, 68.9], [73.3, 74.6]]
    assert p2.cell_metrics({"fedsoft": acc_seeds}) == {
        "fedsoft": {"local_train_acc": 85.0, "mixture_mae": 0.1}}


def test_percent_cells_of_a_classification_history(acc_seeds):
    rows = t2.baseline_rows({"fedsoft": acc_seeds}, ["rot0", "rot90"])
    # best on rot0: 80 (c1), 90 (c0); on rot90: 70 (c0), 70 (c1); w̄ 90, 80; test 80, 70
    assert rows == [["fedsoft", "85.0 ± 5.0 (1,0)", "70.0 ± 0.0 (0,1)", "85.0 ± 5.0",
                     "75.0 ± 5.0", "0.10 ± 0.00"]]
    header = t2.baseline_markdown({"fedsoft": acc_seeds}, ["rot0", "rot90"]).splitlines()[0]
    assert header == ("| algorithm | best center on rot0 (index per seed) | best center on rot90 "
                      "(index per seed) | w̄: local train acc % | local test acc % | "
                      "importance MAE |")
    own = t2.paper_reference(REFERENCES, "p2_letters_1090")
    lines = t2.cluster_markdown(["lower", "upper"], acc_seeds, own).splitlines()
    assert lines[2:4] == ["| lower | 85.0 ± 5.0 (70.3) | 55.0 ± 5.0 (68.9) |",
                          "| upper | 55.0 ± 5.0 (73.3) | 70.0 ± 0.0 (74.6) |"]


def test_a_stand_in_shows_the_letters_numbers_apart_and_labelled(acc_seeds):
    paper = t2.paper_reference(REFERENCES, "p2_fmnist_rot_1090")
    assert (paper.label, paper.stand_in_for) == ("paper, EMNIST letters", "p2_letters_1090")
    twin = t2.paper_reference({"a": {"stand_in_for": "b"}, "b": {"distributions": ["x", "y"]}},
                              "a")
    assert not twin.aligned_with(["x", "y"])  # apart even where the names coincide
    assert t2.cluster_markdown(["rot0", "rot90"], acc_seeds, paper) == """\
| distribution | center of rot0 | center of rot90 |
|---|---|---|
| rot0 | 85.0 ± 5.0 | 55.0 ± 5.0 |
| rot90 | 55.0 ± 5.0 | 70.0 ± 0.0 |

Center serving each distribution (Hungarian matching): seed 0: rot0 → c1, rot90 → c0; \
seed 1: rot0 → c0, rot90 → c1

**paper, EMNIST letters** (P2 Tables 1-2, letters, 10:90): the paper's own data, \
distributions and centers; not numbers for this experiment.

| distribution | center of lower | center of upper |
|---|---|---|
| lower | 70.3 | 68.9 |
| upper | 73.3 | 74.6 |

Paper's centers, matched: lower → c1, upper → c0
"""
    lines = t2.baseline_markdown({"fedsoft": acc_seeds}, ["rot0", "rot90"], paper).splitlines()
    assert lines[0].endswith("| importance MAE | paper, EMNIST letters |")
    assert lines[2] == ("| fedsoft | 85.0 ± 5.0 (1,0) | 70.0 ± 0.0 (0,1) | 85.0 ± 5.0 | "
                        "75.0 ± 5.0 | 0.10 ± 0.00 | lower 70.3 (1), upper 74.6 (0); w̄ 90.9 |")
    sweep_refs = REFERENCES["p2_sweeps"]
    column = sweeps.sweep_column(acc_seeds, 2)  # matched: rot0 80, 90; rot90 70, 70; w̄ 90, 80
    text = sweeps.sweep_block("λ", ["rot0", "rot90"], ["0.1"], [column],
                              t2.paper_reference(sweep_refs, "lambda_fmnist_rot_linear"),
                              p2.ACCURACY)
    ours, theirs = text.split("**paper, EMNIST letters** (P2 Table 5)")
    assert ours.splitlines()[2:5] == ["| center of rot0 | 85.0 ± 5.0 |",
                                      "| center of rot90 | 70.0 ± 0.0 |",
                                      "| local w̄ | 85.0 ± 5.0 |"]
    assert theirs.splitlines()[4:] == ["| center of lower | 71.8 |", "| center of upper | 74.1 |",
                                       "| local w̄ | 86.5 |"]


def test_sweep_table_from_two_cells_beside_the_paper(tmp_path):
    # σ0 = 10: the fixture's two seeds (matched: theta0 30, 10; theta1 20, 40; w̄ 3, 5);
    # σ0 = 1: one seed, theta0 -> c1 (3), theta1 -> c0 (2), w̄ 1
    write_soft_run(tmp_path, "fedsoft", 0, [[30.0, 70.0], [80.0, 20.0]], [5.0, 4.0], [0.3, 0.1],
                   [[0.2, 0.8], [0.9, 0.1]], exp="s10")
    write_soft_run(tmp_path, "fedsoft", 1, [[90.0, 10.0], [40.0, 50.0]], [7.0, 6.0], [0.5, 0.3],
                   [[0.7, 0.3], [0.4, 0.6]], exp="s10")
    write_soft_run(tmp_path, "fedsoft", 0, [[5.0, 3.0], [2.0, 6.0]], [2.0], [0.1], [[1.0, 0.0]],
                   exp="s1")
    names = ["theta0", "theta1"]
    ours = [sweeps.sweep_column(p2.read_cell(tmp_path, e, "fedsoft"), 2) for e in ("s1", "s10")]
    paper = t2.paper_reference(REFERENCES["p2_sweeps"], "sigma0_synth_random")
    assert sweeps.sweep_block("σ0", names, ["1", "10"], ours, paper, p2.MSE) == """\
| model | σ0 = 1 | σ0 = 10 |
|---|---|---|
| center of theta0 | 3.0 ± 0.0 (4.2) | 20.0 ± 10.0 (42.2) |
| center of theta1 | 2.0 ± 0.0 (3.2) | 30.0 ± 10.0 (27.0) |
| local w̄ | 1.00 ± 0.00 (0.60) | 4.00 ± 1.00 (4.96) |
"""
    assert sweeps.sweep_metrics(names, ours[1], p2.MSE) == {
        "matched_theta0": 20.0, "matched_theta1": 30.0, "local_train_mse": 4.0}


def test_clients_grouped_by_true_mixture():
    two = figures_p2.mixture_groups(np.array([[0.1, 0.9], [0.9, 0.1], [0.1, 0.9]]), "a")
    assert [(label, g.tolist()) for label, g in two] == [("10:90", [0, 2]), ("90:10", [1])]
    linear = np.stack([(np.arange(8) + 0.5) / 8, 1 - (np.arange(8) + 0.5) / 8], axis=1)
    assert [(label, g.tolist()) for label, g in figures_p2.mixture_groups(linear, "a")] == [
        ("a share 0–25%", [0, 1]), ("a share 25–50%", [2, 3]), ("a share 50–75%", [4, 5]),
        ("a share 75–100%", [6, 7])]
    share = np.array([0.05, 0.1, 0.9, 0.95, 0.3])  # five mixtures, bin 50-75% empty
    groups = figures_p2.mixture_groups(np.stack([share, 1 - share], axis=1), "a")
    assert [(label, g.tolist()) for label, g in groups] == [
        ("a share 0–25%", [0, 1]), ("a share 25–50%", [4]), ("a share 75–100%", [2, 3])]


def test_only_the_first_seed_keeps_rounds_and_the_evolution_figure_draws_it(cells, tmp_path):
    first, second = cells["fedsoft"]
    assert first.holdout_rounds.shape == (2, 2, 2) and first.importance_rounds.shape == (2, 2, 2)
    assert second.holdout_rounds is None and second.importance_rounds is None
    assert p2.is_soft_cell(tmp_path, "e", "fedsoft") and not p2.is_soft_cell(tmp_path, "e", "ifca")
    mixture = np.array([[0.1, 0.9], [0.9, 0.1]])
    path = tmp_path / "evolution.png"
    assert figures_p2.evolution_figure("t", first, ["theta0", "theta1"], mixture, path)
    assert not figures_p2.evolution_figure("t", second, ["theta0", "theta1"], mixture, path)
    assert path.read_bytes()[:4] == b"\x89PNG"
