"""The GPU path's round program (`engine/program.py`) computes what the reference loop does.

On the CPU the program runs eagerly: the very code a CUDA graph records (buffers loaded,
every batch gathered at once, all clients' steps), so its logic is tested on every machine.
The CUDA tests at the end record and replay it for real (skipped without a CUDA device).
"""

import numpy as np
import pytest
import torch

from clusterfl.engine import (
    Adam,
    MoreauEnvelope,
    Prox,
    ReferenceEngine,
    Sgd,
    VectorizedEngine,
    make_plan,
)
from tests.engine.conftest import MODELS, SIZES, make_data, stacked_params

CLIENTS = torch.tensor([3, 0, 4, 1])
TOL = {"rtol": 1e-4, "atol": 1e-5}
CUDA = torch.cuda.is_available()


def sizes() -> np.ndarray:
    return np.array(SIZES)[CLIENTS.numpy()]


def prox_for(model, device="cpu") -> Prox:
    return Prox(mu=0.5, center={k: v.to(device) for k, v in stacked_params(
        model, len(CLIENTS), seed=7).items()}, weight=torch.tensor([1.0, 0.2, 0.0, 2.0],
                                                                   device=device))


RULES = {
    "sgd": (Sgd(lr=0.2, weight_decay=0.01), False),
    "adam": (Adam(lr=0.01), False),
    "sgd_prox": (Sgd(lr=0.1), True),
    "adam_prox": (Adam(lr=0.01), True),
    "moreau": (MoreauEnvelope(lr=0.05, personal_lr=0.05, lam=15.0, inner_steps=3, mu=0.001),
               False),
}


def assert_close(a, b, **tol):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], **(tol or TOL))


@pytest.mark.parametrize("model_name", ["mlr", "dnn", "deep", "tanh"])
@pytest.mark.parametrize("rule_name", list(RULES))
def test_one_program_per_round_equals_the_reference(model_name, rule_name):
    model, data = MODELS[model_name](), make_data()
    rule, with_prox = RULES[rule_name]
    prox = prox_for(model) if with_prox else None
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(1), local_steps=7)
    params = stacked_params(model, len(CLIENTS))
    engine = VectorizedEngine(model, data, layout="whole")
    fast, fast_state = engine.train_with_state(params, CLIENTS, rule, plan, prox)
    ref, ref_state = ReferenceEngine(model, data).train_with_state(params, CLIENTS, rule, plan,
                                                                    prox)
    assert len(engine.programs.programs) == 1  # the round really ran as one program
    assert_close(fast, ref)
    assert_close(fast_state, ref_state)
    assert any(not torch.allclose(fast[k], params[k]) for k in params)


def test_weighted_plans_run_as_a_program():
    model, data = MODELS["dnn"](), make_data()
    q = torch.rand(len(CLIENTS), max(SIZES), generator=torch.Generator().manual_seed(3))
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(2),
                     local_steps=5).with_sample_weights(q)
    params = stacked_params(model, len(CLIENTS))
    engine = VectorizedEngine(model, data, layout="whole")
    fast = engine.train(params, CLIENTS, Sgd(lr=0.3), plan)
    assert len(engine.programs.programs) == 1
    assert_close(fast, ReferenceEngine(model, data).train(params, CLIENTS, Sgd(lr=0.3), plan))


def test_a_program_reloads_its_inputs_and_returns_tensors_of_the_callers_own():
    model, data = MODELS["dnn"](), make_data()
    engine = VectorizedEngine(model, data, layout="whole")
    rule = Adam(lr=0.01)
    results, first_copy = [], None
    for seed in (1, 2):  # same shape, other starting models, other batches
        params = stacked_params(model, len(CLIENTS), seed=seed)
        plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(seed), local_steps=4)
        out = engine.train(params, CLIENTS, rule, plan)
        assert_close(out, ReferenceEngine(model, data).train(params, CLIENTS, rule, plan))
        results.append(out)
        first_copy = first_copy or {k: v.clone() for k, v in out.items()}
    assert len(engine.programs.programs) == 1  # the second round reused the first's program
    assert_close(results[0], first_copy, rtol=0, atol=0)  # the replay left round 1's alone
    buffers = next(iter(engine.programs.programs.values())).params
    assert not any(results[1][k].data_ptr() == v.data_ptr() for k, v in buffers.items())


