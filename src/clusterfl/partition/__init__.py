"""Partition schemes: one function per scheme, each a pure function of the labels (or the
generator's natural groups) and an explicit `numpy.random.Generator`, returning a `Partition`."""

from clusterfl.partition.base import Partition, load_partition, save_partition, split_train_test
from clusterfl.partition.report import plot_partition, summarize_partition
from clusterfl.partition.schemes import SCHEMES, PartitionScheme, build_partition
from clusterfl.partition.views import client_data, gather, holdout_data

__all__ = [
    "SCHEMES",
    "Partition",
    "PartitionScheme",
    "build_partition",
    "client_data",
    "gather",
    "holdout_data",
    "load_partition",
    "plot_partition",
    "save_partition",
    "split_train_test",
    "summarize_partition",
]
