"""A dataset's `.npz` form on disk. The in-memory value every source returns, `Dataset`, is
defined in `clusterfl.core.types` (every layer passes it) and re-exported here."""

from pathlib import Path

import numpy as np

from clusterfl.core.errors import CorruptFile
from clusterfl.core.io import atomic_write_npz, read_npz
from clusterfl.core.types import Dataset

__all__ = ["Dataset", "load_dataset", "save_dataset"]

_OPTIONAL_ARRAYS = ("groups", "group_cluster", "split", "domain")


def save_dataset(dataset: Dataset, path: Path) -> None:
    arrays: dict[str, np.ndarray] = {
        "x": dataset.x,
        "y": dataset.y,
        "num_classes": np.array(dataset.num_classes),
        "name": np.array(dataset.name),
        "info_keys": np.array(list(dataset.info), dtype=str),
        "info_values": np.array(list(dataset.info.values()), dtype=str),
        "domain_names": np.array(dataset.domain_names, dtype=str),
        "modalities": np.array(dataset.modalities, dtype=str),
        "modality_sizes": np.array(dataset.modality_sizes, dtype=np.int64),
    }
    for attr in _OPTIONAL_ARRAYS:
        if getattr(dataset, attr) is not None:
            arrays[attr] = getattr(dataset, attr)
    for key, value in dataset.extras.items():
        arrays[f"extra_{key}"] = value
    atomic_write_npz(path, arrays)


def load_dataset(path: Path) -> Dataset:
    """The dataset saved at `path`, validated (`clusterfl.core.io.read_npz`, then the shapes)."""
    f = read_npz(path, {"x": "f", "y": "iuf", "num_classes": "iu", "name": "U",
                        "info_keys": "U", "info_values": "U"}, "dataset file")
    optional = {attr: f.get(attr, None) for attr in _OPTIONAL_ARRAYS}
    names = lambda key: tuple(f[key].tolist()) if key in f else ()  # noqa: E731
    try:
        if f["x"].ndim < 2 or f["y"].ndim != 1:
            raise ValueError(f"x has shape {f['x'].shape}, y {f['y'].shape}")
        return Dataset(
            name=str(f["name"]),
            x=f["x"],
            y=f["y"],
            num_classes=int(f["num_classes"]),
            info=dict(zip(f["info_keys"].tolist(), f["info_values"].tolist(), strict=True)),
            domain_names=names("domain_names"),
            modalities=names("modalities"),
            modality_sizes=tuple(int(s) for s in names("modality_sizes")),
            extras={k[len("extra_"):]: f[k] for k in f if k.startswith("extra_")},
            **optional,
        )
    except (ValueError, TypeError) as err:
        raise CorruptFile(path, f"not a valid dataset file: {err}") from None
