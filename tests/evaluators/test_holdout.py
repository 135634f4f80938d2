"""FedSoft's evaluation protocol (the `holdout` evaluator) by exact numbers on tiny data."""

import numpy as np
import torch

from clusterfl.algorithms.base import holdout_data
from clusterfl.data.synthetic import FedSoftRegressionOptions, fedsoft_regression
from clusterfl.engine import ClientData, VectorizedEngine
from clusterfl.evaluators.holdout import (
    HoldoutProtocol,
    holdout_matrix,
    holdout_metrics,
    local_metrics,
    mixture_mae,
)
from clusterfl.partition import holdout_data as partition_holdout
from clusterfl.partition.mixtures import MixtureOptions, fedsoft_mixture
from clusterfl.steps.aggregation import largest_weight_centers
from clusterfl.steps.clustering import match_centers
from clusterfl.training.loop import GroundTruth, View
from clusterfl.training.models import build_model

ONE = np.ones((1, 1), np.float32)


def _engine(train, test) -> VectorizedEngine:
    return VectorizedEngine(build_model("linreg", (1,), 0), ClientData.from_lists(train, test))


def _weights(*values: float) -> dict[str, torch.Tensor]:
    return {"1.weight": torch.tensor(values).view(-1, 1, 1)}


def test_local_metrics_are_sample_weighted_and_per_client_means():
    # model w = 0 predicts 0: the squared errors are y^2. Client 0 has no test sample.
    x2 = np.ones((2, 1), np.float32)
    engine = _engine([(x2, np.array([1.0, 3.0])), (ONE, np.array([2.0]))],
                     [(ONE[:0], np.zeros(0)), (ONE, np.array([4.0]))])
    out = local_metrics(engine, _weights(0.0, 0.0))
    assert out["train_mse"] == 14 / 3  # (1 + 9 + 4) / 3 samples
    assert out["local_train_mse"] == 4.5  # mean of client MSEs 5 and 4
    assert out["test_mse"] == 16.0 and out["local_test_mse"] == 16.0  # client 1 only
    no_test = _engine([(ONE, np.array([2.0]))], [(ONE[:0], np.zeros(0))])
    assert set(local_metrics(no_test, _weights(0.0))) == {"train_mse", "local_train_mse"}


def test_holdout_matrix_rows_are_distributions_and_columns_centers():
    holdout = _engine([(ONE[:0], np.zeros(0))] * 2, [(ONE, np.array([1.0])),
                                                     (ONE, np.array([-2.0]))])
    matrix = holdout_matrix(holdout, _weights(0.0, 1.0))  # c_0: w = 0, c_1: w = 1
    np.testing.assert_allclose(matrix, [[1.0, 0.0], [4.0, 9.0]])
    scores, match = holdout_metrics(matrix, "mse")
    assert match.tolist() == [1, 0]  # d0 -> c1 (0), d1 -> c0 (4)
    assert scores == {"holdout_best_mse": 2.0, "holdout_matched_mse": 2.0}
    acc = np.array([[0.9, 0.2], [0.8, 0.7]])  # accuracy: higher is better
    scores, match = holdout_metrics(acc, "acc")
    assert match.tolist() == [0, 1]
    assert np.isclose(scores["holdout_best_acc"], 0.85)  # best: 0.9 and 0.8
    assert np.isclose(scores["holdout_matched_acc"], 0.8)  # matched: 0.9 and 0.7


def test_more_distributions_than_centers_leave_one_unmatched():
    assert match_centers(np.array([[1.0], [0.5], [3.0]]), True).tolist() == [-1, 0, -1]


def test_mixture_mae_matches_centers_to_distributions_first():
    true = np.array([[0.1, 0.9], [0.9, 0.1]])
    estimated = np.array([[0.8, 0.2], [0.2, 0.8]])  # center 1 serves distribution 0
    assert np.isclose(mixture_mae(true, estimated), 0.1)


def test_largest_weight_centers():
    centers = _weights(5.0, 7.0)
    out = largest_weight_centers(centers, torch.tensor([[0.2, 0.8], [0.6, 0.4], [0.1, 0.9]]))
    assert out["1.weight"].flatten().tolist() == [7.0, 5.0, 7.0]


class _Ctx:
    def __init__(self, engine, holdout, mixture) -> None:
        self.engine, self.holdout, self.truth = engine, holdout, GroundTruth(mixture=mixture)


def test_holdout_evaluator_reads_the_view():
    engine = _engine([(ONE, np.array([2.0]))], [(ONE, np.array([2.0]))])
    holdout = _engine([(ONE[:0], np.zeros(0))], [(ONE, np.array([1.0]))])
    evaluator = HoldoutProtocol(_Ctx(engine, holdout, np.array([[0.25, 0.75]])))
    u = torch.tensor([[0.5, 0.5]])
    view = View(client_models=_weights(0.0), centers=_weights(1.0, 3.0), importance=u)
    metrics = evaluator.evaluate(view)
    assert metrics["holdout_best_mse"] == 0.0 and metrics["train_mse"] == 4.0
    assert metrics["mixture_mae"] == 0.25
    assert evaluator.primary == "test_mse"
    assert evaluator.arrays(view) == {"importance": [[0.5, 0.5]], "holdout_mse": [[0.0, 4.0]],
                                      "center_of_distribution": [0]}
    bare = HoldoutProtocol(_Ctx(engine, None, None))
    assert "mixture_mae" not in bare.evaluate(view)
    assert bare.arrays(view) == {"importance": [[0.5, 0.5]]}


def test_runner_lays_out_one_holdout_set_per_distribution():
    data = fedsoft_regression(FedSoftRegressionOptions(samples_per_distribution=800,
                                                       test_per_distribution=100),
                              np.random.default_rng(0))
    part = fedsoft_mixture(data, MixtureOptions(num_clients=4, size_range=(20, 30),
                                                holdout_size=50), np.random.default_rng(1))
    held = holdout_data(data, part)
    assert held.test_n.tolist() == [50, 50] and held.train_n.tolist() == [0, 0]
    assert held.is_regression
    for s in range(2):
        x, y = partition_holdout(data, part, s)
        np.testing.assert_allclose(held.test_x[s].numpy(), x)
        np.testing.assert_allclose(held.test_y[s].numpy(), y.astype(np.float32))
