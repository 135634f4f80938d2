"""Per-FedAvg (`algorithms/perfedavg.py`): FO and HF rounds by hand on the
plan's consecutive batches D, D' (, D''), HF's finite difference against the exact
Hessian-vector product, the one-step personalization, both engines agree, and one seed
through the runner is deterministic."""

import copy

import numpy as np
import pytest
import torch

from clusterfl.algorithms.perfedavg import PerFedAvg, PerFedAvgHyper
from clusterfl.engine import BatchPlan, make_plan
from tests.algorithms.baselines import (
    SIZES,
    Model,
    assert_models_close,
    both_engines,
    context,
    grad,
    run_benchmark_entry,
    samples,
    two_clients,
)

ALPHA, BETA, DELTA = 0.05, 0.1, 0.001


def hessian_vector(w: Model, x: torch.Tensor, y: torch.Tensor, vector: Model) -> Model:
    """H(w) v of the mean cross-entropy on (x, y), exactly (autograd, double backward)."""
    leaves = {k: t.detach().clone().requires_grad_(True) for k, t in w.items()}
    logits = x @ leaves["1.weight"].T + leaves["1.bias"]
    g = torch.autograd.grad(torch.nn.functional.cross_entropy(logits, y), list(leaves.values()),
                            create_graph=True)
    dot = sum((gk * vector[k]).sum() for gk, k in zip(g, leaves, strict=True))
    return dict(zip(leaves, torch.autograd.grad(dot, list(leaves.values())), strict=True))


def meta_steps_by_hand(data, plan: BatchPlan, c: int, w: Model, variant: str,
                       exact_hessian: bool = False) -> Model:
    """Client c's local meta-steps on its plan: consecutive active batches in groups of 2
    (FO) or 3 (HF); a last incomplete group is dropped."""
    batches = [plan.index[s, c][plan.mask[s, c]] for s in range(plan.num_steps)
               if plan.mask[s, c].any()]
    m = 2 if variant == "fo" else 3
    for start in range(0, len(batches) - m + 1, m):
        d, d1 = samples(data, c, batches[start]), samples(data, c, batches[start + 1])
        temp = {k: w[k] - ALPHA * grad(w, *d)[k] for k in w}
        g = grad(temp, *d1)
        if variant == "fo":
            w = {k: w[k] - BETA * g[k] for k in w}
            continue
        d2 = samples(data, c, batches[start + 2])
        if exact_hessian:
            hg = hessian_vector(w, *d2, g)
        else:
            ahead = grad({k: w[k] + DELTA * g[k] for k in w}, *d2)
            behind = grad({k: w[k] - DELTA * g[k] for k in w}, *d2)
            hg = {k: (ahead[k] - behind[k]) / (2 * DELTA) for k in w}
        w = {k: w[k] - BETA * (g[k] - ALPHA * hg[k]) for k in w}
    return w


@pytest.mark.parametrize("variant", ["fo", "hf"])
@pytest.mark.parametrize("work", [{"local_steps": 2}, {"local_steps": None, "epochs": 1}])
def test_one_round_by_hand(variant, work):
    """Batches of 2: with `local_steps: 2` each client takes 2 meta-steps (4 or 6 batches);
    with one epoch, client 0 (3 samples: 2 batches) and client 1 (5 samples: 3 batches)
    group their batches, so HF's client 0 takes no meta-step and FO's client 1 drops its
    last batch. The server takes the plain mean."""
    data = two_clients()
    hyper = PerFedAvgHyper(variant=variant, alpha=ALPHA, delta=DELTA)
    algo = PerFedAvg(hyper, context(data, lr=BETA, batch_size=2, **work))
    algo.setup()
    w0 = dict(algo.global_model)
    m = 2 if variant == "fo" else 3
    rng = copy.deepcopy(algo.rng)  # the plan the round will draw
    steps = None if work["local_steps"] is None else work["local_steps"] * m
    plan = make_plan(np.array(SIZES), 2, rng, local_steps=steps, epochs=work.get("epochs"))
    algo.round(1, algo.all_clients)
    local = [meta_steps_by_hand(data, plan, c, w0, variant) for c in range(2)]
    expected = {k: (local[0][k] + local[1][k]) / 2 for k in w0}
    assert_models_close(algo.global_model, expected)
    if variant == "hf":  # the central difference is the Hessian-vector product, nearly
        exact = [meta_steps_by_hand(data, plan, c, w0, variant, exact_hessian=True)
                 for c in range(2)]
        assert_models_close(expected, {k: (exact[0][k] + exact[1][k]) / 2 for k in w0},
                            tol=1e-5)
    if "epochs" in work and variant == "hf":
        assert_models_close(local[0], w0, tol=0.0)


@pytest.mark.parametrize("personal_steps", [0, 1])
def test_evaluation_is_one_local_step_of_size_alpha(personal_steps):
    """Batches of 8 are every sample: client c's model is w - alpha grad f_c(w) (w for 0
    steps); the global model is untouched."""
    data = two_clients()
    algo = PerFedAvg(PerFedAvgHyper(alpha=0.3, personal_steps=personal_steps), context(data))
    algo.setup()
    w = dict(algo.global_model)
    models = algo.client_models()
    for c in range(2):
        g = grad(w, *samples(data, c))
        expected = {k: w[k] - 0.3 * personal_steps * g[k] for k in w}
        assert_models_close({k: t[c] for k, t in models.items()}, expected)
    assert all(torch.equal(algo.global_model[k], w[k]) for k in w)


@pytest.mark.parametrize("variant", ["fo", "hf"])
def test_engines_agree(variant):
    fast, ref = both_engines("perfedavg", PerFedAvgHyper(variant=variant, alpha=0.05))
    assert_models_close(fast.global_model, ref.global_model, tol=1e-4)
    assert_models_close(fast.client_models(), ref.client_models(), tol=1e-4)


def test_runner_is_seed_deterministic(benchmark_params):
    hyper = benchmark_params.algorithm("perfedavg", paper="benchmark").hyper
    assert hyper == PerFedAvgHyper(alpha=0.005)
    first, again = (run_benchmark_entry(benchmark_params, "perfedavg", seed=0) for _ in range(2))
    other = run_benchmark_entry(benchmark_params, "perfedavg", seed=1)
    assert first.records == again.records and first.arrays == again.arrays
    assert first.records != other.records
    assert first.records[-1]["test_acc"] > 0.3  # it learns: the majority class is 22 %
    hf = run_benchmark_entry(benchmark_params, "perfedavg", seed=0, variant="hf")
    assert hf.records != first.records and hf.records[-1]["test_acc"] > 0.3
