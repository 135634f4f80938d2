"""The in-memory dataset value every source returns, and its `.npz` form on disk."""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from clusterfl.errors import CorruptFile
from clusterfl.io import atomic_write_npz, read_npz


@dataclass(frozen=True)
class Dataset:
    """Features `x` (float32, one row per sample) and labels `y`.

    - `y` holds integer class labels; for regression sources `num_classes == 0` and `y` holds
      float targets.
    - `groups` is set by sources that generate data client by client (the synthetic generators,
      or a real set's subjects): the natural client of each sample; `group_cluster` holds the
      true cluster of each group.
    - `split` marks the official split of each sample where the source has one: 0 = train,
      1 = the official test set (MNIST's t10k, CIFAR's test_batch, ...). Loaders pool both so
      that schemes which repartition per client (P1) see all of it; schemes that need a
      held-out test set per distribution (FedSoft) draw it from the split-1 samples first.
    - `domain` is the distribution of each sample where a source defines several (FedSoft's
      lower/upper-case letters, its regression generator's S distributions), named by
      `domain_names`.
    - `modalities` / `modality_sizes`: for multimodal sources, `x` is (n, sum(modality_sizes))
      and its columns are the modalities in this order, each flattened (see `modality_slice`).
    - `extras`: ground-truth arrays of a generator (FedC's W and H, the regression optima).
    - Images are (n, channels, height, width); models flatten them as needed.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    num_classes: int
    groups: np.ndarray | None = None
    group_cluster: np.ndarray | None = None
    info: dict[str, str] = field(default_factory=dict)
    split: np.ndarray | None = None
    domain: np.ndarray | None = None
    domain_names: tuple[str, ...] = ()
    modalities: tuple[str, ...] = ()
    modality_sizes: tuple[int, ...] = ()
    extras: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.x)
        if n != len(self.y):
            raise ValueError(f"{self.name}: {n} samples but {len(self.y)} labels")
        for attr in ("groups", "split", "domain"):
            value = getattr(self, attr)
            if value is not None and len(value) != n:
                raise ValueError(f"{self.name}: {attr} has {len(value)} entries for {n} samples")
        if len(self.modalities) != len(self.modality_sizes):
            raise ValueError(f"{self.name}: modalities and modality_sizes differ in length")
        if self.modalities and sum(self.modality_sizes) != int(np.prod(self.x.shape[1:])):
            raise ValueError(f"{self.name}: modality sizes do not add up to the feature size")

    @property
    def feature_shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape[1:])

    @property
    def is_regression(self) -> bool:
        return self.num_classes == 0

    def modality_slice(self, modality: str) -> slice:
        """The columns of `x` that hold `modality`."""
        i = self.modalities.index(modality)
        start = sum(self.modality_sizes[:i])
        return slice(start, start + self.modality_sizes[i])


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
    """The dataset saved at `path`, validated (`clusterfl.io.read_npz`, then the shapes)."""
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
