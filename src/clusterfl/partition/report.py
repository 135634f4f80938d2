"""A partition at a glance: one row per client (table) and its label/mixture distribution
(figure). Both read the partition and the dataset and change neither."""

from pathlib import Path

import numpy as np
import pandas as pd

from clusterfl.data.dataset import Dataset
from clusterfl.partition.base import Partition
from clusterfl.partition.views import view_labels


def _labels(dataset: Dataset, partition: Partition, indices: np.ndarray) -> np.ndarray:
    return view_labels(dataset, partition.views, indices)


def summarize_partition(partition: Partition, dataset: Dataset) -> pd.DataFrame:
    """Columns: client, train, test, classes (held, for classification) or mixture, cluster."""
    rows = []
    for k in range(partition.num_clients):
        row: dict[str, object] = {
            "client": k, "train": len(partition.train[k]), "test": len(partition.test[k]),
        }
        if not dataset.is_regression:
            held = np.unique(_labels(dataset, partition, np.concatenate(
                [partition.train[k], partition.test[k]])))
            row["classes"] = " ".join(str(int(c)) for c in held)
        if partition.mixture is not None:
            row["mixture"] = " ".join(f"{w:.3f}" for w in partition.mixture[k])
        row["cluster"] = int(partition.cluster[k]) if partition.cluster is not None else None
        rows.append(row)
    return pd.DataFrame(rows)


def plot_partition(partition: Partition, dataset: Dataset, path: Path) -> None:
    """Stacked bars per client: its mixture where the scheme has one, else its label counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    clients = np.arange(partition.num_clients)
    if partition.mixture is not None or dataset.is_regression:
        if partition.mixture is not None:
            parts = partition.mixture.T
            names = partition.distributions or tuple(str(s) for s in range(len(parts)))
        else:
            parts = partition.train_sizes()[None, :]
            names = ("train samples",)
        ylabel = "share" if partition.mixture is not None else "samples"
    else:
        parts = np.stack([
            np.bincount(_labels(dataset, partition, partition.train[k]),
                        minlength=dataset.num_classes) for k in clients
        ]).T
        names = tuple(f"class {c}" for c in range(dataset.num_classes))
        ylabel = "training samples"
    fig, ax = plt.subplots(figsize=(max(6.0, 0.15 * len(clients) + 2), 4))
    bottom = np.zeros(len(clients))
    for name, values in zip(names, parts, strict=True):
        ax.bar(clients, values, bottom=bottom, label=name, width=0.9)
        bottom += values
    ax.set_xlabel("client")
    ax.set_ylabel(ylabel)
    if partition.cluster is not None:
        ax.set_title("label distribution per client; true cluster above each bar", fontsize=9)
        for k in clients:
            ax.text(float(k), bottom[k], str(int(partition.cluster[k])), ha="center", va="bottom",
                    fontsize=6)
    if len(names) <= 12:
        ax.legend(fontsize=7, ncol=2)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
