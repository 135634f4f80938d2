"""The vectorized engine against the per-client reference loop, through FedAvg/Local."""

import numpy as np
import pytest
import torch

from clusterfl.algorithms import ALGORITHMS, NeuralContext, Schedule
from clusterfl.engine import ENGINES, Sgd, make_plan
from clusterfl.training.models import build_model, init_params


def _run(method: str, engine: str, data, **schedule) -> list[dict]:
    model = build_model("dnn", (4,), 3, {"hidden": 5})
    cls = ALGORITHMS.get(method)
    ctx = NeuralContext.build(model, ENGINES[engine](model, data), Schedule(**schedule), seed=0)
    return cls(cls.Hyper(), ctx).run().records


@pytest.mark.parametrize("method", ["fedavg", "local"])
def test_algorithms_give_the_same_history_on_both_engines(method, tiny_data):
    sched = {"lr": 0.1, "rounds": 3, "local_steps": 4, "batch_size": 2}
    fast, ref = _run(method, "vectorized", tiny_data, **sched), _run(method, "reference",
                                                                      tiny_data, **sched)
    for a, b in zip(fast, ref, strict=True):
        assert a["test_acc"] == b["test_acc"]
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)


def test_full_batch_gd_matches_hand_computed_mlr_step(tiny_data):
    """One full-batch step of MLR from zero weights: grad of mean CE is X^T(softmax - Y)/n."""
    model = build_model("mlr", (4,), 3)
    zero = {k: torch.zeros(3, *v.shape) for k, v in init_params(model, torch.Generator()).items()}
    plan = make_plan(np.array([5, 9, 3]), batch_size=9, rng=np.random.default_rng(0),
                     local_steps=1)
    out = ENGINES["vectorized"](model, tiny_data).train(zero, torch.arange(3), Sgd(0.5), plan)
    for c, n in enumerate([5, 9, 3]):
        x, y = tiny_data.train_x[c, :n], tiny_data.train_y[c, :n]
        grad_w = (x.T @ (torch.full((n, 3), 1 / 3) - torch.eye(3)[y]) / n).T
        torch.testing.assert_close(out["1.weight"][c], -0.5 * grad_w)


def test_plan_covers_each_client_once_per_epoch():
    plan = make_plan(np.array([5, 2]), batch_size=2, rng=np.random.default_rng(1), epochs=2)
    assert plan.num_steps == 6  # client 0: ceil(5/2) = 3 batches per epoch, 2 epochs
    assert plan.active[:, 1].tolist() == [True, True, False, False, False, False]
    seen = plan.index[:3, 0][plan.mask[:3, 0]]
    assert sorted(seen.tolist()) == [0, 1, 2, 3, 4]
