"""`TrainOnly` (algorithms/train_only.py): the frozen parameters stay bit for bit,
the trainable ones take the inner rule's step with the full model's gradient (by hand), on
both engines."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms.train_only import GradientsOnce, TrainOnly
from clusterfl.engine import Adam, Prox, ReferenceEngine, Sgd, VectorizedEngine, make_plan
from clusterfl.training.models import build_model, init_params
from tests.algorithms.split_problem import (
    TIGHT,
    assert_models_close,
    client_xy,
    gradients,
    two_clients,
    unequal_clients,
)

HEAD = frozenset({"3.weight", "3.bias"})
CLIENTS = torch.tensor([1, 0])


def start(model, count: int, seed: int = 0):
    """`count` different models stacked."""
    draws = [init_params(model, torch.Generator().manual_seed(seed + i)) for i in range(count)]
    return {k: torch.stack([d[k] for d in draws]) for k in draws[0]}


def train(engine_cls, rule, plan, data, prox=None):
    model = build_model("dnn", (4,), 3, {"hidden": 3})
    params = start(model, len(CLIENTS))
    return params, engine_cls(model, data).train_with_state(params, CLIENTS, rule, plan, prox)


def test_one_full_batch_step_by_hand_and_the_frozen_part_bit_for_bit():
    data = two_clients()
    plan = make_plan(np.array([6, 4]), 8, np.random.default_rng(0), local_steps=1)
    params, (trained, state) = train(VectorizedEngine, TrainOnly(Sgd(0.5), HEAD), plan, data)
    assert state == {}
    for i, c in enumerate(CLIENTS.tolist()):
        before = {k: v[i] for k, v in params.items()}
        g = gradients(before, *client_xy(data, c))
        for k in ("1.weight", "1.bias"):  # frozen: not one bit moved
            assert torch.equal(trained[k][i], before[k])
        for k in HEAD:
            torch.testing.assert_close(trained[k][i], before[k] - 0.5 * g[k], **TIGHT)
            assert not torch.equal(trained[k][i], before[k])


@pytest.mark.parametrize("rule", [Sgd(0.3, weight_decay=0.01), Adam(0.05)])
def test_both_engines_agree_and_freeze_the_same(rule):
    data = unequal_clients()
    clients = torch.tensor([2, 0])
    plan = make_plan(np.array([3, 5]), 2, np.random.default_rng(1), epochs=2)
    model = build_model("dnn", (4,), 3, {"hidden": 3})
    params = start(model, 2)
    body = TrainOnly(rule, frozenset({"1.weight", "1.bias"}))
    fast, fast_state = VectorizedEngine(model, data).train_with_state(params, clients, body, plan)
    ref, ref_state = ReferenceEngine(model, data).train_with_state(params, clients, body, plan)
    for out in (fast, ref):
        for k in HEAD:
            assert torch.equal(out[k], params[k])
    assert_models_close(fast, ref, rtol=1e-4, atol=1e-6)
    if isinstance(rule, Adam):  # moments of the trainable parameters only
        assert set(fast_state) == {"m.1.weight", "m.1.bias", "v.1.weight", "v.1.bias", "t"}
        assert fast_state["t"].tolist() == [4.0, 6.0]  # 2 epochs of 3 and 5 samples, batch 2
        assert_models_close(fast_state, ref_state, rtol=1e-4, atol=1e-7)


def test_prox_pulls_only_the_trainable_part():
    data = two_clients()
    plan = make_plan(np.array([6, 4]), 8, np.random.default_rng(0), local_steps=1)
    model = build_model("dnn", (4,), 3, {"hidden": 3})
    center = start(model, 2, seed=10)
    prox = Prox(mu=2.0, center=center, weight=torch.tensor([1.0, 0.5]))
    params, (trained, _) = train(ReferenceEngine, TrainOnly(Sgd(0.1), HEAD), plan, data, prox)
    for i, c in enumerate(CLIENTS.tolist()):
        before = {k: v[i] for k, v in params.items()}
        g = gradients(before, *client_xy(data, c))
        pull = 2.0 * float(prox.weight[i])
        for k in HEAD:
            expected = before[k] - 0.1 * (g[k] + pull * (before[k] - center[k][i]))
            torch.testing.assert_close(trained[k][i], expected, **TIGHT)
        assert torch.equal(trained["1.weight"][i], before["1.weight"])


def test_gradients_are_handed_out_once():
    oracle = GradientsOnce({"a": torch.ones(1, 2)})
    assert torch.equal(oracle.grads({"a": torch.zeros(1, 2)})["a"], torch.ones(1, 2))
    with pytest.raises(RuntimeError, match="asked for gradients twice"):
        oracle.grads({"a": torch.zeros(1, 2)})
