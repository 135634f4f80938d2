"""Partition schemes: one function per scheme, each a pure function of the labels (or the
generator's natural groups) and an explicit `numpy.random.Generator`, returning a `Partition`."""

from clusterfl.partition.base import Partition, load_partition, save_partition, split_train_test
from clusterfl.partition.schemes import SCHEMES, PartitionScheme, build_partition

__all__ = [
    "SCHEMES",
    "Partition",
    "PartitionScheme",
    "build_partition",
    "load_partition",
    "save_partition",
    "split_train_test",
]
