"""The benchmark's leaderboard, ranks and upload cost (`papers/benchmark/report/tables.py`)."""

import numpy as np
import pandas as pd

from clusterfl.algorithms import ALGORITHMS, GENERAL_METHODS, FederatedAlgorithm
from clusterfl.papers.benchmark.report.tables import (
    at_grid_edge,
    leaderboard,
    leaderboard_markdown,
    ranks,
    uploads_per_round,
)

ROWS = pd.DataFrame([  # algorithms x, y, c; schemes a, b (x has no run on b)
    ("x", "a", 0, 80.0), ("x", "a", 1, 90.0), ("y", "a", 0, 85.0), ("y", "a", 1, 85.0),
    ("c", "a", 0, 50.0), ("y", "b", 0, 70.0), ("c", "b", 0, 70.0),
], columns=["algorithm", "experiment", "seed", "value"])


def test_mean_std_ranks_and_average_rank():
    mean, std = leaderboard(ROWS, ["x", "y", "c"], ["a", "b"])
    assert mean.loc["x", "a"] == 85.0 and std.loc["x", "a"] == 5.0  # population std
    assert np.isnan(mean.loc["x", "b"]) and mean.loc["y", "b"] == 70.0
    ranked = ranks(mean)
    # scheme a: x 85, y 85 tie at 1.5, c 3; scheme b: y, c 70 tie at 1.5, x has no rank
    assert ranked.loc["x", "a"] == 1.5 and ranked.loc["y", "a"] == 1.5
    assert ranked.loc["c", "a"] == 3.0 and ranked.loc["c", "b"] == 1.5
    assert np.isnan(ranked.loc["x", "b"])
    assert ranked.loc["x", "average"] == 1.5  # over the schemes it has
    assert ranked.loc["c", "average"] == 2.25


def test_markdown_bolds_every_best_and_shows_rank():
    mean, std = leaderboard(ROWS, ["x", "y", "c"], ["a", "b"])
    text = leaderboard_markdown(mean, std, ranks(mean), {"a": "A"})
    lines = text.splitlines()
    assert lines[0] == "| algorithm | A | b | average rank |"
    assert lines[2] == "| x | **85.00 ± 5.00 (1.5)** | – | 1.50 |"
    assert lines[3] == "| y | **85.00 ± 0.00 (1.5)** | **70.00 ± 0.00 (1.5)** | 1.50 |"
    assert lines[4] == "| c | 50.00 ± 0.00 (3) | **70.00 ± 0.00 (1.5)** | 2.25 |"


def test_markdown_with_families_orders_rows_by_average_rank():
    mean, std = leaderboard(ROWS, ["c", "x", "y"], ["a", "b"])
    text = leaderboard_markdown(mean, std, ranks(mean), {}, families={"x": "global"})
    lines = text.splitlines()
    assert lines[0] == "| algorithm | family | a | b | average rank |"
    # x and y tie at 1.50 and keep their given order; c (2.25) goes last
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
