"""FedProx (`algorithms/fedprox.py`): a round by hand, mu = 0 is FedAvg bit
for bit, both engines agree, and one seed through the runner is deterministic."""

import pytest

from clusterfl.algorithms import ALGORITHMS
from clusterfl.algorithms.fedavg import FedAvgHyper
from clusterfl.algorithms.fedprox import FedProx, FedProxHyper
from clusterfl.core.errors import UserError
from clusterfl.core.options import build_options
from tests.algorithms.baselines import (
    SIZES,
    assert_models_close,
    both_engines,
    context,
    grad,
    run_benchmark_entry,
    samples,
    two_clients,
)


def test_one_round_by_hand():
    """Two full-batch steps w <- w - lr (grad F_k(w) + mu (w - w0)) per client from w0, then
    the n_k-weighted mean (3 and 5 samples); every client is evaluated with it."""
    data = two_clients()
    algo = FedProx(FedProxHyper(mu=0.5), context(data, lr=0.1, local_steps=2))
    algo.setup()
    w0 = dict(algo.global_model)
    algo.round(1, algo.all_clients)
    local = []
    for c in range(2):
        w = dict(w0)
        for _ in range(2):
            g = grad(w, *samples(data, c))
            w = {k: w[k] - 0.1 * (g[k] + 0.5 * (w[k] - w0[k])) for k in w}
        local.append(w)
    expected = {k: (SIZES[0] * local[0][k] + SIZES[1] * local[1][k]) / sum(SIZES) for k in w0}
    assert_models_close(algo.global_model, expected)
    for k, v in algo.client_models().items():
        assert_models_close({k: v[0]}, {k: expected[k]})
        assert_models_close({k: v[1]}, {k: expected[k]})


def test_mu_zero_is_fedavg_bit_for_bit(tiny_data):
    prox = FedProx(FedProxHyper(mu=0.0), context(tiny_data, rounds=3, batch_size=2))
    fedavg = ALGORITHMS.get("fedavg")(FedAvgHyper(), context(tiny_data, rounds=3, batch_size=2))
    a, b = prox.run(), fedavg.run()
    assert a.records == b.records
    for k, v in fedavg.global_model.items():
        assert prox.global_model[k].equal(v)


def test_engines_agree():
    fast, ref = both_engines("fedprox", FedProxHyper(mu=0.3))
    assert_models_close(fast.global_model, ref.global_model, tol=1e-4)


def test_negative_mu_is_a_one_line_error():
    with pytest.raises(UserError, match=r"^algorithms\.fedprox\.mu: must be >= 0, got -1\.0$"):
        build_options(FedProxHyper, {"mu": -1.0}, "algorithms.fedprox")


def test_runner_is_seed_deterministic(benchmark_params):
    assert benchmark_params.algorithm("fedprox", paper="benchmark").hyper == FedProxHyper(mu=0.01)
    first, again = (run_benchmark_entry(benchmark_params, "fedprox", seed=0) for _ in range(2))
    other = run_benchmark_entry(benchmark_params, "fedprox", seed=1)
    assert first.records == again.records and first.arrays == again.arrays
    assert first.records != other.records
    assert {"test_acc", "train_loss"} <= first.records[-1].keys()
    assert first.records[-1]["test_acc"] > 0.3  # it learns: the majority class is 22 %
