"""Ditto (`algorithms/ditto.py`): two rounds by hand, the personal steps walk
the global steps' batches, both engines agree, one seed through the runner is deterministic."""

import pytest
import torch

from clusterfl.algorithms.ditto import Ditto, DittoHyper
from clusterfl.steps.aggregation import weighted_average
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


@pytest.mark.parametrize(("personal_steps", "weighting"), [(None, "samples"), (3, "uniform")])
def test_two_rounds_by_hand(personal_steps, weighting):
    """Full batches, 2 local steps: w_k = 2 SGD steps from w^t; v_k takes 2 (or
    `personal_steps`) steps v <- v - lr (grad F_k(v) + lam (v - w^t)) from its last v_k
    (w^0 at first); w^{t+1} = the n_k-weighted (or plain) mean; clients are evaluated
    with v_k."""
    data = two_clients()
    hyper = DittoHyper(lam=0.5, personal_steps=personal_steps, weighting=weighting)
    algo = Ditto(hyper, context(data, lr=0.1, local_steps=2))
    algo.setup()
    w = dict(algo.global_model)
    v = [dict(w), dict(w)]
    weights = SIZES if weighting == "samples" else (1, 1)
    for round_ in (1, 2):
        algo.round(round_, algo.all_clients)
        local = []
        for c in range(2):
            x, y = samples(data, c)
            w_c = dict(w)
            for _ in range(2):
                w_c = {k: w_c[k] - 0.1 * grad(w_c, x, y)[k] for k in w}
            local.append(w_c)
            for _ in range(personal_steps or 2):
                g = grad(v[c], x, y)
                v[c] = {k: v[c][k] - 0.1 * (g[k] + 0.5 * (v[c][k] - w[k])) for k in w}
        w = {k: (weights[0] * local[0][k] + weights[1] * local[1][k]) / sum(weights) for k in w}
    assert_models_close(algo.global_model, w)
    models = algo.client_models()
    for c in range(2):
        assert_models_close({k: t[c] for k, t in models.items()}, v[c])


def test_personal_steps_walk_the_global_steps_batches():
    """With lam = 0 the first round's personal update from v = w^0 is the global update
    itself when both take the same batches (minibatches of 2 here): the n_k-weighted mean of
    the v_k is w^1 bit for bit. With batches of its own (`personal_steps`) it is not."""
    for steps, same in ((None, True), (2, False)):
        algo = Ditto(DittoHyper(lam=0.0, personal_steps=steps),
                     context(two_clients(), lr=0.1, local_steps=2, batch_size=2))
        algo.setup()
        algo.round(1, algo.all_clients)
        mean = weighted_average(algo.client_models(), algo.train_sizes)
        equal = all(torch.equal(mean[k], v) for k, v in algo.global_model.items())
        assert equal == same


def test_unselected_clients_keep_their_personal_model(tiny_data):
    algo = Ditto(DittoHyper(lam=0.5), context(tiny_data, batch_size=2))
    algo.setup()
    before = {k: v.clone() for k, v in algo.personal.items()}
    algo.round(1, torch.tensor([0, 2]))
    for k, v in algo.personal.items():
        assert torch.equal(v[1], before[k][1]) and not torch.equal(v[0], before[k][0])


def test_engines_agree():
    fast, ref = both_engines("ditto", DittoHyper(lam=0.5))
    assert_models_close(fast.global_model, ref.global_model, tol=1e-4)
    assert_models_close(fast.client_models(), ref.client_models(), tol=1e-4)


def test_runner_is_seed_deterministic(benchmark_params):
    assert benchmark_params.algorithm("ditto", paper="benchmark").hyper == DittoHyper(lam=1.0)
    first, again = (run_benchmark_entry(benchmark_params, "ditto", seed=0) for _ in range(2))
    other = run_benchmark_entry(benchmark_params, "ditto", seed=1)
    assert first.records == again.records and first.arrays == again.arrays
    assert first.records != other.records
    assert first.records[-1]["test_acc"] > 0.3  # it learns: the majority class is 22 %
