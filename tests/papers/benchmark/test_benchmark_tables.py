"""The benchmark's leaderboard, ranks and upload cost (`papers/benchmark/report/tables.py`)."""

import numpy as np
import pandas as pd

from clusterfl.algorithms import ALGORITHMS, GENERAL_METHODS, FederatedAlgorithm
from clusterfl.papers.benchmark.report.tables import (
    at_grid_edge,
    clear_winner,
    clearly_better,
    leaderboard,
    leaderboard_markdown,
    ranks,
    uploads_per_round,
)

ROWS = pd.DataFrame([  # algorithms x, y, c; schemes a (3 seeds), b (1 seed; x has no run)
    ("x", "a", 0, 80.0), ("x", "a", 1, 90.0), ("x", "a", 2, 85.0),
    ("y", "a", 0, 85.0), ("y", "a", 1, 85.0), ("y", "a", 2, 85.0),
    ("c", "a", 0, 50.0), ("c", "a", 1, 52.0), ("c", "a", 2, 54.0),
    ("y", "b", 0, 70.0), ("c", "b", 0, 70.0),
], columns=["algorithm", "experiment", "seed", "value"])
T2 = 0.95 / np.sqrt(2 * 0.975 * 0.025)  # Student t(0.975) with 2 degrees of freedom, 4.3027


def test_mean_std_ranks_count_only_differences_the_seeds_bear_out():
    mean, std = leaderboard(ROWS, ["x", "y", "c"], ["a", "b"])
    assert mean.loc["x", "a"] == 85.0
    assert std.loc["x", "a"] == np.sqrt(50 / 3)  # population std
    assert np.isnan(mean.loc["x", "b"]) and mean.loc["y", "b"] == 70.0
    ranked = ranks(ROWS, mean)
    # scheme a, seed by seed: x - y = -5, +5, 0 (within noise); x - c = 30, 38, 31
    # (33 ± T2 x 4.36 / sqrt(3) = 33 ± 10.8) and y - c = 35, 33, 31 (33 ± 4.97) lie above 0:
    # x and y share rank 1, c is beaten by both (rank 3); scheme b: one seed, no interval,
    # y and c share rank 1, x has no rank
    assert ranked.loc["x", "a"] == 1.0 and ranked.loc["y", "a"] == 1.0
    assert ranked.loc["c", "a"] == 3.0 and ranked.loc["c", "b"] == 1.0
    assert np.isnan(ranked.loc["x", "b"])
    assert ranked.loc["x", "average"] == 1.0  # over the schemes it has
    assert ranked.loc["c", "average"] == 2.0


def test_a_lead_is_a_rank_only_where_the_paired_interval_excludes_zero():
    # the committed board's iid scheme, rounded: fedgroup leads flhc by 2.0, 1.7, 0.5 points
    # on seeds 0-2: 1.4 ± T2 x 0.794 / sqrt(3) = 1.4 ± 1.97 holds 0; both beat local
    values = {"fedgroup": {0: 80.5, 1: 78.6, 2: 77.8}, "flhc": {0: 78.5, 1: 76.9, 2: 77.3},
              "local": {0: 69.4, 1: 68.9, 2: 69.9}}
    better = clearly_better(values)
    assert not better.loc["fedgroup", "flhc"] and better.loc["fedgroup", "local"]
    assert better.loc["flhc", "local"] and not better.loc["local", "flhc"]
    assert clear_winner(values) is None
    # a lead of 2.0, 2.1, 1.9: 2 ± 0.25 lies above 0
    values["flhc"] = {0: 78.5, 1: 76.5, 2: 75.9}
    assert clearly_better(values).loc["fedgroup", "flhc"]
    assert clear_winner(values) == "fedgroup"
    assert clear_winner(values, lower_is_better=True) == "local"  # a loss: the smallest wins
    # the same gaps unpaired: seed 2 is hard for both (-20 points), which the pairing removes
    hard = {"p": {0: 80.0, 1: 81.0, 2: 61.0}, "q": {0: 79.0, 1: 80.0, 2: 60.0}}
    assert clearly_better(hard).loc["p", "q"]


