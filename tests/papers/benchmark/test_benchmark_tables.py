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

ROWS = pd.DataFrame([  # algorithms x, y, c; schemes a, b (x has no run on b)
    ("x", "a", 0, 80.0), ("x", "a", 1, 90.0), ("y", "a", 0, 85.0), ("y", "a", 1, 85.0),
    ("c", "a", 0, 50.0), ("y", "b", 0, 70.0), ("c", "b", 0, 70.0),
], columns=["algorithm", "experiment", "seed", "value"])


def test_mean_std_ranks_count_only_differences_beyond_the_spread():
    mean, std = leaderboard(ROWS, ["x", "y", "c"], ["a", "b"])
    assert mean.loc["x", "a"] == 85.0 and std.loc["x", "a"] == 5.0  # population std
    assert np.isnan(mean.loc["x", "b"]) and mean.loc["y", "b"] == 70.0
    ranked = ranks(mean, std)
    # scheme a: x 85 ± 5 and y 85 ± 0 share rank 1, c 50 ± 0 is beaten by both (rank 3);
    # scheme b: y and c 70 ± 0 share rank 1, x has no rank
    assert ranked.loc["x", "a"] == 1.0 and ranked.loc["y", "a"] == 1.0
    assert ranked.loc["c", "a"] == 3.0 and ranked.loc["c", "b"] == 1.0
    assert np.isnan(ranked.loc["x", "b"])
    assert ranked.loc["x", "average"] == 1.0  # over the schemes it has
    assert ranked.loc["c", "average"] == 2.0


def test_a_lead_inside_the_spread_is_a_tie_and_beyond_it_a_rank():
    mean = pd.DataFrame({"s": [78.60, 77.58, 70.0]}, index=["fedgroup", "flhc", "local"])
    std = pd.DataFrame({"s": [0.79, 0.65, 0.5]}, index=mean.index)
    better = clearly_better(mean["s"], std["s"])
    # 78.60 - 0.79 = 77.81 < 77.58 + 0.65 = 78.23: the iid lead of the committed board is noise
    assert not better.loc["fedgroup", "flhc"] and better.loc["fedgroup", "local"]
    assert list(ranks(mean, std)["s"]) == [1.0, 1.0, 3.0]
    assert clear_winner(mean["s"], std["s"]) is None
    std.loc["flhc", "s"] = 0.1  # 77.81 > 77.68: now beyond both spreads
    assert list(ranks(mean, std)["s"]) == [1.0, 2.0, 3.0]
    assert clear_winner(mean["s"], std["s"]) == "fedgroup"
    lower = ranks(mean, std, lower_is_better=True)["s"]  # a loss: the smallest wins
    assert list(lower) == [3.0, 2.0, 1.0]


def test_markdown_bolds_only_a_clear_winner_and_marks_shared_ranks():
    mean, std = leaderboard(ROWS, ["x", "y", "c"], ["a", "b"])
    text = leaderboard_markdown(mean, std, ranks(mean, std), {"a": "A"})
    lines = text.splitlines()
    assert lines[0] == "| algorithm | A | b | average rank |"
    assert lines[2] == "| x | 85.00 ± 5.00 (=1) | – | 1.00 |"
    assert lines[3] == "| y | 85.00 ± 0.00 (=1) | 70.00 ± 0.00 (=1) | 1.00 |"
    assert lines[4] == "| c | 50.00 ± 0.00 (3) | 70.00 ± 0.00 (=1) | 2.00 |"
    clear = ROWS[ROWS.algorithm != "x"]  # scheme a without x: y's 85 beats c's 50 cleanly
    mean, std = leaderboard(clear, ["y", "c"], ["a"])
    lines = leaderboard_markdown(mean, std, ranks(mean, std), {}).splitlines()
    assert lines[2] == "| y | **85.00 ± 0.00 (1)** | 1.00 |"
    assert lines[3] == "| c | 50.00 ± 0.00 (2) | 2.00 |"


def test_markdown_with_families_orders_rows_by_average_rank():
    mean, std = leaderboard(ROWS, ["c", "x", "y"], ["a", "b"])
    text = leaderboard_markdown(mean, std, ranks(mean, std), {}, families={"x": "global"})
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
