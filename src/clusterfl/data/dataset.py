"""The in-memory dataset value every source returns, and its `.npz` form on disk."""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from clusterfl.io import atomic_write_npz


@dataclass(frozen=True)
class Dataset:
    """Features `x` (float32, one row per sample) and integer labels `y`.

    `groups` is set by sources that generate data client by client (the synthetic generators):
    the natural client of each sample; `group_cluster` holds the true cluster of each group.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    num_classes: int
    groups: np.ndarray | None = None
    group_cluster: np.ndarray | None = None
    info: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise ValueError(f"{self.name}: {len(self.x)} samples but {len(self.y)} labels")

    @property
    def feature_shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape[1:])


def save_dataset(dataset: Dataset, path: Path) -> None:
    arrays: dict[str, np.ndarray] = {
        "x": dataset.x,
        "y": dataset.y,
        "num_classes": np.array(dataset.num_classes),
        "name": np.array(dataset.name),
        "info_keys": np.array(list(dataset.info), dtype=str),
        "info_values": np.array(list(dataset.info.values()), dtype=str),
    }
    if dataset.groups is not None:
        arrays["groups"] = dataset.groups
    if dataset.group_cluster is not None:
        arrays["group_cluster"] = dataset.group_cluster
    atomic_write_npz(path, arrays)


def load_dataset(path: Path) -> Dataset:
    with np.load(path) as f:
        return Dataset(
            name=str(f["name"]),
            x=f["x"],
            y=f["y"],
            num_classes=int(f["num_classes"]),
            groups=f["groups"] if "groups" in f else None,
            group_cluster=f["group_cluster"] if "group_cluster" in f else None,
            info=dict(zip(f["info_keys"].tolist(), f["info_values"].tolist(), strict=True)),
        )
