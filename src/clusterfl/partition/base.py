"""Splitting clients' samples into train and test, and a partition's `.npz` form on disk. The
`Partition` value (client -> sample indices, with the ground truth kept beside it) is defined
in `clusterfl.core.types` (every layer passes it) and re-exported here."""

from pathlib import Path

import numpy as np

from clusterfl.core.errors import CorruptFile
from clusterfl.core.io import atomic_write_npz, read_npz
from clusterfl.core.types import Partition

__all__ = ["Partition", "load_partition", "save_partition", "split_clients", "split_train_test"]


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
    """The partition saved at `path`, validated (`clusterfl.core.io.read_npz`, then the shapes:
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
