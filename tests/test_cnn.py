"""The `cnn` model: shapes, and the vectorized engine against the per-client loop."""

import numpy as np
import pytest
import torch

from clusterfl.core.errors import UserError
from clusterfl.engine import ENGINES, ClientData, Sgd, make_plan
from clusterfl.training.models import build_model, init_params


def test_cnn_output_shape_and_pooling_arithmetic():
    model = build_model("cnn", (3, 32, 32), 10, {"channels": [4, 8], "hidden": 16})
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    # 32 -> pool 16 -> pool 8: the first fc layer sees 8 channels x 8 x 8
    assert model[7].in_features == 8 * 8 * 8
    no_pad = build_model("cnn", (1, 28, 28), 26, {"channels": [2, 3], "padding": 0})
    assert no_pad[7].in_features == 3 * 4 * 4  # 28-4=24 -> 12 -> 12-4=8 -> 4
    with pytest.raises(UserError, match="cnn: needs images"):
        build_model("cnn", (60,), 10)


def test_cnn_trains_the_same_on_both_engines():
    rng = np.random.default_rng(0)
    parts = [(rng.normal(size=(n, 1, 8, 8)).astype(np.float32), rng.integers(0, 3, n))
             for n in (6, 9)]
    data = ClientData.from_lists(parts, parts)
    model = build_model("cnn", (1, 8, 8), 3, {"channels": [2, 3], "kernel_size": 3,
                                              "padding": 1, "hidden": 5})
    start = init_params(model, torch.Generator().manual_seed(0))
    stacked = {k: v.unsqueeze(0).repeat(2, *[1] * v.dim()) for k, v in start.items()}
    plan = make_plan(np.array([6, 9]), 4, np.random.default_rng(1), local_steps=3)
    clients = torch.arange(2)
    fast = ENGINES["vectorized"](model, data).train(stacked, clients, Sgd(0.1), plan)
    ref = ENGINES["reference"](model, data).train(stacked, clients, Sgd(0.1), plan)
    for k in fast:
        torch.testing.assert_close(fast[k], ref[k], rtol=1e-4, atol=1e-5)
    assert not torch.equal(fast["7.weight"], stacked["7.weight"])  # it did train


def test_cnn6_is_fedsofts_cifar_cnn():
    model = build_model("cnn6", (3, 32, 32), 10)
    convs = [m for m in model if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [32, 64, 128, 128, 256, 256]
    assert sum(isinstance(m, torch.nn.MaxPool2d) for m in model) == 3
    fc = [m for m in model if isinstance(m, torch.nn.Linear)]
    assert [(f.in_features, f.out_features) for f in fc] == [(4096, 1024), (1024, 512), (512, 10)]
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    with pytest.raises(UserError, match="channels"):
        build_model("cnn6", (3, 32, 32), 10, {"channels": [4, 8, 16]})


def test_xavier_normal_init_has_glorot_variance_and_zero_bias():
    model = build_model("cnn", (1, 28, 28), 10, {"channels": [20, 50], "hidden": 500})
    params = init_params(model, torch.Generator().manual_seed(0), "xavier_normal")
    conv2 = params["3.weight"]  # [50, 20, 5, 5]: fan_in 500, fan_out 1250
    assert abs(conv2.std().item() - (2 / (500 + 1250)) ** 0.5) < 0.002
    fc1 = params["7.weight"]  # [500, 2450]
    assert abs(fc1.std().item() - (2 / (2450 + 500)) ** 0.5) < 0.0005
    assert all(not params[k].any() for k in params if k.endswith("bias"))
    default = init_params(model, torch.Generator().manual_seed(0))
    assert default["7.bias"].abs().max() <= 1 / 2450**0.5 and default["7.bias"].any()
    again = init_params(model, torch.Generator().manual_seed(0), "xavier_normal")
    assert all(torch.equal(params[k], again[k]) for k in params)
