"""The `Partition` value: client -> sample indices, with the ground truth kept beside it."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clusterfl.errors import CorruptFile
from clusterfl.io import atomic_write_npz, read_npz


@dataclass(frozen=True)
class Partition:
    """Per-client train/test index arrays into one `Dataset`.

    `cluster[k]` is client k's true cluster where the scheme defines one (else None);
    `mixture[k, s]` its true share of distribution s for mixture schemes, the columns named
    by `distributions`. `holdout[s]` is the held-out test set of distribution s (FedSoft).

    Views: schemes that show samples transformed (rotation clusters, feature noise, one
    modality of a multimodal set) list the transforms in `views` (names understood by
    `clusterfl.partition.views`); their index arrays then encode `view * len(dataset) +
    sample`. Read a client's data with `views.client_data`, which decodes and applies them.
    With no views, indices are plain row numbers of the dataset.
    """

    train: tuple[np.ndarray, ...]
    test: tuple[np.ndarray, ...]
    cluster: np.ndarray | None = None
    mixture: np.ndarray | None = None
    views: tuple[str, ...] = ()
    holdout: tuple[np.ndarray, ...] = ()
    distributions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.train) != len(self.test):
            raise ValueError("train and test must list the same clients")
        if self.cluster is not None and len(self.cluster) != len(self.train):
            raise ValueError("cluster must have one entry per client")
        if self.mixture is not None and len(self.mixture) != len(self.train):
            raise ValueError("mixture must have one row per client")

    @property
    def num_clients(self) -> int:
        return len(self.train)

    def train_sizes(self) -> np.ndarray:
        return np.array([len(t) for t in self.train])

    def test_sizes(self) -> np.ndarray:
        return np.array([len(t) for t in self.test])


def split_train_test(
    indices: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Shuffle one client's indices and cut off `round(n * test_fraction)` for testing."""
    shuffled = rng.permutation(indices)
    n_test = round(len(shuffled) * test_fraction)
    n_train = len(shuffled) - n_test
    return np.sort(shuffled[:n_train]), np.sort(shuffled[n_train:])


def split_clients(
    client_indices: list[np.ndarray], test_fraction: float, rng: np.random.Generator
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """`split_train_test` applied to each client in turn."""
    pairs = [split_train_test(idx, test_fraction, rng) for idx in client_indices]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def _pack(parts: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.array([len(p) for p in parts], dtype=np.int64)
    flat = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
    return flat, sizes


def _unpack(flat: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(np.split(flat, np.cumsum(sizes)[:-1]))


def save_partition(partition: Partition, path: Path) -> None:
    train, train_sizes = _pack(partition.train)
    test, test_sizes = _pack(partition.test)
    arrays = {"train": train, "train_sizes": train_sizes, "test": test, "test_sizes": test_sizes}
    if partition.cluster is not None:
        arrays["cluster"] = partition.cluster
    if partition.mixture is not None:
        arrays["mixture"] = partition.mixture
    holdout, holdout_sizes = _pack(partition.holdout)
    arrays.update(
        views=np.array(partition.views, dtype=str),
        holdout=holdout,
        holdout_sizes=holdout_sizes,
        distributions=np.array(partition.distributions, dtype=str),
    )
    atomic_write_npz(path, arrays)


def load_partition(path: Path) -> Partition:
    """The partition saved at `path`, validated (`clusterfl.io.read_npz`, then the shapes:
    index arrays are 1-d, sizes add up, one cluster / mixture row per client)."""
    f = read_npz(path, {"train": "iu", "train_sizes": "iu", "test": "iu", "test_sizes": "iu"},
                 "partition file")
    try:
        for name in ("train", "test", "holdout"):
            flat, sizes = f.get(name), f.get(f"{name}_sizes")
            if flat is None or sizes is None:
                continue
            if flat.ndim != 1 or sizes.ndim != 1 or sizes.sum() != len(flat) or (sizes < 0).any():
                raise ValueError(f"{name} sizes do not add up to its {len(flat)} indices")
        if len(f["train_sizes"]) != len(f["test_sizes"]):
            raise ValueError("train and test list different numbers of clients")
        return Partition(
            train=_unpack(f["train"], f["train_sizes"]),
            test=_unpack(f["test"], f["test_sizes"]),
            cluster=f.get("cluster", None),
            mixture=f.get("mixture", None),
            views=tuple(f["views"].tolist()) if "views" in f else (),
            holdout=_unpack(f["holdout"], f["holdout_sizes"])
            if "holdout_sizes" in f and len(f["holdout_sizes"]) else (),
            distributions=tuple(f["distributions"].tolist()) if "distributions" in f else (),
        )
    except (ValueError, TypeError) as err:
        raise CorruptFile(path, f"not a valid partition file: {err}") from None
