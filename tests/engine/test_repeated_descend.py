"""`BmmKernel.descend_repeated_` (pFedMe's K inner steps on one batch, the first layer's
weight stepped once) equals K calls of `descend_`, and the engines' pFedMe takes it."""

import numpy as np
import pytest
import torch

from clusterfl.engine import BmmKernel, MoreauEnvelope, VectorizedEngine, make_plan
from clusterfl.engine.kernels import Batch, BoundOracle, linear_relu_layers
from tests.engine.conftest import CLASSES, FEATURES, MODELS, make_data, stacked_params


def batch(clients: int, size: int = 6) -> Batch:
    g = torch.Generator().manual_seed(3)
    return Batch(torch.randn(clients, size, FEATURES, generator=g),
                 torch.randint(0, CLASSES, (clients, size), generator=g),
                 torch.full((clients, size), 1.0 / size))


@pytest.mark.parametrize("model_name", ["mlr", "dnn", "deep"])
@pytest.mark.parametrize(("steps", "decay", "pull", "anchored"), [
    (1, 0.0, 0.0, False), (2, 0.0, 0.0, False), (5, 1.35, 1.35, True),  # pFedMe's own
    (3, 0.2, 0.15, True), (4, 0.01, 0.0, True), (3, 0.05, 0.0, False)])
def test_repeated_descend_equals_the_step_loop(model_name, steps, decay, pull, anchored):
    model = MODELS[model_name]()
    layers = linear_relu_layers(model)
    assert layers is not None
    kernel = BmmKernel(layers)
    start = stacked_params(model, 3)
    anchor = stacked_params(model, 3, seed=5) if anchored else None
    loop = {k: v.clone() for k, v in start.items()}
    for _ in range(steps):
        kernel.descend_(loop, batch(3), 0.1, decay, anchor, pull)
    lazy = {k: v.clone() for k, v in start.items()}
    BoundOracle(kernel, batch(3)).descend_repeated_(lazy, steps, 0.1, decay, anchor, pull)
    for k in loop:
        torch.testing.assert_close(lazy[k], loop[k], rtol=1e-5, atol=1e-6)
        assert not torch.equal(lazy[k], start[k])


def test_per_client_coefficients_take_the_step_loop():
    model = MODELS["dnn"]()
    kernel = BmmKernel(linear_relu_layers(model) or [])
    start = stacked_params(model, 3)
    decay = torch.tensor([0.1, 0.2, 0.3])
    loop = {k: v.clone() for k, v in start.items()}
    for _ in range(3):
        kernel.descend_(loop, batch(3), 0.1, decay, start, decay)
    out = {k: v.clone() for k, v in start.items()}
    kernel.descend_repeated_(out, batch(3), 3, 0.1, decay, start, decay)
    for k in loop:
        assert torch.equal(out[k], loop[k])  # the very same calls


def test_pfedme_in_the_engine_takes_the_repeated_descend(monkeypatch):
    calls = []
    real = BmmKernel.descend_repeated_

    def spy(self, params, batch, steps, *args):
        calls.append(steps)
        real(self, params, batch, steps, *args)

    monkeypatch.setattr(BmmKernel, "descend_repeated_", spy)
    data = make_data()
    model = MODELS["dnn"]()
    plan = make_plan(data.train_n.numpy(), 4, np.random.default_rng(0), local_steps=2)
    rule = MoreauEnvelope(lr=0.05, personal_lr=0.05, lam=15.0, inner_steps=5)
    VectorizedEngine(model, data).train(stacked_params(model, 5), torch.arange(5), rule, plan)
    assert calls and set(calls) == {5}


def test_small_ops_run_on_one_thread_and_restore_the_setting():
    from clusterfl.engine.kernels import SMALL_OPS, small_ops

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with small_ops(SMALL_OPS - 1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with small_ops(SMALL_OPS):  # large enough for two threads: left alone
            assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError), small_ops(10):
            raise RuntimeError("restored on the way out too")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
