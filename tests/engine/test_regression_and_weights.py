"""Regression (squared error) and per-sample weights: the fast path equals the reference loop,
and both equal hand-computed numbers on tiny tensors."""

import numpy as np
import pytest
import torch

from clusterfl.engine import Adam, ClientData, Prox, ReferenceEngine, Sgd, VectorizedEngine
from clusterfl.engine.plan import make_plan
from clusterfl.training.models import build_model
from tests.engine.conftest import FEATURES, SIZES, make_data, stacked_params

CLIENTS = torch.tensor([3, 0, 4, 1])
TOL = {"rtol": 1e-4, "atol": 1e-5}
REG_MODELS = {
    "linreg": lambda: build_model("linreg", (FEATURES,), 0),
    "dnn": lambda: build_model("dnn", (FEATURES,), 0, {"hidden": 8}),
}
REG_CASES = [("linreg", "auto"), ("dnn", "bmm"), ("dnn", "vmap")]


def make_reg_data(sizes: tuple[int, ...] = SIZES, seed: int = 0) -> ClientData:
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=FEATURES)

    def part(n: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(size=(n, FEATURES)).astype(np.float32)
        return x, x @ theta + rng.normal(size=n)  # float64 targets: stored as float32

    return ClientData.from_lists([part(n) for n in sizes], [part(max(n // 2, 1)) for n in sizes])


def sizes() -> np.ndarray:
    return np.array(SIZES)[CLIENTS.numpy()]


def both(model, data, kernel):
    return VectorizedEngine(model, data, kernel), ReferenceEngine(model, data)


def assert_close(a, b):
    for k in a:
        torch.testing.assert_close(a[k], b[k], **TOL)


def test_regression_targets_are_float_and_models_have_one_output():
    data = make_reg_data()
    assert data.is_regression and data.train_y.dtype == torch.float32
    assert not make_data().is_regression
    assert REG_MODELS["linreg"]()[1].weight.shape == (1, FEATURES)
    assert REG_MODELS["linreg"]()[1].bias is None


@pytest.mark.parametrize(("name", "kernel"), REG_CASES)
def test_regression_training_matches_reference(name, kernel):
    model, data = REG_MODELS[name](), make_reg_data()
    params = stacked_params(model, len(CLIENTS))
    prox = Prox(mu=0.5, center=stacked_params(model, len(CLIENTS), seed=7),
                weight=torch.tensor([1.0, 0.2, 0.0, 2.0]))
    plan = make_plan(sizes(), batch_size=5, rng=np.random.default_rng(2), epochs=2)
    fast, ref = both(model, data, kernel)
    for rule, p in ((Sgd(lr=0.01), None), (Adam(lr=0.01), prox)):
        a = fast.train(params, CLIENTS, rule, plan, p)
        b = ref.train(params, CLIENTS, rule, plan, p)
        assert not torch.allclose(a[next(iter(a))], params[next(iter(a))])
        assert_close(a, b)


@pytest.mark.parametrize(("name", "kernel"), REG_CASES)
def test_regression_evaluate_and_sample_losses_are_squared_errors(name, kernel):
    model, data = REG_MODELS[name](), make_reg_data()
    fast, ref = both(model, data, kernel)
    params = stacked_params(model, len(CLIENTS))
    for split in ("train", "test"):
        (lf, cf), (lr, cr) = fast.evaluate(params, CLIENTS, split), ref.evaluate(params, CLIENTS,
                                                                                  split)
        torch.testing.assert_close(lf, lr, **TOL)
        assert (cf == 0).all() and (cr == 0).all()  # no "accuracy" for regression
    models = stacked_params(model, 2, seed=5)
    (lf, mf), (lr, mr) = fast.sample_losses(models, CLIENTS, "train"), ref.sample_losses(
        models, CLIENTS, "train")
    assert torch.equal(mf, mr)
    torch.testing.assert_close(lf, lr, **TOL)
    # by hand: client 3, sample 0, model 1
    one = {k: v[1] for k, v in models.items()}
    pred = torch.func.functional_call(model, one, (data.train_x[3, :1],))
    torch.testing.assert_close(lf[1, 0, 0], (pred[0, 0] - data.train_y[3, 0]) ** 2)


def test_linreg_sgd_step_with_sample_weights_by_hand():
    """One full-batch step: grad of sum_i q_i (w.x_i - y_i)^2 / B is 2/B sum_i q_i r_i x_i."""
    x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], np.float32)
    y = np.array([1.0, -1.0, 3.0])
    data = ClientData.from_lists([(x, y)], [(x, y)])
    model = build_model("linreg", (2,), 0)
    w0 = {"1.weight": torch.tensor([[[0.5, -0.5]]])}
    q = torch.tensor([[1.0, 0.5, 0.0]])
    plan = make_plan(np.array([3]), batch_size=3, rng=np.random.default_rng(0),
                     local_steps=1).with_sample_weights(q)
    # residuals w.x - y: 0.5 - 1 = -0.5; -1 + 1 = 0; 0 - 3 = -3 (weight 0)
    # grad = 2/3 * (1.0 * -0.5 * [1, 0] + 0.5 * 0 * [0, 2]) = [-1/3, 0]; w - 0.1 * grad
    expected = torch.tensor([[[0.5 + 0.1 / 3, -0.5]]])
    for engine in (VectorizedEngine(model, data), ReferenceEngine(model, data)):
        out = engine.train(w0, torch.tensor([0]), Sgd(lr=0.1), plan)
        torch.testing.assert_close(out["1.weight"], expected)


@pytest.mark.parametrize(("name", "kernel"), [("mlr", "bmm"), ("dnn", "bmm"), ("dnn", "vmap"),
                                              ("linreg", "auto")])
def test_sample_weights_match_reference(name, kernel):
    regression = name == "linreg"
    data = make_reg_data() if regression else make_data()
    model = (REG_MODELS[name]() if regression else
             build_model(name, (FEATURES,), 4, {"hidden": 8} if name == "dnn" else None))
    params = stacked_params(model, len(CLIENTS))
    q = torch.rand(len(CLIENTS), max(SIZES), generator=torch.Generator().manual_seed(3))
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(4), epochs=2)
    weighted = plan.with_sample_weights(q)
    fast, ref = both(model, data, kernel)
    a = fast.train(params, CLIENTS, Adam(lr=0.01), weighted)
    assert_close(a, ref.train(params, CLIENTS, Adam(lr=0.01), weighted))
    plain = fast.train(params, CLIENTS, Adam(lr=0.01), plan)
    assert not torch.allclose(a[next(iter(a))], plain[next(iter(a))])  # weights did something
    ones = plan.with_sample_weights(torch.ones_like(q))
    for k, v in fast.train(params, CLIENTS, Adam(lr=0.01), ones).items():
        assert torch.equal(v, plain[k])  # weight 1 is exactly the unweighted engine


def test_zero_weights_leave_sgd_models_unchanged():
    model, data = REG_MODELS["linreg"](), make_reg_data()
    params = stacked_params(model, len(CLIENTS))
    plan = make_plan(sizes(), batch_size=4, rng=np.random.default_rng(4), epochs=1)
    zero = plan.with_sample_weights(torch.zeros(len(CLIENTS), max(SIZES)))
    out = VectorizedEngine(model, data).train(params, CLIENTS, Sgd(lr=0.1), zero)
    for k in params:
        assert torch.equal(out[k], params[k])
