"""APFL (`algorithms/apfl.py`): two rounds by hand (adaptive and fixed alpha),
the step's projection of alpha onto [0, 1], both engines agree, one seed through the runner
is deterministic."""

import pytest
import torch

from clusterfl.algorithms.apfl import Apfl, ApflHyper, ApflStep
from clusterfl.core.errors import UserError
from clusterfl.engine.rules import descend_unfused_
from tests.algorithms.baselines import (
    assert_models_close,
    both_engines,
    context,
    grad,
    run_benchmark_entry,
    samples,
    two_clients,
)


@pytest.mark.parametrize("mode", ["adaptive", "fixed"])
def test_two_rounds_by_hand(mode):
    """Full batches, 2 local steps, lr 0.1, alpha 0.3: each step from (w, v, a):
    vbar = a v + (1 - a) w, w <- w - lr grad f(w), v <- v - lr a grad f(vbar),
    a <- clip(a - lr <v - w, grad f(vbar)>, 0, 1) (adaptive only); the server takes the
    plain mean of the w; clients are evaluated with a v + (1 - a) w^{t+1}."""
    data = two_clients()
    algo = Apfl(ApflHyper(alpha=0.3, alpha_mode=mode), context(data, lr=0.1, local_steps=2))
    algo.setup()
    w = dict(algo.global_model)
    v, a = [dict(w), dict(w)], [torch.tensor(0.3), torch.tensor(0.3)]
    for round_ in (1, 2):
        algo.round(round_, algo.all_clients)
        local = []
        for c in range(2):
            x, y = samples(data, c)
            w_c, v_c, a_c = dict(w), v[c], a[c]
            for _ in range(2):
                mixed = {k: a_c * v_c[k] + (1 - a_c) * w_c[k] for k in w}
                g_mixed, g_w = grad(mixed, x, y), grad(w_c, x, y)
                slope = sum(((v_c[k] - w_c[k]) * g_mixed[k]).sum() for k in w)
                new_a = (a_c - 0.1 * slope).clamp(0, 1) if mode == "adaptive" else a_c
                w_c = {k: w_c[k] - 0.1 * g_w[k] for k in w}
                v_c = {k: v_c[k] - 0.1 * a_c * g_mixed[k] for k in w}
                a_c = new_a
            local.append(w_c)
            v[c], a[c] = v_c, a_c
        w = {k: (local[0][k] + local[1][k]) / 2 for k in w}
    assert_models_close(algo.global_model, w)
    torch.testing.assert_close(algo.alpha, torch.stack(a), rtol=1e-6, atol=1e-6)
    assert (algo.alpha != 0.3).all() if mode == "adaptive" else (algo.alpha == 0.3).all()
    models = algo.client_models()
    for c in range(2):
        assert_models_close({k: t[c] for k, t in algo.personal.items()}, v[c])
        expected = {k: a[c] * v[c][k] + (1 - a[c]) * w[k] for k in w}
        assert_models_close({k: t[c] for k, t in models.items()}, expected)
    assert algo.round_metrics() == {"apfl_alpha": pytest.approx(float(sum(a) / 2))}


class ConstantOracle:
    """Every gradient is 1 everywhere."""

    def grads(self, params):
        return {k: torch.ones_like(v) for k, v in params.items()}

    def descend_(self, params, lr, decay=0.0, anchor=None, pull=0.0):
        descend_unfused_(self, params, lr, decay, anchor, pull)


def test_step_projects_alpha_onto_the_unit_interval():
    """w = 0, v = 1 (3 numbers per client), every gradient 1, lr 0.1: the alpha slope is
    <v - w, 1> = 3, so alpha 0.2 -> -0.1 -> 0 and 0.9 -> 0.6; w -> -0.1, v -> 1 - 0.1 alpha."""
    packed = {"w": torch.zeros(2, 3), "personal.w": torch.ones(2, 3),
              "alpha": torch.tensor([0.2, 0.9])}
    ApflStep(lr=0.1, names=("w",)).step_(packed, {}, ConstantOracle(), None)
    torch.testing.assert_close(packed["alpha"], torch.tensor([0.0, 0.6]))
    torch.testing.assert_close(packed["w"], torch.full((2, 3), -0.1))
    torch.testing.assert_close(packed["personal.w"],
                               torch.tensor([[0.98] * 3, [0.91] * 3]))


def test_adam_is_a_one_line_error(tiny_data):
    algo = Apfl(ApflHyper(), context(tiny_data, optimizer="adam"))
    with pytest.raises(UserError, match=r"^training\.optimizer: apfl takes plain SGD steps"):
        algo.setup()


def test_engines_agree():
    fast, ref = both_engines("apfl", ApflHyper(alpha=0.3))
    assert_models_close(fast.global_model, ref.global_model, tol=1e-4)
    assert_models_close(fast.client_models(), ref.client_models(), tol=1e-4)
    torch.testing.assert_close(fast.alpha, ref.alpha, rtol=1e-4, atol=1e-5)
    assert (fast.alpha != 0.3).sum() >= 3  # the clients that trained adapted their alpha


def test_runner_is_seed_deterministic(benchmark_params):
    assert benchmark_params.algorithm("apfl", paper="benchmark").hyper == ApflHyper(alpha=0.5)
    first, again = (run_benchmark_entry(benchmark_params, "apfl", seed=0) for _ in range(2))
    other = run_benchmark_entry(benchmark_params, "apfl", seed=1)
    assert first.records == again.records and first.arrays == again.arrays
    assert first.records != other.records
    assert first.records[-1]["test_acc"] > 0.3  # it learns: the majority class is 22 %
    assert first.records[-1]["apfl_alpha"] != 0.5
