"""What the tests of the benchmark's personalized baselines share: a two-client problem whose
rounds are computed by hand with plain torch, both engines on unequal clients, and one seed
through the runner with the benchmark suite's own params entries."""

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.functional import cross_entropy

from clusterfl.algorithms import ALGORITHMS, NeuralAlgorithm, NeuralContext, Schedule
from clusterfl.data.synthetic import ClusteredSyntheticOptions, clustered_synthetic
from clusterfl.engine import ENGINES, ClientData
from clusterfl.partition.schemes import NaturalOptions, natural
from clusterfl.run.config import SuiteConfig, load_params
from clusterfl.run.runner import run_seed
from clusterfl.training.history import RunHistory
from clusterfl.training.models import build_model
from tests.engine.conftest import CLASSES, FEATURES, make_data

ROOT = Path(__file__).resolve().parents[2]
SIZES = (3, 5)  # the two clients' training samples
Model = dict[str, torch.Tensor]  # one client's model: "1.weight" [3, 4], "1.bias" [3]


def two_clients() -> ClientData:
    """Client 0: 3 samples, client 1: 5 samples (4 features, 3 classes), 2 test samples each."""
    rng = np.random.default_rng(7)

    def part(n: int) -> tuple[np.ndarray, np.ndarray]:
        return rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, n)

    return ClientData.from_lists([part(n) for n in SIZES], [part(2) for _ in SIZES])


def context(data: ClientData, lr: float = 0.1, local_steps: int | None = 2,
            batch_size: int = 8, engine: str = "vectorized", **schedule: Any) -> NeuralContext:
    """Multinomial logistic regression on the two clients; batch 8 is every sample."""
    model = build_model("mlr", (4,), 3)
    sched = Schedule(lr=lr, local_steps=local_steps, batch_size=batch_size, **schedule)
    return NeuralContext.build(model, ENGINES[engine](model, data), sched, seed=0)


def samples(data: ClientData, c: int, index: torch.Tensor | None = None
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Client c's training samples (those at `index`, else all of them)."""
    n = int(data.train_n[c])
    x, y = data.train_x[c, :n], data.train_y[c, :n]
    return (x, y) if index is None else (x[index], y[index])


def grad(w: Model, x: torch.Tensor, y: torch.Tensor) -> Model:
    """d/dw of the mean cross-entropy of softmax(x W^T + b) on (x, y), by autograd."""
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in w.items()}
    loss = cross_entropy(x @ leaves["1.weight"].T + leaves["1.bias"], y)
    return dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values())), strict=True))


def row(stacked: Model, c: int) -> Model:
    return {k: v[c].clone() for k, v in stacked.items()}


def axpy(a: float, x: Model, y: Model) -> Model:
    """a x + y."""
    return {k: a * x[k] + y[k] for k in y}


def assert_models_close(got: Model, expected: Model, tol: float = 1e-6) -> None:
    for k in expected:
        torch.testing.assert_close(got[k], expected[k], rtol=tol, atol=tol)


def both_engines(method: str, hyper: Any, rounds: int = 3, **schedule: Any
                 ) -> tuple[NeuralAlgorithm, NeuralAlgorithm]:
    """`method` run for `rounds` rounds on each engine: five clients of unequal sizes, a DNN,
    3 of 5 clients a round, one epoch of batches of 4 (clients take different step counts,
    so the vectorized engine sorts them) unless `schedule` says otherwise."""
    algos = []
    for engine in ("vectorized", "reference"):
        model = build_model("dnn", (FEATURES,), CLASSES, {"hidden": 8})
        sched = Schedule(**({"lr": 0.1, "rounds": rounds, "epochs": 1, "batch_size": 4,
                             "clients_per_round": 3} | schedule))
        ctx = NeuralContext.build(model, ENGINES[engine](model, make_data()), sched, seed=3)
        algo = ALGORITHMS.get(method)(hyper, ctx)
        algo.run()
        algos.append(algo)
    return algos[0], algos[1]


def benchmark_params() -> SuiteConfig:
    return load_params(ROOT / "suites" / "benchmark" / "params.yaml")


def run_benchmark_entry(params: SuiteConfig, name: str, seed: int, rounds: int = 3,
                        **hyper: Any) -> RunHistory:
    """The benchmark's params entry `name` (its hyperparameters, replaced by `hyper`) on
    the benchmark's experiment `bm_dir01` (DNN 64, one epoch of batches of 20), shrunk to
    `rounds` rounds on 9 clients of a small clustered synthetic problem, through `run_seed`."""
    dataset = clustered_synthetic(ClusteredSyntheticOptions(clients_per_cluster=3, dimension=20,
                                                            max_size=60),
                                  np.random.default_rng(0))
    partition = natural(dataset, NaturalOptions(), np.random.default_rng(1))
    experiment = params.experiment("bm_dir01")
    experiment = dataclasses.replace(
        experiment, schedule=dataclasses.replace(experiment.schedule, rounds=rounds))
    algorithm = params.algorithm(name, experiment=experiment.name)
    algorithm = dataclasses.replace(algorithm, hyper=dataclasses.replace(algorithm.hyper, **hyper))
    return run_seed(experiment, algorithm, dataset, partition, seed=seed)
