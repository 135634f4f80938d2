"""The fast path equals the per-client reference loop: same plan, same rule, same numbers.

Every test runs the vectorized engine with both kernels where the model allows (the bmm
kernel's hand-written backward and fused update, and vmap) against `ReferenceEngine`.
Clients are selected out of order and start from different models, so a mix-up of rows,
of the client sort, or of padding shows up as a mismatch.
"""

import numpy as np
import pytest
import torch

from clusterfl.engine import (
    Adam,
    BatchPlan,
    MoreauEnvelope,
    Prox,
    ReferenceEngine,
    Sgd,
    VectorizedEngine,
    make_plan,
)
from tests.engine.conftest import MODELS, SIZES, make_data, stacked_params

CLIENTS = torch.tensor([3, 0, 4, 1])  # out of order, one client left out
CASES = [("mlr", "bmm"), ("dnn", "bmm"), ("deep", "bmm"), ("dnn", "vmap"), ("tanh", "auto")]
TOL = {"rtol": 1e-4, "atol": 1e-5}
# the CPU's chunked layout, and the GPU's whole-round layout run eagerly (engine/program.py)
LAYOUT_CASES = [(*case, layout) for case in CASES for layout in ("chunked", "whole")]


def run_both(model_name, kernel, rule, plan, prox=None, data=None, layout="chunked"):
    model = MODELS[model_name]()
    data = data or make_data()
    params = stacked_params(model, len(CLIENTS))
    before = {k: v.clone() for k, v in params.items()}
    fast = VectorizedEngine(model, data, kernel, layout=layout).train_with_state(
        params, CLIENTS, rule, plan, prox)
    ref = ReferenceEngine(model, data).train_with_state(params, CLIENTS, rule, plan, prox)
    for k in params:  # the engines work on copies
        assert torch.equal(params[k], before[k])
    return fast, ref, before


def sizes() -> np.ndarray:
    return np.array(SIZES)[CLIENTS.numpy()]


def assert_params_close(a, b):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], **TOL)


def assert_moved(after, before):
    assert any(not torch.allclose(after[k], before[k]) for k in after)


@pytest.mark.parametrize(("model_name", "kernel", "layout"), LAYOUT_CASES)
def test_full_batch_gradient_descent(model_name, kernel, layout):
    plan = make_plan(sizes(), batch_size=64, rng=np.random.default_rng(0), local_steps=6)
    assert plan.mask.sum(2).tolist()[0] == sizes().tolist()  # really full batches
    (fast, _), (ref, _), before = run_both(model_name, kernel, Sgd(lr=0.3), plan,
                                           layout=layout)
    assert_moved(ref, before)
    for k in fast:
        torch.testing.assert_close(fast[k], ref[k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("model_name", "kernel", "layout"), LAYOUT_CASES)
def test_minibatches_same_plan(model_name, kernel, layout):
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(1), local_steps=9)
    (fast, _), (ref, _), before = run_both(model_name, kernel, Sgd(lr=0.2, weight_decay=0.01),
                                           plan, layout=layout)
    assert_moved(ref, before)
    assert_params_close(fast, ref)


@pytest.mark.parametrize(("model_name", "kernel", "layout"), LAYOUT_CASES)
def test_epochs_with_unequal_sizes_and_adam(model_name, kernel, layout):
    plan = make_plan(sizes(), batch_size=5, rng=np.random.default_rng(2), epochs=2)
    steps = plan.active.sum(0)
    assert len(set(steps.tolist())) > 1  # clients take different numbers of steps
    (fast, fs), (ref, rs), _ = run_both(model_name, kernel, Adam(lr=0.01), plan,
                                        layout=layout)
    assert_params_close(fast, ref)
    assert torch.equal(fs["t"], steps.to(fs["t"].dtype))  # each client's own step count
    assert_params_close(fs, rs)


@pytest.mark.parametrize(("model_name", "kernel", "layout"), LAYOUT_CASES)
def test_prox_with_per_client_weights(model_name, kernel, layout):
    model = MODELS[model_name]()
    center = stacked_params(model, len(CLIENTS), seed=7)
    prox = Prox(mu=0.5, center=center, weight=torch.tensor([1.0, 0.2, 0.0, 2.0]))
    plan = make_plan(sizes(), batch_size=5, rng=np.random.default_rng(3), epochs=1)
    for rule in (Sgd(lr=0.1), Adam(lr=0.01)):
        (fast, _), (ref, _), _ = run_both(model_name, kernel, rule, plan, prox, layout=layout)
        assert_params_close(fast, ref)


@pytest.mark.parametrize(("model_name", "kernel", "layout"), LAYOUT_CASES)
def test_moreau_envelope_returns_the_personalized_models(model_name, kernel, layout):
    rule = MoreauEnvelope(lr=0.05, personal_lr=0.05, lam=15.0, inner_steps=3, mu=0.001)
    plan = make_plan(sizes(), batch_size=5, rng=np.random.default_rng(4), epochs=1)
    (fast, fs), (ref, rs), _ = run_both(model_name, kernel, rule, plan, layout=layout)
    assert_params_close(fast, ref)
    theta_fast, theta_ref = rule.personalized(fs), rule.personalized(rs)
    assert_params_close(theta_fast, theta_ref)
    assert not torch.allclose(theta_fast[next(iter(fast))], fast[next(iter(fast))])


