"""Small clients of unequal sizes, and the models the engines must handle."""

import numpy as np
import pytest
import torch
from torch import nn

from clusterfl.engine import ClientData
from clusterfl.training.models import build_model, init_params

FEATURES, CLASSES = 12, 4
SIZES = (9, 23, 5, 16, 12)  # unequal on purpose: padding and epochs mode


def make_data(sizes: tuple[int, ...] = SIZES, seed: int = 0) -> ClientData:
    rng = np.random.default_rng(seed)

    def part(n: int) -> tuple[np.ndarray, np.ndarray]:
        return rng.normal(size=(n, FEATURES)).astype(np.float32), rng.integers(0, CLASSES, n)

    return ClientData.from_lists([part(n) for n in sizes], [part(max(n // 2, 1)) for n in sizes])


def tanh_net() -> nn.Module:
    """Not a Linear-ReLU stack: only the vmap kernel can run it."""
    return nn.Sequential(nn.Linear(FEATURES, 6), nn.Tanh(), nn.Linear(6, CLASSES))


MODELS = {
    "mlr": lambda: build_model("mlr", (FEATURES,), CLASSES),
    "dnn": lambda: build_model("dnn", (FEATURES,), CLASSES, {"hidden": 8}),
    "deep": lambda: build_model("dnn", (FEATURES,), CLASSES, {"hidden": 8}).extend(
        [nn.ReLU(), nn.Linear(CLASSES, CLASSES)]),
    "tanh": tanh_net,
}


def stacked_params(model: nn.Module, copies: int, seed: int = 1) -> dict[str, torch.Tensor]:
    """`copies` different initial models, stacked: each client starts somewhere else."""
    g = torch.Generator().manual_seed(seed)
    inits = [init_params(model, g) for _ in range(copies)]
    return {k: torch.stack([p[k] for p in inits]) for k in inits[0]}


@pytest.fixture
def data() -> ClientData:
    return make_data()
