"""The named losses (P3 Table 1: cross-entropy, MSE and BCE on one-hot targets): exact values
on a hand case, the bmm kernel's hand-written gradient against autograd, the vectorized
engine against the reference loop for each, and a one-line error for an unknown name."""

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from clusterfl.core.errors import UserError
from clusterfl.engine import Adam, ReferenceEngine, Sgd, VectorizedEngine, make_plan
from clusterfl.engine.losses import LOSSES, loss_grad, num_correct, sample_loss
from clusterfl.run.config import SuiteConfig
from tests.engine.conftest import MODELS, SIZES, make_data, stacked_params

# logits (ln 3, 0), label 0: softmax (3/4, 1/4), sigmoid (3/4, 1/2)
Z = torch.tensor([[math.log(3.0), 0.0]], dtype=torch.float64)
Y = torch.tensor([0])
HAND = {  # loss, d loss / d z
    "cross_entropy": (math.log(4 / 3), [-0.25, 0.25]),  # -ln 3/4; p - t
    # ((3/4 - 1)^2 + (1/4)^2) / 2; g = 2(p - t)/K = (-1/4, 1/4), sum g p = -1/8,
    # p * (g + 1/8) = (3/4 * -1/8, 1/4 * 3/8)
    "mse": (0.0625, [-0.09375, 0.09375]),
    # (-ln 3/4 - ln(1 - 1/2)) / 2; (sigmoid - t) / K = (-1/4 / 2, 1/2 / 2)
    "bce": ((math.log(4 / 3) + math.log(2)) / 2, [-0.125, 0.25]),
}
CLIENTS = torch.tensor([3, 0, 4, 1])
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("loss", LOSSES)
def test_each_loss_matches_the_hand_computed_value_and_gradient(loss):
    want_loss, want_grad = HAND[loss]
    assert sample_loss(Z, Y, loss).item() == pytest.approx(want_loss, abs=1e-12)
    dz = loss_grad(Z.clone(), Y, torch.tensor([1.0], dtype=torch.float64), loss)
    torch.testing.assert_close(dz, torch.tensor([want_grad], dtype=torch.float64))
    z = Z.clone().requires_grad_(True)  # the hand-written gradient is autograd's
    (auto,) = torch.autograd.grad(sample_loss(z, Y, loss).sum(), z)
    torch.testing.assert_close(dz, auto)
    assert num_correct(Z, Y).item() == 1.0  # prediction: the argmax under every loss


def test_cross_entropy_by_name_is_the_default_bit_for_bit():
    z = torch.randn(7, 5, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 4, 2, 2, 1, 3, 0])
    w = torch.rand(7, generator=torch.Generator().manual_seed(1))
    assert torch.equal(sample_loss(z, y, "cross_entropy"), sample_loss(z, y))
    assert torch.equal(loss_grad(z, y, w, "cross_entropy"), loss_grad(z, y, w))
    assert not torch.allclose(sample_loss(z, y, "mse"), sample_loss(z, y))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(("model_name", "kernel"), [("dnn", "bmm"), ("dnn", "vmap"),
                                                    ("tanh", "auto")])
def test_vectorized_equals_reference_loop_for_each_loss(loss, model_name, kernel):
    model, data = MODELS[model_name](), make_data()
    params = stacked_params(model, len(CLIENTS))
    sizes = np.array(SIZES)[CLIENTS.numpy()]
    fast = VectorizedEngine(model, data, kernel, loss=loss)
    ref = ReferenceEngine(model, data, loss=loss)
    for rule, plan in [
        (Sgd(lr=0.5), make_plan(sizes, 4, np.random.default_rng(1), local_steps=9)),
        (Adam(lr=0.01), make_plan(sizes, 5, np.random.default_rng(2), epochs=2)),
    ]:
        a, b = fast.train(params, CLIENTS, rule, plan), ref.train(params, CLIENTS, rule, plan)
        assert any(not torch.allclose(b[k], params[k]) for k in b)  # it trained
        for k in a:
            torch.testing.assert_close(a[k], b[k], rtol=1e-4, atol=1e-5)
    for split in ("train", "test"):
        (lf, cf), (lr, cr) = fast.evaluate(params, CLIENTS, split), ref.evaluate(
            params, CLIENTS, split)
        torch.testing.assert_close(lf, lr, rtol=1e-5, atol=1e-6)
        assert torch.equal(cf, cr)
    (sf, mf), (sr, mr) = fast.sample_losses(params, CLIENTS, "train"), ref.sample_losses(
        params, CLIENTS, "train")
    torch.testing.assert_close(sf, sr, rtol=1e-5, atol=1e-6)
    assert torch.equal(mf, mr)
    # evaluate's loss is the named loss: the sum of the per-sample losses
    x, y = data.test_x[3, : data.test_n[3]], data.test_y[3, : data.test_n[3]]  # CLIENTS[0]
    logits = torch.func.functional_call(model, {k: v[0] for k, v in params.items()}, (x,))
    torch.testing.assert_close(lr[0], sample_loss(logits, y, loss).sum())


def test_the_losses_train_differently():
    model, data = MODELS["dnn"](), make_data()
    params = stacked_params(model, len(CLIENTS))
    plan = make_plan(np.array(SIZES)[CLIENTS.numpy()], 4, np.random.default_rng(1),
                     local_steps=3)
    out = [VectorizedEngine(model, data, loss=loss).train(params, CLIENTS, Sgd(0.5), plan)
           for loss in LOSSES]
    default = VectorizedEngine(model, data).train(params, CLIENTS, Sgd(0.5), plan)
    assert all(torch.equal(out[0][k], default[k]) for k in default)
    for other in out[1:]:
        assert all(not torch.allclose(other[k], out[0][k]) for k in default)


def test_a_named_loss_on_regression_targets_is_refused():
    reg = make_data()
    reg = type(reg)(reg.train_x, reg.train_y.float(), reg.train_n, reg.test_x,
                    reg.test_y.float(), reg.test_n)
    with pytest.raises(ValueError, match="needs class labels"):
        ReferenceEngine(MODELS["dnn"](), reg, loss="mse")


def test_an_unknown_loss_in_params_is_one_line_naming_key_and_allowed_names():
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    p3 = yaml.safe_load((ROOT / "src/clusterfl/papers/p3/params.yaml").read_text())
    p3 = copy.deepcopy(p3)
    p3["experiments"]["p3_basic_motions_short"]["training"]["loss"] = "hinge"
    with pytest.raises(UserError) as info:
        SuiteConfig(Path("params.yaml"), raw, paper_params={"p3": p3})
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith("experiments.p3_basic_motions_short.training.loss: 'hinge' is not "
                            "allowed; allowed: cross_entropy, mse, bce")
    with pytest.raises(ValueError, match=r"^loss 'hinge' is not allowed; allowed: "
                                         r"cross_entropy, mse, bce$"):
        VectorizedEngine(MODELS["dnn"](), make_data(), loss="hinge")