@pytest.mark.parametrize(("model_name", "kernel"), CASES)
def test_evaluate_and_sample_losses(model_name, kernel, data):
    model = MODELS[model_name]()
    fast, ref = VectorizedEngine(model, data, kernel), ReferenceEngine(model, data)
    params = stacked_params(model, len(CLIENTS))
    for split in ("train", "test"):
        for a, b in zip(fast.evaluate(params, CLIENTS, split), ref.evaluate(params, CLIENTS, split),
                        strict=True):
            torch.testing.assert_close(a, b, **TOL)
    models = stacked_params(model, 3, seed=5)  # M = 3 shared (cluster) models
    (lf, mf), (lr, mr) = fast.sample_losses(models, CLIENTS, "train"), ref.sample_losses(
        models, CLIENTS, "train")
    assert lf.shape == (3, len(CLIENTS), max(sizes()))
    assert torch.equal(mf, mr)
    assert mf.sum(1).tolist() == sizes().tolist()
    torch.testing.assert_close(lf, lr, **TOL)
    assert (lf[:, ~mf] == 0).all()
    # the model with the least loss differs between samples: models were really told apart
    assert len(set(lf.argmin(0)[mf].tolist())) > 1


def test_sample_losses_agree_with_evaluate(data):
    model = MODELS["dnn"]()
    engine = VectorizedEngine(model, data)
    one = stacked_params(model, 1)
    losses, _ = engine.sample_losses(one, CLIENTS, "test")
    per_client = {k: v.expand(len(CLIENTS), *v.shape[1:]) for k, v in one.items()}
    torch.testing.assert_close(losses[0].sum(1), engine.evaluate(per_client, CLIENTS, "test")[0])


def test_small_gather_blocks_give_the_same_result(monkeypatch):
    plan = make_plan(sizes(), batch_size=3, rng=np.random.default_rng(5), epochs=1)
    (whole, _), _, _ = run_both("dnn", "bmm", Sgd(lr=0.1), plan)
    monkeypatch.setattr("clusterfl.engine.vectorized.GATHER_BYTES", 1)  # one step per block
    (blocks, _), _, _ = run_both("dnn", "bmm", Sgd(lr=0.1), plan)
    for k in whole:
        assert torch.equal(whole[k], blocks[k])


@pytest.mark.parametrize("chunk_bytes", [1, 700])  # one client per chunk; chunks of 2
def test_client_chunks_give_the_same_result(monkeypatch, chunk_bytes):
    monkeypatch.setattr("clusterfl.engine.vectorized.CHUNK_BYTES", chunk_bytes)
    model = MODELS["dnn"]()  # 136 parameters = 544 bytes per client
    prox = Prox(mu=0.5, center=stacked_params(model, len(CLIENTS), seed=7),
                weight=torch.tensor([1.0, 0.2, 0.0, 2.0]))
    plan = make_plan(sizes(), batch_size=5, rng=np.random.default_rng(6), epochs=2)
    (fast, fs), (ref, rs), _ = run_both("dnn", "bmm", Adam(lr=0.01), plan, prox)
    assert_params_close(fast, ref)
    assert_params_close(fs, rs)


def test_no_clients_selected(data):
    model = MODELS["dnn"]()
    none = torch.zeros(0, dtype=torch.long)
    empty = {k: v[:0] for k, v in stacked_params(model, 1).items()}
    plan = make_plan(np.zeros(0, dtype=np.int64), batch_size=4, rng=np.random.default_rng(0),
                     epochs=1)
    out = VectorizedEngine(model, data).train(empty, none, Sgd(lr=0.1), plan)
    assert all(v.shape[0] == 0 for v in out.values())


def test_plans_whose_active_clients_are_no_prefix_are_refused(data):
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(0), local_steps=3)
    mask = plan.mask.clone()
    mask[1, 0] = False  # client 0 pauses at step 1: still fine, it sorts last
    gap = BatchPlan(plan.index, mask)
    (fast, _), (ref, _), _ = run_both("dnn", "bmm", Sgd(lr=0.1), gap)
    assert_params_close(fast, ref)
    mask[2, 1] = False  # and client 1 at step 2: no order makes both steps' actives a prefix
    model = MODELS["mlr"]()
    with pytest.raises(ValueError, match="prefix"):
        VectorizedEngine(model, data).train(stacked_params(model, len(CLIENTS)), CLIENTS,
                                            Sgd(lr=0.1), BatchPlan(plan.index, mask))


def test_bmm_kernel_is_chosen_only_for_linear_relu_stacks(data):
    from clusterfl.engine import BmmKernel, VmapKernel

    assert isinstance(VectorizedEngine(MODELS["dnn"](), data).kernel, BmmKernel)
    assert isinstance(VectorizedEngine(MODELS["tanh"](), data).kernel, VmapKernel)
    with pytest.raises(ValueError, match="bmm kernel"):
        VectorizedEngine(MODELS["tanh"](), data, "bmm")
