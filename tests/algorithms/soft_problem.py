"""Small soft-clustering problems for the FedSoft / FedEM tests (seconds each)."""

import numpy as np

from clusterfl.algorithms import ALGORITHMS, NeuralAlgorithm, NeuralContext, Schedule
from clusterfl.algorithms.base import client_data, holdout_data
from clusterfl.data.synthetic import FedSoftRegressionOptions, fedsoft_regression
from clusterfl.engine import ENGINES, ClientData
from clusterfl.partition.mixtures import MixtureOptions, fedsoft_mixture
from clusterfl.training.models import build_model


def mixture_context(schedule: Schedule, num_clients: int = 20, pattern: str = "10:90",
                    seed: int = 0) -> NeuralContext:
    """FedSoft's synthetic regression (S = 2, sigma0 = 10), `pattern` over `num_clients`
    clients of 100..200 samples, 20% local test split, 300 held-out samples per distribution."""
    data = fedsoft_regression(FedSoftRegressionOptions(samples_per_distribution=3000,
                                                       test_per_distribution=300),
                              np.random.default_rng(0))
    part = fedsoft_mixture(data, MixtureOptions(pattern=pattern, num_clients=num_clients,
                                                holdout_size=300, test_fraction=0.2),
                           np.random.default_rng(1))
    model = build_model("linreg", data.feature_shape, 0)
    engine = ENGINES["vectorized"]
    return NeuralContext.build(model, engine(model, client_data(data, part)), schedule, seed,
                      true_mixture=part.mixture,
                      holdout=engine(model, holdout_data(data, part)))


def tiny_regression(sizes: tuple[int, ...] = (7, 12, 4, 9), seed: int = 0) -> ClientData:
    """Four clients of unequal sizes, 3 features, targets from two linear models."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(2, 3)) * 3
    parts = []
    for k, n in enumerate(sizes):
        x = rng.normal(size=(n, 3)).astype(np.float32)
        parts.append((x, x @ theta[k % 2] + rng.normal(size=n)))
    return ClientData.from_lists(parts, parts)


def build(method: str, ctx: NeuralContext, **hyper) -> NeuralAlgorithm:
    cls = ALGORITHMS.get(method)
    return cls(cls.Hyper(**hyper), ctx)


def tiny_context(schedule: Schedule, seed: int = 0) -> NeuralContext:
    model = build_model("linreg", (3,), 0)
    engine = ENGINES["vectorized"](model, tiny_regression())
    return NeuralContext.build(model, engine, schedule, seed)
