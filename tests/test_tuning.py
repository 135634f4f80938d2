"""The benchmark's tuning protocol as pure steps (`clusterfl.training.tuning`), exact values."""

import math

import pytest

from clusterfl.algorithms import ALGORITHMS, Schedule
from clusterfl.core.errors import UserError
from clusterfl.run.config import AlgorithmConfig, Experiment
from clusterfl.training.tuning import apply_point, cluster_field, grid_points, parse_tuning, pick

RAW = {"seeds": [0], "lr": [0.03, 0.1], "clusters": {"rot": [4, 2]}, "default_clusters": [2, 3]}


def _alg(method, **hyper):
    cls = ALGORITHMS.get(method)
    return AlgorithmConfig(method, method, cls, cls.Hyper(**hyper))


def _exp():
    return Experiment("rot", "benchmark", "p", "dnn", {}, Schedule(rounds=3, lr=0.5, epochs=1),
                      "t", {}, None)


def test_grid_lr_outermost_then_true_k_then_wrong_k():
    tuning = parse_tuning(RAW, "suite.tuning")
    ifca, fedem, fedavg = _alg("ifca"), _alg("fedem"), _alg("fedavg")
    assert cluster_field(ifca.hyper) == "num_clusters"
    assert cluster_field(fedem.hyper) == "num_components"
    assert cluster_field(fedavg.hyper) is None
    assert grid_points(tuning, "rot", ifca.hyper) == [
        {"lr": 0.03, "num_clusters": 4}, {"lr": 0.03, "num_clusters": 2},
        {"lr": 0.1, "num_clusters": 4}, {"lr": 0.1, "num_clusters": 2}]
    assert grid_points(tuning, "iid", fedem.hyper) == [
        {"lr": 0.03, "num_components": 2}, {"lr": 0.03, "num_components": 3},
        {"lr": 0.1, "num_components": 2}, {"lr": 0.1, "num_components": 3}]
    assert grid_points(tuning, "rot", fedavg.hyper) == [{"lr": 0.03}, {"lr": 0.1}]
    own = parse_tuning({**RAW, "hyper": {"fedavg": {"server_lr": [1.0, 0.5]}}}, "t")
    assert grid_points(own, "rot", fedavg.hyper, "fedavg") == [
        {"lr": 0.03, "server_lr": 1.0}, {"lr": 0.03, "server_lr": 0.5},
        {"lr": 0.1, "server_lr": 1.0}, {"lr": 0.1, "server_lr": 0.5}]
    bad = parse_tuning({**RAW, "hyper": {"fedavg": {"eps2": [1.0]}}}, "t")
    with pytest.raises(UserError, match=r"suite\.tuning\.hyper\.fedavg\.eps2"):
        grid_points(bad, "rot", fedavg.hyper, "fedavg")


def test_apply_point_sets_lr_and_k_and_nothing_else():
    exp, alg = apply_point(_exp(), _alg("ifca", num_clusters=2), {"lr": 0.1, "num_clusters": 4})
    assert exp.schedule.lr == 0.1 and exp.schedule.rounds == 3 and exp.schedule.epochs == 1
    assert alg.hyper.num_clusters == 4 and alg.hyper.variant == "model"
    assert _exp().schedule.lr == 0.5  # inputs untouched (frozen)


def test_pick_mean_over_seeds_first_of_ties_nan_never_wins():
    points = [{"lr": 1}, {"lr": 2}, {"lr": 3}]
    assert pick(points, [[0.5, 0.7], [0.6, 0.6], [0.1, 0.2]]) == 0  # 0.6 == 0.6: the first
    assert pick(points, [[0.5], [0.61], [math.nan]]) == 1
    assert pick(points, [[0.5], [0.61], [0.2]], lower_is_better=True) == 2
    assert pick(points, [[math.nan], [0.1], [math.nan]], lower_is_better=True) == 1


@pytest.mark.parametrize("raw, message", [
    ({"lr": []}, "suite.tuning.lr"), ({"lr": [0.1], "seeds": [-1]}, "suite.tuning.seeds"),
    ({"lr": [0.1], "clusters": {"rot": [0]}}, "suite.tuning.clusters.rot"),
    ({"lr": [0.1], "bogus": 1}, "suite.tuning"),
    ({"lr": [0.1], "hyper": {"cfl": {"eps2": []}}}, "suite.tuning.hyper.cfl"),
])
def test_bad_tuning_block_is_one_line_naming_the_key(raw, message):
    with pytest.raises(UserError, match=message):
        parse_tuning(raw, "suite.tuning")
