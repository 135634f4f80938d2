"""Shared fixtures: the repository root and a tiny federated problem."""

from pathlib import Path

import numpy as np
import pytest
import torch

from clusterfl.engine import ClientData

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def tiny_data() -> ClientData:
    """Three clients of unequal sizes (5, 9, 3 train samples), 4 features, 3 classes."""
    rng = np.random.default_rng(0)
    sizes = [(5, 2), (9, 3), (3, 1)]
    train, test = [], []
    for n_train, n_test in sizes:
        train.append((rng.normal(size=(n_train, 4)).astype(np.float32),
                      rng.integers(0, 3, n_train)))
        test.append((rng.normal(size=(n_test, 4)).astype(np.float32), rng.integers(0, 3, n_test)))
    return ClientData.from_lists(train, test)


@pytest.fixture(autouse=True)
def _single_thread() -> None:
    torch.set_num_threads(1)
