"""Shared by the tests of the benchmark's clustered baselines (FeSEM, FedGroup, FL+HC): an
easy clustered problem, a context builder, one client's full-batch SGD step in plain torch,
and the per-client models of a run on both engines."""

import numpy as np
import torch
import torch.nn.functional as F

from clusterfl.algorithms import NeuralContext, Schedule
from clusterfl.core.types import Tensors
from clusterfl.engine import ENGINES, ClientData
from clusterfl.training.models import build_model


def label_function_clusters(clusters: int, per_cluster: int, seed: int = 0
                            ) -> tuple[ClientData, np.ndarray]:
    """`clusters` concepts, each the labels of one linear rule on 10 features shifted by the
    cluster's index (mod 4): clients of a cluster agree, clusters disagree (the CFL test's
    easy partition). Returns the clients' data and their true clusters."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(10, 4))
    truth = np.repeat(np.arange(clusters), per_cluster)

    def part(c: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(size=(n, 10)).astype(np.float32)
        return x, (np.argmax(x @ w, 1) + c) % 4

    data = ClientData.from_lists([part(c, 60) for c in truth], [part(c, 20) for c in truth])
    return data, truth


def context(data: ClientData, truth=None, model: str = "mlr", rounds: int = 3,
            lr: float = 0.05, local_steps: int = 10, batch: int = 20,
            engine: str = "vectorized") -> NeuralContext:
    classes = int(data.train_y.max()) + 1
    net = build_model(model, tuple(data.train_x.shape[2:]), classes,
                      {"hidden": 5} if model == "dnn" else {})
    sched = Schedule(lr=lr, rounds=rounds, local_steps=local_steps, batch_size=batch)
    return NeuralContext.build(net, ENGINES[engine](net, data), sched, seed=0,
                               true_cluster=truth)


def zero_start(cls: type) -> type:
    """`cls` whose initial model is all zeros (a start the hand computations can reuse)."""
    class ZeroStart(cls):
        def initial_model(self) -> Tensors:
            return {k: torch.zeros_like(v) for k, v in super().initial_model().items()}
    return ZeroStart


def sgd_step(data: ClientData, c: int, params: Tensors, lr: float) -> Tensors:
    """Client c's MLR model after one full-batch gradient step on its mean cross-entropy
    from `params` (unstacked `1.weight`, `1.bias`), by autograd in plain torch."""
    n = int(data.train_n[c])
    x, y = data.train_x[c, :n], data.train_y[c, :n]
    w = params["1.weight"].clone().requires_grad_(True)
    b = params["1.bias"].clone().requires_grad_(True)
    F.cross_entropy(x @ w.T + b, y).backward()
    return {"1.weight": (w - lr * w.grad).detach(), "1.bias": (b - lr * b.grad).detach()}


def stack(models: list[Tensors]) -> Tensors:
    return {k: torch.stack([m[k] for m in models]) for k in models[0]}


def assert_models_close(a: Tensors, b: Tensors) -> None:
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-6)