def test_markdown_bolds_only_a_clear_winner_and_marks_shared_ranks():
    mean, std = leaderboard(ROWS, ["x", "y", "c"], ["a", "b"])
    text = leaderboard_markdown(mean, std, ranks(ROWS, mean), ROWS, {"a": "A"})
    lines = text.splitlines()
    assert lines[0] == "| algorithm | A | b | average rank |"
    assert lines[2] == "| x | 85.00 ± 4.08 (=1) | – | 1.00 |"
    assert lines[3] == "| y | 85.00 ± 0.00 (=1) | 70.00 ± 0.00 (=1) | 1.00 |"
    assert lines[4] == "| c | 52.00 ± 1.63 (3) | 70.00 ± 0.00 (=1) | 2.00 |"
    clear = ROWS[ROWS.algorithm != "x"]  # scheme a without x: y beats c on every seed
    mean, std = leaderboard(clear, ["y", "c"], ["a"])
    lines = leaderboard_markdown(mean, std, ranks(clear, mean), clear, {}).splitlines()
    assert lines[2] == "| y | **85.00 ± 0.00 (1)** | 1.00 |"
    assert lines[3] == "| c | 52.00 ± 1.63 (2) | 2.00 |"


def test_markdown_with_families_orders_rows_by_average_rank():
    mean, std = leaderboard(ROWS, ["c", "x", "y"], ["a", "b"])
    text = leaderboard_markdown(mean, std, ranks(ROWS, mean), ROWS, {},
                                families={"x": "global"})
    lines = text.splitlines()
    assert lines[0] == "| algorithm | family | a | b | average rank |"
    # x and y tie at 1.00 and keep their given order; c (2.00) goes last
    assert [line.split(" | ")[:2] for line in lines[2:]] == [
        ["| x", "global"], ["| y", "other"], ["| c", "other"]]


def test_each_general_method_declares_its_family():
    """The leaderboard's family column is the class's `family`. Readings: FedEM's M shared
    components are soft clusters (P2 compares it with FedSoft), pFedKM is P1's clustered
    generalization of pFedMe, FedAvg + FT ends with a model per client, FedProx keeps one
    global model; a class that declares none (a paper's own method) is "other"."""
    families: dict[str, list[str]] = {}
    for name in GENERAL_METHODS:
        families.setdefault(ALGORITHMS.get(name).family, []).append(name)
    assert {k: sorted(v) for k, v in families.items()} == {
        "global": ["fedavg", "fedprox"], "local": ["local"],
        "personalized": ["apfl", "ditto", "fedala", "fedavg_ft", "fedper", "fedrep",
                         "lgfedavg", "perfedavg", "pfedme"],
        "clustered": ["cfl", "fedem", "fedgroup", "fedsoft", "fesem", "flhc", "ifca",
                      "pfedkm"]}
    assert FederatedAlgorithm.family == "other"


def test_at_grid_edge_counts_only_grids_with_enough_values():
    grid = [{"lr": lr, "mu": mu, "k": k} for lr in (0.1, 0.2, 0.4) for mu in (0.01, 0.1)
            for k in (4, 2)]
    assert at_grid_edge({"lr": 0.1}, grid, "lr") and at_grid_edge({"lr": 0.4}, grid, "lr")
    assert not at_grid_edge({"lr": 0.2}, grid, "lr")
    assert at_grid_edge({"mu": 0.1}, grid, "mu")  # 2 values: both are edges
    assert not at_grid_edge({"mu": 0.1}, grid, "mu", min_values=3)
    assert not at_grid_edge({"lr": 0.1}, [{"lr": 0.1}], "lr")  # one value: no edge


def test_uploads_per_round():
    assert uploads_per_round("fedavg", 1000, 1, 1, 20) == 20_000
    assert uploads_per_round("local", 1000, 1, 1, 20) == 0
    assert uploads_per_round("fedem", 1000, 3, 1, 20) == 60_000
    assert uploads_per_round("fedsoft", 1000, 2, 2, 20) == 20 * 1001
    assert uploads_per_round("unknown", 1000, 2, 2, 20) is None


def test_scored_views_names_the_model_a_number_scores_and_shows_the_others():
    from clusterfl.papers.benchmark.report.tables import scored_views

    views = {"theta": "θ_i", "local_w": "local w_i"}
    last = {
        # scored by local w (equal in every record), theta beside it
        "pfedme": [{"test_acc": 0.70, "theta_test_acc": 0.50, "local_w_test_acc": 0.70},
                   {"test_acc": 0.80, "theta_test_acc": 0.60, "local_w_test_acc": 0.80}],
        "fedavg": [{"test_acc": 0.9}],  # no views recorded: not in the table
        "odd": [{"test_acc": 0.5, "theta_test_acc": 0.4, "local_w_test_acc": 0.3}],
    }
    table = scored_views(last, views)
    assert table["algorithm"].tolist() == ["pfedme", "odd"]
    first = table.iloc[0]
    assert first["scored model"] == "local w_i"
    assert (round(first["scored (test_acc)"], 9), round(first["θ_i"], 9),
            round(first["local w_i"], 9)) == (75.0, 55.0, 75.0)
    assert table.iloc[1]["scored model"] == "its own (none of the views)"
