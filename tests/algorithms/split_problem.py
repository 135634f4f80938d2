"""The benchmark baselines' tiny problems and plain-torch references (no engine).

`two_clients()`: 2 clients (4 and 6 training samples), 4 features, 3 classes, trained by a
`dnn` with 3 hidden units; with `batch_size >= 6` every step is a full batch, so a round can
be computed by hand whatever order the plan draws. `mlp_loss` / `sgd_steps` are that model
and plain SGD in ordinary autograd.
"""

import dataclasses
from collections.abc import Collection
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from clusterfl.algorithms import ALGORITHMS, NeuralContext, Schedule
from clusterfl.core.types import Tensors
from clusterfl.data.synthetic import ClusteredSyntheticOptions, clustered_synthetic
from clusterfl.engine import ENGINES, ClientData
from clusterfl.partition.schemes import NaturalOptions, natural
from clusterfl.run.config import load_params
from clusterfl.run.runner import run_seed
from clusterfl.training.models import build_model
from tests.algorithms.baselines import row  # noqa: F401  (re-exported for the split tests)

ROOT = Path(__file__).resolve().parents[2]
TIGHT = {"rtol": 1e-5, "atol": 1e-6}
METHODS = ("fedper", "fedrep", "lgfedavg", "fedala")
BASE, HEAD = ("1.weight", "1.bias"), ("3.weight", "3.bias")  # the dnn's hidden, output layer


def two_clients() -> ClientData:
    rng = np.random.default_rng(3)
    parts = [(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, n))
             for n in (4, 6, 2, 3)]
    return ClientData.from_lists(parts[:2], parts[2:])


def context(data: ClientData, engine: str = "vectorized", hidden: int = 3,
            **schedule) -> NeuralContext:
    model = build_model("dnn", tuple(data.train_x.shape[2:]), 3, {"hidden": hidden})
    defaults = {"rounds": 1, "lr": 0.3, "batch_size": 8}
    defaults |= {} if "epochs" in schedule else {"local_steps": 2}
    sched = Schedule(**(defaults | schedule))
    return NeuralContext.build(model, ENGINES[engine](model, data), sched, seed=0)


def build(method: str, data: ClientData, hyper: dict | None = None, engine: str = "vectorized",
          **schedule):
    cls = ALGORITHMS.get(method)
    return cls(cls.Hyper(**(hyper or {})), context(data, engine, **schedule))


def client_xy(data: ClientData, c: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = int(data.train_n[c])
    return data.train_x[c, :n], data.train_y[c, :n]


def mlp_loss(params: Tensors, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the `dnn` (Flatten, Linear `1`, ReLU, Linear `3`)."""
    hidden = torch.relu(x @ params["1.weight"].T + params["1.bias"])
    return F.cross_entropy(hidden @ params["3.weight"].T + params["3.bias"], y)


def gradients(params: Tensors, x: torch.Tensor, y: torch.Tensor) -> Tensors:
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    grads = torch.autograd.grad(mlp_loss(leaves, x, y), list(leaves.values()))
    return dict(zip(leaves, grads, strict=True))


def sgd_steps(params: Tensors, x: torch.Tensor, y: torch.Tensor, lr: float, steps: int,
              trainable: Collection[str] | None = None) -> Tensors:
    """`steps` full-batch SGD steps on the parameters in `trainable` (default all)."""
    params = {k: v.clone() for k, v in params.items()}
    for _ in range(steps):
        g = gradients(params, x, y)
        for k in trainable if trainable is not None else list(params):
            params[k] = params[k] - lr * g[k]
    return params


def assert_models_close(a: Tensors, b: Tensors, **tol) -> None:
    assert list(a) == list(b)
    for k in a:
        torch.testing.assert_close(a[k], b[k], **(tol or TIGHT))


def assert_engines_agree(method: str, data: ClientData, hyper: dict | None = None,
                         rounds: int = 3) -> None:
    """A few rounds on the vectorized engine and on the per-client reference loop: the same
    accuracies, losses within float rounding, the same final models."""
    runs = {}
    for engine in ("vectorized", "reference"):
        algo = build(method, data, hyper, engine, hidden=5, rounds=rounds, epochs=1,
                     batch_size=2, clients_per_round=None)
        runs[engine] = (algo, algo.run())
    (fast, fast_history), (ref, ref_history) = runs["vectorized"], runs["reference"]
    for a, b in zip(fast_history.records, ref_history.records, strict=True):
        assert a["test_acc"] == b["test_acc"]
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
    assert_models_close(fast.client_models(), ref.client_models(), rtol=1e-4, atol=1e-5)


def unequal_clients() -> ClientData:
    """Three clients of 5, 9 and 3 samples, so that epochs give unequal step counts."""
    rng = np.random.default_rng(0)
    sizes = [(5, 2), (9, 3), (3, 1)]
    train = [(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, n))
             for n, _ in sizes]
    test = [(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, n))
            for _, n in sizes]
    return ClientData.from_lists(train, test)


def runner_problem(name: str, rounds: int = 3):
    """(experiment, algorithm) of the benchmark's params entry `name` on `bm_rot4`, shrunk,
    and a small synthetic partition (3 clusters x 2 clients, 10 features) to train it on."""
    params = load_params(ROOT / "suites/benchmark/params.yaml")
    exp = params.experiment("bm_rot4")
    exp = dataclasses.replace(exp, schedule=dataclasses.replace(exp.schedule, rounds=rounds))
    algorithm = params.algorithm(name, experiment=exp.name)
    opts = ClusteredSyntheticOptions(clients_per_cluster=2, dimension=10, max_size=60)
    dataset = clustered_synthetic(opts, np.random.default_rng(0))
    partition = natural(dataset, NaturalOptions(), np.random.default_rng(1))
    return exp, algorithm, dataset, partition


def timeless(history) -> tuple:
    """A history without its wall-clock measurements (`*_seconds`)."""
    return [{k: v for k, v in r.items() if not k.endswith("_seconds")}
            for r in history.records], history.arrays


def run_twice(name: str):
    """Two runs of one seed through `run_seed` and a third with another seed."""
    exp, algorithm, dataset, partition = runner_problem(name)
    return [run_seed(exp, algorithm, dataset, partition, seed) for seed in (0, 0, 1)]