def test_full_batches_take_the_fast_path_with_the_masked_paths_numbers():
    """A round without padding skips the plan's bookkeeping (sort, masks, a [S, C, B] weight
    tensor): the program fills 1/B itself. Its numbers are the masked path's, bit for bit
    (an all-ones sample weight sends the same plan down that path), and a padded round of the
    same shape on the same program afterwards gets its own weights back."""
    model, data = MODELS["dnn"](), make_data((12, 9, 16, 20, 13))
    full_clients, padded_clients = torch.tensor([0, 2, 3, 4]), torch.tensor([0, 1, 2, 3])
    engine = VectorizedEngine(model, data, layout="whole")
    params, rule = stacked_params(model, 4), Sgd(lr=0.2)

    def plan_for(clients, seed=5):
        sizes_ = np.array([12, 9, 16, 20, 13])[clients.numpy()]
        return make_plan(sizes_, batch_size=4, rng=np.random.default_rng(seed), local_steps=3)

    full = plan_for(full_clients)
    assert bool(full.mask.all())
    fast = engine.train(params, full_clients, rule, full)
    program = next(iter(engine.programs.programs.values()))
    assert program.uniform
    ones = full.with_sample_weights(torch.ones(4, 20))
    masked = VectorizedEngine(model, data, layout="whole").train(params, full_clients, rule, ones)
    assert_close(fast, masked, rtol=0, atol=0)
    padded = plan_for(padded_clients)
    assert not bool(padded.mask.all())
    for clients, plan in ((padded_clients, padded), (full_clients, full)):
        out = engine.train(params, clients, rule, plan)
        assert program.uniform == bool(plan.mask.all())
        assert_close(out, ReferenceEngine(model, data).train(params, clients, rule, plan))
    assert len(engine.programs.programs) == 1  # one shape, one program, weights reloaded


@pytest.mark.parametrize("model_name", ["dnn", "deep"])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_lazy_first_layer_is_the_same_sgd(model_name, weighted):
    """Plain SGD's round with the first weight updated once at the end (x_t W_0^T minus the
    Gram-weighted earlier gradients) equals the reference loop's step-by-step SGD."""
    model, data = MODELS[model_name](), make_data()
    plan = make_plan(sizes(), batch_size=2, rng=np.random.default_rng(4), local_steps=7)
    if weighted:
        q = torch.rand(len(CLIENTS), max(SIZES), generator=torch.Generator().manual_seed(5))
        plan = plan.with_sample_weights(q)
    params, rule = stacked_params(model, len(CLIENTS)), Sgd(lr=0.3)
    engine = VectorizedEngine(model, data, layout="whole")
    out = engine.train(params, CLIENTS, rule, plan)
    assert next(iter(engine.programs.programs.values())).lazy
    ref = ReferenceEngine(model, data).train(params, CLIENTS, rule, plan)
    assert_close(out, ref)
    first = next(iter(params))  # the lazily updated weight really moved, as the loop's did
    assert not torch.allclose(out[first], params[first])


def test_the_lazy_first_layer_only_where_it_is_the_same_sgd_and_pays():
    from clusterfl.engine.choose import make_kernel
    from clusterfl.engine.program import LAZY_MAX_RATIO, lazy_first_layer

    model = MODELS["dnn"]()
    params = stacked_params(model, 2)
    width = params[next(iter(params))].shape[1]
    bmm, bf16 = make_kernel(model, "bmm"), make_kernel(model, "bmm", None, torch.bfloat16)
    few = int(LAZY_MAX_RATIO * width)
    assert lazy_first_layer(Sgd(lr=0.1), bmm, None, params, few)
    assert not lazy_first_layer(Sgd(lr=0.1), bmm, None, params, few + 1)  # Gram too large
    assert not lazy_first_layer(Sgd(lr=0.1, weight_decay=0.01), bmm, None, params, few)
    assert not lazy_first_layer(Sgd(lr=0.1), bmm, prox_for(model), params, few)
    assert not lazy_first_layer(Adam(lr=0.1), bmm, None, params, few)
    assert not lazy_first_layer(Sgd(lr=0.1), bf16, None, params, few)
    assert not lazy_first_layer(Sgd(lr=0.1), make_kernel(model, "vmap"), None, params, few)


def test_unequal_steps_fall_back_to_the_eager_whole_layout():
    model, data = MODELS["dnn"](), make_data()
    plan = make_plan(sizes(), batch_size=5, rng=np.random.default_rng(0), epochs=1)
    params = stacked_params(model, len(CLIENTS))
    engine = VectorizedEngine(model, data, layout="whole")
    out = engine.train(params, CLIENTS, Adam(lr=0.01), plan)
    assert engine.programs.programs == {}
    assert_close(out, ReferenceEngine(model, data).train(params, CLIENTS, Adam(lr=0.01), plan))


