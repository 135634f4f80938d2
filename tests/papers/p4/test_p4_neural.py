"""Neural PFL-TC / PDL-TC and the true-cluster FedAvg oracle (P4's real-data extension):
the momentum by hand on a 2-parameter model, Option 2 with m = 1 is Option 1, the oracle with
one cluster is FedAvg, and PFL-TC recovers well-separated rotation clusters of tiny images."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms import ALGORITHMS, NeuralContext, Schedule
from clusterfl.algorithms.base import client_data
from clusterfl.algorithms.fedavg import FedAvgHyper
from clusterfl.data.dataset import Dataset
from clusterfl.engine import ENGINES, ClientData
from clusterfl.papers.p4.training.cluster_fedavg import ClusterFedAvgHyper
from clusterfl.papers.p4.training.neural import NeuralMomentumHyper
from clusterfl.partition.clustered import RotationOptions, rotation
from clusterfl.steps.clustering import flatten, unflatten
from clusterfl.training.models import build_model


def _regression_clients() -> ClientData:
    """One client, 3 samples (x, y) of a 1-feature regression: the model y^ = w x + b."""
    x = np.array([[1.0], [2.0], [-1.0]], np.float32)
    y = np.array([1.0, 0.0, 2.0], np.float32)
    return ClientData.from_lists([(x, y)], [(x, y)])


def _grad(w: float, b: float) -> np.ndarray:
    """d/d(w, b) of (1/3) sum_j (w x_j + b - y_j)^2 on `_regression_clients`' samples."""
    x, y = np.array([1.0, 2.0, -1.0]), np.array([1.0, 0.0, 2.0])
    r = w * x + b - y
    return np.array([np.mean(2 * r * x), np.mean(2 * r)])


def test_neural_momentum_is_alpha_g_plus_one_minus_alpha_m_by_hand():
    """From (w, b) = (0.5, -0.25), full batch, eta 0.1, alpha 0.3, one client and K = 1 (the
    center is the client's own momentum): m1 = g(x0), x1 = x0 - eta m1,
    m2 = 0.3 g(x1) + 0.7 m1, x2 = x1 - eta m2."""
    model = build_model("mlr", (1,), 0)
    data = _regression_clients()
    sched = Schedule(lr=0.1, rounds=2, local_steps=1, batch_size=3)
    ctx = NeuralContext.build(model, ENGINES["vectorized"](model, data), sched, seed=0)
    hyper = NeuralMomentumHyper(num_clusters=1, alpha=0.3, iterations=3)
    algo = ALGORITHMS.get("pfl_tc_neural")(hyper, ctx)
    algo.setup()
    algo.params = {"1.weight": torch.tensor([[[0.5]]]), "1.bias": torch.tensor([[-0.25]])}
    x0 = np.array([-0.25, 0.5])  # flatten's name order: bias, then weight
    m1 = _grad(0.5, -0.25)[::-1]
    algo.round(1, algo.all_clients)
    np.testing.assert_allclose(algo.momentum[0].numpy(), m1, rtol=1e-6)
    x1 = x0 - 0.1 * m1
    np.testing.assert_allclose(flatten(algo.params)[0].numpy(), x1, rtol=1e-6)
    algo.round(2, algo.all_clients)
    m2 = 0.3 * _grad(x1[1], x1[0])[::-1] + 0.7 * m1
    np.testing.assert_allclose(algo.momentum[0].numpy(), m2, rtol=1e-6)
    np.testing.assert_allclose(flatten(algo.params)[0].numpy(), x1 - 0.1 * m2, rtol=1e-6)


def test_unflatten_inverts_flatten():
    params = {"b": torch.arange(6.0).view(2, 3), "a": torch.arange(16.0).view(2, 2, 4)}
    back = unflatten(flatten(params), params)
    assert all(torch.equal(back[k], params[k]) for k in params)


def _rotated_images(seed: int = 0) -> Dataset:
    """3 classes of 6x6 images: a fixed random prototype per class plus small noise; no
    prototype is symmetric, so the 4 rotations make 4 distinct tasks."""
    rng = np.random.default_rng(seed)
    protos = rng.normal(size=(3, 1, 6, 6)).astype(np.float32)
    y = np.tile(np.arange(3), 160)
    x = protos[y] + 0.1 * rng.normal(size=(len(y), 1, 6, 6)).astype(np.float32)
    return Dataset(name="tiny_rotations", x=x, y=y, num_classes=3)


@pytest.fixture(scope="module")
def rotation_problem():
    dataset = _rotated_images()
    partition = rotation(dataset, RotationOptions(num_clients=8, rotations=4),
                         np.random.default_rng(1))
    return client_data(dataset, partition), partition.cluster


def _run(method: str, hyper, data, truth, rounds: int = 4, local_steps: int = 2):
    model = build_model("mlr", (1, 6, 6), 3)
    sched = Schedule(lr=0.2, rounds=rounds, local_steps=local_steps, batch_size=30)
    ctx = NeuralContext.build(model, ENGINES["vectorized"](model, data), sched, seed=0,
                              true_cluster=truth)
    return ALGORITHMS.get(method)(hyper, ctx).run()


def test_pfl_tc_recovers_well_separated_rotation_clusters(rotation_problem):
    data, truth = rotation_problem
    assert truth.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    history = _run("pfl_tc_neural", NeuralMomentumHyper(num_clusters=4), data, truth)
    assert [r["ari"] for r in history.records] == [1.0] * 4
    assert history.records[-1]["train_loss"] < history.records[0]["train_loss"]


def test_pdl_tc_runs_and_records_no_assignment(rotation_problem):
    data, truth = rotation_problem
    history = _run("pdl_tc_neural", NeuralMomentumHyper(num_clusters=4), data, truth)
    assert "ari" not in history.records[-1]
    assert history.records[-1]["train_loss"] < history.records[0]["train_loss"]


def test_option_2_with_one_local_step_is_option_1(rotation_problem):
    data, truth = rotation_problem
    one = _run("pfl_tc_neural", NeuralMomentumHyper(option=1), data, truth, local_steps=1)
    two = _run("pfl_tc_neural", NeuralMomentumHyper(option=2), data, truth, local_steps=1)
    assert one.records == two.records


def test_pfl_tc_with_separated_clusters_equals_the_oracle(rotation_problem):
    """alpha = 1, shared start, Option 2: x_i - eta * mean over i's cluster of the summed
    gradients is the cluster's FedAvg (uniform weights = sample weights: equal sizes)."""
    data, truth = rotation_problem
    assert len(set(data.train_n.tolist())) == 1
    pfl = _run("pfl_tc_neural", NeuralMomentumHyper(num_clusters=4, alpha=1.0, option=2),
               data, truth, rounds=3)
    oracle = _run("oracle_fedavg", ClusterFedAvgHyper(), data, truth, rounds=3)
    assert [r["ari"] for r in pfl.records] == [1.0] * 3
    for a, b in zip(pfl.records, oracle.records, strict=True):
        assert a["test_acc"] == pytest.approx(b["test_acc"], abs=1e-9)
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4)


def test_oracle_with_one_cluster_is_fedavg(rotation_problem):
    data, _ = rotation_problem
    one = np.zeros(data.num_clients, np.int64)
    oracle = _run("oracle_fedavg", ClusterFedAvgHyper(), data, one, rounds=3)
    fedavg = _run("fedavg", FedAvgHyper(), data, one, rounds=3)
    assert oracle.records == [r | {"ari": 1.0, "nmi": 1.0} for r in fedavg.records]
