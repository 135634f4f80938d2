"""`ConvKernel` equals the per-client reference loop on convolutional clients, in both of its
layouts (per client, the CPU's; grouped, CUDA's, run here on the CPU), and the engine picks
it for CNNs only (the Linear-ReLU path keeps the bmm kernel)."""

import numpy as np
import pytest
import torch
from torch import nn

import clusterfl.engine.conv as conv
from clusterfl.engine import (
    Adam,
    BmmKernel,
    ClientData,
    ConvKernel,
    MoreauEnvelope,
    Prox,
    ReferenceEngine,
    Sgd,
    VectorizedEngine,
    VmapKernel,
    make_kernel,
    make_plan,
)
from clusterfl.engine.kernels import Batch
from clusterfl.training.models import build_model
from tests.engine.conftest import stacked_params

SHAPE, CLASSES = (3, 12, 12), 4
SIZES = (9, 14, 5, 11)
CLIENTS = torch.tensor([2, 0, 3])  # out of order, one left out
TOL = {"rtol": 1e-4, "atol": 1e-5}
MODELS = {
    "cnn": lambda: build_model("cnn", SHAPE, CLASSES, {"channels": [2, 3], "kernel_size": 3,
                                                       "padding": 1, "hidden": 6}),
    "cnn_pad0": lambda: build_model("cnn", SHAPE, CLASSES, {"channels": [3, 4], "kernel_size": 3,
                                                            "padding": 0, "hidden": 5}),
    "cnn6": lambda: build_model("cnn6", SHAPE, CLASSES, {"channels": [2, 3, 2, 3],
                                                         "hidden": [7, 5]}),
}
CASES = [(m, grouped) for m in MODELS for grouped in (False, True)]


def make_data(sizes: tuple[int, ...] = SIZES) -> ClientData:
    rng = np.random.default_rng(0)

    def part(n: int) -> tuple[np.ndarray, np.ndarray]:
        return rng.normal(size=(n, *SHAPE)).astype(np.float32), rng.integers(0, CLASSES, n)

    return ClientData.from_lists([part(n) for n in sizes], [part(n // 2 + 1) for n in sizes])


def engines(name: str, grouped: bool, layout: str = "chunked"
            ) -> tuple[nn.Module, VectorizedEngine, ReferenceEngine]:
    model, data = MODELS[name](), make_data()
    fast = VectorizedEngine(model, data, layout=layout)  # type: ignore[arg-type]
    assert isinstance(fast.kernel, ConvKernel)
    fast.kernel.grouped = grouped
    return model, fast, ReferenceEngine(model, data)


def sizes() -> np.ndarray:
    return np.array(SIZES)[CLIENTS.numpy()]


def assert_close(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], **TOL)


def test_the_engine_picks_the_conv_kernel_for_cnns_only():
    for name in MODELS:
        assert isinstance(make_kernel(MODELS[name]()), ConvKernel)
    dnn = build_model("dnn", (12,), 4)
    assert isinstance(make_kernel(dnn), BmmKernel)  # the Linear-ReLU path is untouched
    strided = nn.Sequential(nn.Conv2d(3, 2, 3, stride=2), nn.ReLU(), nn.Flatten(),
                            nn.Linear(50, 4))
    avg = nn.Sequential(nn.Conv2d(3, 2, 3), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                        nn.Linear(50, 4))
    for model in (strided, avg):
        assert isinstance(make_kernel(model), VmapKernel)
        with pytest.raises(ValueError, match="conv kernel needs"):
            make_kernel(model, "conv")
    with pytest.raises(ValueError, match="bf16"):
        make_kernel(MODELS["cnn"](), matmul_dtype=torch.bfloat16)
    assert isinstance(make_kernel(MODELS["cnn"](), "vmap"), VmapKernel)


@pytest.mark.parametrize(("name", "grouped"), CASES)
def test_gradients_equal_autograd(name, grouped):
    model, fast, _ = engines(name, grouped)
    params = stacked_params(model, 3)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 5, *SHAPE, generator=g)
    y = torch.randint(0, CLASSES, (3, 5), generator=g)
    w = torch.rand(3, 5, generator=g)
    ours = fast.kernel.grads(params, Batch(x, y, w))
    theirs = VmapKernel(model).grads(params, Batch(x, y, w))
    assert_close(ours, theirs)
    torch.testing.assert_close(fast.kernel.logits(params, x),
                               VmapKernel(model).logits(params, x), **TOL)


@pytest.mark.parametrize(("name", "grouped"), CASES)
def test_minibatch_sgd_with_weight_decay(name, grouped):
    model, fast, ref = engines(name, grouped)
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(1), local_steps=5)
    params = stacked_params(model, len(CLIENTS))
    rule = Sgd(lr=0.1, weight_decay=0.01)
    out = fast.train(params, CLIENTS, rule, plan)
    assert_close(out, ref.train(params, CLIENTS, rule, plan))
    assert all(not torch.allclose(out[k], params[k]) for k in out)  # every layer moved


@pytest.mark.parametrize(("name", "grouped"), CASES)
@pytest.mark.parametrize("layout", ["chunked", "whole"])
def test_epochs_with_unequal_sizes_adam_and_per_client_prox(name, grouped, layout):
    model, fast, ref = engines(name, grouped, layout)
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(2), epochs=2)
    params = stacked_params(model, len(CLIENTS))
    center = stacked_params(model, len(CLIENTS), seed=7)
    prox = Prox(0.5, center, torch.tensor([1.0, 0.3, 2.0]))
    for rule in (Adam(lr=0.01), Sgd(lr=0.05)):
        fs, ss = fast.train_with_state(params, CLIENTS, rule, plan, prox)
        fr, sr = ref.train_with_state(params, CLIENTS, rule, plan, prox)
        assert_close(fs, fr)
        assert_close(ss, sr)


@pytest.mark.parametrize(("name", "grouped"), CASES)
def test_moreau_envelope_w_and_theta(name, grouped):
    model, fast, ref = engines(name, grouped)
    plan = make_plan(sizes(), batch_size=5, rng=np.random.default_rng(3), local_steps=3)
    params = stacked_params(model, len(CLIENTS))
    rule = MoreauEnvelope(lr=0.05, personal_lr=0.05, lam=3.0, inner_steps=3, mu=0.001)
    (fw, fs), (rw, rs) = (e.train_with_state(params, CLIENTS, rule, plan) for e in (fast, ref))
    assert_close(fw, rw)
    assert_close(MoreauEnvelope.personalized(fs), MoreauEnvelope.personalized(rs))


@pytest.mark.parametrize(("name", "grouped"), CASES)
def test_evaluate_and_sample_losses_in_small_chunks(name, grouped, monkeypatch):
    monkeypatch.setattr(conv, "LOGIT_SAMPLES", 4)  # several chunks per client
    model, fast, ref = engines(name, grouped)
    params = stacked_params(model, len(CLIENTS))
    for split in ("train", "test"):
        for a, b in zip(fast.evaluate(params, CLIENTS, split),
                        ref.evaluate(params, CLIENTS, split), strict=True):
            torch.testing.assert_close(a, b, **TOL)
    models = stacked_params(model, 2, seed=4)
    (fl, fm), (rl, rm) = (e.sample_losses(models, CLIENTS, "test") for e in (fast, ref))
    assert torch.equal(fm, rm)
    torch.testing.assert_close(fl, rl, **TOL)