def test_the_program_cache_keeps_the_last_four_shapes():
    model, data = MODELS["mlr"](), make_data()
    engine = VectorizedEngine(model, data, layout="whole")
    params = stacked_params(model, len(CLIENTS))
    for steps in range(1, 7):
        plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(0), local_steps=steps)
        engine.train(params, CLIENTS, Sgd(lr=0.1), plan)
    assert [shape.steps for shape in engine.programs.programs] == [3, 4, 5, 6]


def test_layout_auto_is_chunked_on_the_cpu_and_choices_are_checked(data):
    model = MODELS["dnn"]()
    assert not VectorizedEngine(model, data).whole
    assert VectorizedEngine(model, data, layout="whole").whole
    assert not VectorizedEngine(model, data, layout="whole").capture  # no graphs on a CPU
    with pytest.raises(ValueError, match="layout: unknown value 'gpu'; allowed: auto"):
        VectorizedEngine(model, data, layout="gpu")
    with pytest.raises(ValueError, match="precision: unknown value 'fp16'; allowed: fp32, tf32"):
        VectorizedEngine(model, data, precision="fp16")
    with pytest.raises(ValueError, match="precision bf16: only for the bmm kernel"):
        VectorizedEngine(MODELS["tanh"](), data, precision="bf16")


@pytest.mark.parametrize("layout", ["chunked", "whole"])
def test_bf16_matmuls_stay_near_fp32_but_are_not_it(layout):
    model, data = MODELS["dnn"](), make_data()
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(1), local_steps=6)
    params = stacked_params(model, len(CLIENTS))
    rule = MoreauEnvelope(lr=0.05, personal_lr=0.05, lam=15.0, inner_steps=2)
    exact = VectorizedEngine(model, data, layout=layout).train(params, CLIENTS, rule, plan)
    bf16 = VectorizedEngine(model, data, layout=layout, precision="bf16")
    low = bf16.train(params, CLIENTS, rule, plan)
    assert all(v.dtype == torch.float32 for v in low.values())  # float32 master weights
    assert any(not torch.equal(low[k], exact[k]) for k in exact)
    assert_close(low, exact, rtol=0.05, atol=0.02)
    loss_low, _ = bf16.evaluate(low, CLIENTS, "test")
    loss_exact, _ = VectorizedEngine(model, data).evaluate(exact, CLIENTS, "test")
    torch.testing.assert_close(loss_low, loss_exact, rtol=0.05, atol=0.05)


def test_tf32_leaves_cpu_numbers_and_the_global_flag_alone():
    model, data = MODELS["dnn"](), make_data()
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(1), local_steps=3)
    params = stacked_params(model, len(CLIENTS))
    before = torch.backends.cuda.matmul.allow_tf32
    a = VectorizedEngine(model, data, precision="tf32").train(params, CLIENTS, Sgd(0.1), plan)
    b = VectorizedEngine(model, data).train(params, CLIENTS, Sgd(0.1), plan)
    assert torch.backends.cuda.matmul.allow_tf32 == before
    assert all(torch.equal(a[k], b[k]) for k in a)


# -- on a GPU: recorded and replayed ----------------------------------------------------------
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("rule_name", list(RULES))
def test_a_captured_round_equals_the_cpu_reference(rule_name):
    cpu_model, data = MODELS["dnn"](), make_data()
    rule, with_prox = RULES[rule_name]
    cuda = VectorizedEngine(MODELS["dnn"]().cuda(), on_cuda(data))
    assert cuda.whole and cuda.capture
    for seed in (1, 2):  # the second round is a replay with new inputs
        params = stacked_params(cpu_model, len(CLIENTS), seed=seed)
        plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(seed), local_steps=5)
        prox = prox_for(cpu_model) if with_prox else None
        ref = ReferenceEngine(cpu_model, data).train_with_state(params, CLIENTS, rule, plan, prox)
        got = cuda.train_with_state({k: v.cuda() for k, v in params.items()}, CLIENTS.cuda(),
                                    rule, plan, prox_for(cpu_model, "cuda") if with_prox else None)
        for mine, theirs in zip(got, ref, strict=True):
            assert_close({k: v.cpu() for k, v in mine.items()}, theirs)
    program = next(iter(cuda.programs.programs.values()))
    assert program.graph is not None and len(cuda.programs.programs) == 1


def on_cuda(data):
    from dataclasses import fields

    return type(data)(**{f.name: getattr(data, f.name).cuda() for f in fields(data)})
