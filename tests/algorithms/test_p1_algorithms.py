"""pFedMe, IFCA and pFedKM (P1 Table 2's algorithms): update rules by hand, K=1 == pFedMe,
and recovery of the synthetic clusters."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms import ALGORITHMS, NeuralContext, Schedule
from clusterfl.algorithms.base import client_data
from clusterfl.algorithms.ifca import Ifca, IfcaHyper
from clusterfl.algorithms.pfedkm import PFedKMHyper
from clusterfl.algorithms.pfedme import PFedMe, PFedMeHyper
from clusterfl.data.synthetic import ClusteredSyntheticOptions, clustered_synthetic
from clusterfl.engine import ENGINES, ClientData
from clusterfl.partition.schemes import NaturalOptions, natural
from clusterfl.training.models import build_model


def _zero_start(cls):
    class ZeroStart(cls):
        def initial_model(self):
            return {k: torch.zeros_like(v) for k, v in super().initial_model().items()}
    return ZeroStart


def _mlr_grad_at_zero(data, c: int) -> torch.Tensor:
    """d/dW of client c's mean cross-entropy at W = 0, b = 0 (3 classes): X^T(1/3 - Y)/n."""
    n = int(data.train_n[c])
    x, y = data.train_x[c, :n], data.train_y[c, :n]
    return (x.T @ (torch.full((n, 3), 1 / 3) - torch.eye(3)[y]) / n).T


def test_pfedme_round_by_hand(tiny_data):
    """From W=0, one full-batch local step with one inner step:
    theta = -plr*g, w = lr*lam*theta; global = (1-beta)*0 + beta*mean_c w_c."""
    model = build_model("mlr", (4,), 3)
    sched = Schedule(lr=0.1, rounds=1, local_steps=1, batch_size=9)
    ctx = NeuralContext.build(model, ENGINES["vectorized"](model, tiny_data), sched, seed=0)
    hyper = PFedMeHyper(beta=0.5, lam=2.0, personal_lr=0.3, inner_steps=1)
    algo = _zero_start(PFedMe)(hyper, ctx)
    algo.setup()
    algo.round(1, algo.all_clients)
    thetas = [-0.3 * _mlr_grad_at_zero(tiny_data, c) for c in range(3)]
    for c in range(3):
        torch.testing.assert_close(algo.personalized["1.weight"][c], thetas[c])
    local_mean = sum(0.1 * 2.0 * t for t in thetas) / 3
    torch.testing.assert_close(algo.global_model["1.weight"], 0.5 * local_mean)


def test_pfedme_sample_weighting_switch(tiny_data):
    model = build_model("mlr", (4,), 3)
    sched = Schedule(lr=0.1, rounds=1, local_steps=1, batch_size=9)
    ctx = NeuralContext.build(model, ENGINES["vectorized"](model, tiny_data), sched, seed=0)
    hyper = PFedMeHyper(beta=1.0, lam=2.0, personal_lr=0.3, inner_steps=1, weighting="samples")
    algo = _zero_start(PFedMe)(hyper, ctx)
    algo.setup()
    algo.round(1, algo.all_clients)
    sizes = [5, 9, 3]
    expected = sum(n * 0.1 * 2.0 * -0.3 * _mlr_grad_at_zero(tiny_data, c)
                   for c, n in enumerate(sizes)) / sum(sizes)
    torch.testing.assert_close(algo.global_model["1.weight"], expected)


@pytest.mark.parametrize("weighting", ["uniform", "samples"])
def test_ifca_gradient_averaging_by_hand(tiny_data, weighting):
    """Both clusters start at 0: every client picks cluster 0 (tie), and cluster 0 takes one
    step of the mean full-batch gradient, plain (Ghosh et al.'s option II mean, the default)
    or sample-weighted (the named variant); cluster 1 is untouched."""
    model = build_model("mlr", (4,), 3)
    sched = Schedule(lr=0.5, rounds=1, local_steps=7, batch_size=2)  # ignored by "gradient"
    ctx = NeuralContext.build(model, ENGINES["vectorized"](model, tiny_data), sched, seed=0)
    hyper = IfcaHyper(num_clusters=2, variant="gradient", weighting=weighting)
    algo = _zero_start(Ifca)(hyper, ctx)
    algo.setup()
    assert algo.clusters.tolist() == [0, 0, 0]
    algo.round(1, algo.all_clients)
    sizes = [5, 9, 3] if weighting == "samples" else [1, 1, 1]
    grad = sum(n * _mlr_grad_at_zero(tiny_data, c) for c, n in enumerate(sizes)) / sum(sizes)
    torch.testing.assert_close(algo.cluster_models["1.weight"][0], -0.5 * grad)
    assert not algo.cluster_models["1.weight"][1].any()


def _run(method: str, hyper, data, true_cluster=None, rounds: int = 3, engine="vectorized",
         model_name: str = "dnn"):
    model = build_model(model_name, tuple(data.train_x.shape[2:]), 3 if model_name != "syn"
                        else 10, {"hidden": 5} if model_name == "dnn" else {})
    sched = Schedule(lr=0.05, rounds=rounds, local_steps=3, batch_size=4)
    ctx = NeuralContext.build(model, ENGINES[engine](model, data), sched, seed=0,
                     true_cluster=true_cluster)
    return ALGORITHMS.get(method)(hyper, ctx).run()


