"""FedALA (algorithms/fedala.py): its pure steps with exact numbers (the
weight update and clip, the subset plan, the stopping rule), two rounds by hand (the first
ALA learns W over several epochs, the second one epoch from the kept W), both engines agree,
bad input, and a seed through the runner."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms.fedala import (
    FedAlaHyper,
    LearnAggregationWeights,
    converged,
    subset_plan,
)
from clusterfl.core.errors import UserError
from tests.algorithms.split_problem import (
    HEAD,
    TIGHT,
    assert_engines_agree,
    assert_models_close,
    build,
    client_xy,
    gradients,
    mlp_loss,
    row,
    run_twice,
    runner_problem,
    sgd_steps,
    timeless,
    two_clients,
    unequal_clients,
)


class FixedOracle:
    def __init__(self, grads):
        self.grads_at = None
        self.fixed = grads

    def grads(self, params):
        self.grads_at = set(params)
        return self.fixed


def test_weight_step_and_clip_by_hand():
    """W - eta * grad * gap = (1 - 0.2, 0.5 + 0.3, 0.2 - 0.5) -> clipped (0.8, 0.8, 0);
    theta = local + gap * W = (1 + 1.6, 1 - 0.8, 1 + 0)."""
    stack = {"a": torch.zeros(1, 3), "b": torch.full((1, 2), 7.0),
             "ala.weight.a": torch.tensor([[1.0, 0.5, 0.2]]),
             "ala.local.a": torch.ones(1, 3), "ala.gap.a": torch.tensor([[2.0, -1.0, 1.0]])}
    oracle = FixedOracle({"a": torch.tensor([[0.1, 0.3, 0.5]]), "b": torch.ones(1, 2)})
    LearnAggregationWeights(eta=1.0, learned=("a",)).step_(stack, {}, oracle, None)
    assert oracle.grads_at == {"a", "b"}  # only the model goes to the oracle
    torch.testing.assert_close(stack["ala.weight.a"], torch.tensor([[0.8, 0.8, 0.0]]))
    torch.testing.assert_close(stack["a"], torch.tensor([[2.6, 0.2, 1.0]]))
    assert torch.equal(stack["b"], torch.full((1, 2), 7.0))  # a lower layer: not touched


def test_subset_plan_walks_each_order_once():
    plan = subset_plan([np.array([4, 1, 3]), np.array([0, 2])], batch_size=2)
    assert plan.index.tolist() == [[[4, 1], [0, 2]], [[3, 0], [0, 0]]]
    assert plan.mask.tolist() == [[[True, True], [True, True]], [[True, False], [False, False]]]


def test_stopping_rule():
    assert not converged([1.0, 1.2], num_pre_loss=2, threshold=0.1)  # not more than 2 yet
    assert converged([1.0, 1.2, 1.1], num_pre_loss=2, threshold=0.1)  # std(1.2, 1.1) = 0.05
    assert not converged([1.0, 1.5, 1.2], num_pre_loss=2, threshold=0.1)  # std 0.15


def ala_by_hand(data, c, global_model, local, weight, eta, epochs):
    """ALA of client c on all its samples (s = 1, one full batch per epoch): lower layer
    global, output layer local + (global - local) * W; W stepped and clipped per batch."""
    gap = {k: global_model[k] - local[k] for k in HEAD}
    theta = dict(global_model) | {k: local[k] + gap[k] * weight[k] for k in HEAD}
    weight = dict(weight)
    for _ in range(epochs):
        g = gradients(theta, *client_xy(data, c))
        for k in HEAD:
            weight[k] = (weight[k] - eta * g[k] * gap[k]).clamp(0.0, 1.0)
            theta[k] = local[k] + gap[k] * weight[k]
    return theta, weight


def test_two_rounds_by_hand():
    """Round 1: 2 full-batch SGD steps from the initial model, G = 0.4 L_0 + 0.6 L_1, then
    the first ALA (W = 1, 2 epochs: num_pre_loss 1 and a huge threshold stop it after the
    second recorded loss); round 2: training from the ALA models, then one ALA epoch from
    the kept W."""
    data = two_clients()
    hyper = {"eta": 40.0, "s": 1.0, "p": 2, "num_pre_loss": 1, "threshold": 1e9}
    algo = build("fedala", data, hyper)
    algo.setup()
    models = [row(algo.client_models(), c) for c in (0, 1)]
    weights = [{k: torch.ones_like(models[0][k]) for k in HEAD} for _ in (0, 1)]
    for round_, epochs in ((1, 2), (2, 1)):
        trained = [sgd_steps(models[c], *client_xy(data, c), lr=0.3, steps=2) for c in (0, 1)]
        global_model = {k: 0.4 * trained[0][k] + 0.6 * trained[1][k] for k in trained[0]}
        ala = [ala_by_hand(data, c, global_model, trained[c], weights[c], 40.0, epochs)
               for c in (0, 1)]
        models, weights = [m for m, _ in ala], [w for _, w in ala]
        algo.round(round_, algo.all_clients)
        assert algo.round_arrays() == {"ala_epochs": [epochs, epochs]}
        assert_models_close(algo.global_model, global_model)
        for c in (0, 1):
            assert_models_close(row(algo.client_models(), c), models[c])
            assert_models_close(row(algo.weights, c), weights[c])
    inside = torch.cat([w[k].flatten() for w in weights for k in HEAD])
    assert ((inside > 0) & (inside < 1)).any() and (inside == 1).any()  # W really learned


def test_first_ala_stops_at_the_cap_or_when_the_loss_settles():
    data = two_clients()
    capped = build("fedala", data, {"threshold": 1e-30, "max_start_epochs": 4}, rounds=2).run()
    assert capped.arrays["ala_epochs"] == [[4, 4], [1, 1]]
    settled = build("fedala", data, {"num_pre_loss": 3, "threshold": 1e9}, rounds=1).run()
    assert settled.arrays["ala_epochs"] == [[4, 4]]  # more than 3 losses recorded


def test_recorded_loss_is_the_training_loss_at_theta():
    data = two_clients()
    algo = build("fedala", data)
    algo.setup()
    losses = algo.training_loss(algo.client_models(), algo.all_clients)
    for c in (0, 1):
        expected = mlp_loss(row(algo.client_models(), c), *client_xy(data, c))
        torch.testing.assert_close(losses[c], expected, **TIGHT)


def test_engines_agree():
    assert_engines_agree("fedala", unequal_clients(), {"s": 0.7})


def test_p_beyond_the_model_is_a_one_line_error():
    algo = build("fedala", two_clients(), {"p": 5})
    with pytest.raises(UserError, match=r"^fedala.p: must be <= 4, the model's parameter "
                                        r"tensors \(1.weight, 1.bias, 3.weight, 3.bias\)$"):
        algo.setup()
    with pytest.raises(UserError, match=r"^k.s: must be in \(0, 1\], got 1.5$"):
        FedAlaHyper(s=1.5).validate("k")


def test_params_entry_and_a_seed_through_the_runner():
    _, algorithm, _, _ = runner_problem("fedala")
    assert algorithm.hyper == FedAlaHyper() == FedAlaHyper(eta=1.0, s=0.8, p=2, threshold=0.1,
                                                           num_pre_loss=10)
    first, again, other = run_twice("fedala")
    assert timeless(first) == timeless(again)
    assert timeless(first) != timeless(other)
    assert first.arrays["ala_epochs"][1] == [1] * 6  # 6 clients, one epoch after the first
    assert min(first.arrays["ala_epochs"][0]) >= 11  # more than num_pre_loss = 10 losses
