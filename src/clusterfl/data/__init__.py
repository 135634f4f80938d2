"""Data sources: one registry mapping a dataset name to a loader that returns arrays."""

from clusterfl.data.dataset import Dataset, load_dataset, save_dataset
from clusterfl.data.sources import DATA_SOURCES, DataSource, build_dataset

__all__ = ["DATA_SOURCES", "DataSource", "Dataset", "build_dataset", "load_dataset", "save_dataset"]