def test_pfedkm_with_one_cluster_is_pfedme(tiny_data):
    common = {"beta": 0.7, "lam": 3.0, "personal_lr": 0.05, "inner_steps": 2}
    kmeans_one = _run("pfedkm", PFedKMHyper(num_clusters=1, **common), tiny_data)
    pfedme = _run("pfedme", PFedMeHyper(**common), tiny_data)
    for a, b in zip(kmeans_one.records, pfedme.records, strict=True):
        for key in ("test_acc", "test_loss", "train_loss"):
            assert a[key] == b[key]
    assert kmeans_one.arrays["cluster"][-1] == [0, 0, 0]


@pytest.mark.parametrize("method,hyper", [
    ("pfedme", PFedMeHyper(personal_lr=0.05, inner_steps=2)),
    ("pfedkm", PFedKMHyper(num_clusters=2, personal_lr=0.05, inner_steps=2)),
    ("ifca", IfcaHyper(num_clusters=2)),
])
def test_new_algorithms_match_on_both_engines(method, hyper, tiny_data):
    fast = _run(method, hyper, tiny_data)
    ref = _run(method, hyper, tiny_data, engine="reference")
    for a, b in zip(fast.records, ref.records, strict=True):
        assert a["test_acc"] == b["test_acc"]
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4)


@pytest.fixture(scope="module")
def synthetic_clusters():
    """P1's clustered synthetic generator, shrunk to 3 clusters x 6 clients, 20 features, with
    one label function per cluster and clients of a cluster sharing their input mean (with
    the literal per-client reading there is no cluster structure in the models to find)."""
    opts = ClusteredSyntheticOptions(clients_per_cluster=6, dimension=20, max_size=200,
                                     labeling="cluster", input_spread=0.1)
    dataset = clustered_synthetic(opts, np.random.default_rng(0))
    partition = natural(dataset, NaturalOptions(), np.random.default_rng(1))
    return client_data(dataset, partition), partition.cluster


def _run_synthetic(method: str, hyper, data, truth, rounds: int):
    model = build_model("mlr", (20,), 10)
    sched = Schedule(lr=0.005, rounds=rounds, local_steps=10, batch_size=20)
    ctx = NeuralContext.build(model, ENGINES["vectorized"](model, data), sched, seed=0,
                              true_cluster=truth)
    return ALGORITHMS.get(method)(hyper, ctx).run()


def test_pfedkm_recovers_the_three_synthetic_clusters(synthetic_clusters):
    data, truth = synthetic_clusters
    history = _run_synthetic("pfedkm", PFedKMHyper(num_clusters=3, lam=15.0, personal_lr=0.01),
                             data, truth, rounds=10)
    assert history.records[-1]["ari"] >= 0.9
    assert sorted(set(history.arrays["cluster"][-1])) == [0, 1, 2]
    assert history.records[-1]["kmeans_iterations"] >= 1


def test_both_recover_clusters_that_differ_in_their_label_function():
    """3 clusters whose labels are rotated copies of one linear rule: IFCA and pFedKM both find
    them after one round, and keep them."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(10, 4))
    truth = np.repeat([0, 1, 2], 6)

    def part(c: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(size=(n, 10)).astype(np.float32)
        return x, (np.argmax(x @ w, 1) + c) % 4

    data = ClientData.from_lists([part(c, 60) for c in truth], [part(c, 20) for c in truth])
    model = build_model("mlr", (10,), 4)
    sched = Schedule(lr=0.05, rounds=4, local_steps=10, batch_size=20)
    for method, hyper in [("ifca", IfcaHyper(num_clusters=3)),
                          ("pfedkm", PFedKMHyper(num_clusters=3, personal_lr=0.01))]:
        ctx = NeuralContext.build(model, ENGINES["vectorized"](model, data), sched, seed=0,
                         true_cluster=truth)
        history = ALGORITHMS.get(method)(hyper, ctx).run()
        assert [r["ari"] for r in history.records] == [1.0] * 4, method
        assert len(history.arrays["cluster"]) == 4


def test_ifca_follows_fedsoft_protocol_on_mixture_partitions():
    """With held-out sets per distribution, IFCA reports the P2 metrics: one-hot importance
    weights on its clusters, a [distribution x center] holdout matrix and the mixture MAE."""
    from tests.algorithms.soft_problem import build, mixture_context

    ctx = mixture_context(Schedule(lr=0.3, rounds=3, epochs=1, batch_size=10, optimizer="adam"))
    history = build("ifca", ctx, num_clusters=2).run()
    last = history.records[-1]
    u = np.array(history.arrays["importance"][-1])
    assert u.shape == (len(ctx.truth.mixture), 2) and set(u.sum(1)) == {1.0}
    assert u.argmax(1).tolist() == history.arrays["cluster"][-1]
    assert np.array(history.arrays["holdout_mse"][-1]).shape == (2, 2)
    assert {"mixture_mae", "holdout_best_mse", "local_train_mse", "test_mse"} <= last.keys()
