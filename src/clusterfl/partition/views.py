"""Views: deterministic transforms a scheme shows samples through, and reading client data.

View names:
- `identity`;
- `rot<degrees>`: images (n, C, H, W) rotated counterclockwise (FedSoft: "rotate these
  images counterclockwise by 90 degrees"); multiples of 90 are exact (`np.rot90`), other
  angles use bilinear `scipy.ndimage.rotate` with the frame kept and zero fill;
- `noise<std>`: additive Gaussian feature noise (NIID-Bench's feature-noise skew), a fixed
  function of (view, sample): sample j's noise is drawn from `default_rng([crc32(view), j])`,
  so it is the same wherever and however often the sample is read;
- `modality:<name>`: only that modality's columns of a multimodal dataset;
- `labels:<p0>,<p1>,...`: features unchanged, label y shown as p_y (concept shift: the
  `label_permutation` scheme's clusters); every other view leaves labels as they are.
A partition with views encodes index `view * len(dataset) + sample` (see `Partition`).
"""

import zlib

import numpy as np

from clusterfl.data.dataset import Dataset
from clusterfl.partition.base import Partition


def encode(view: int, samples: np.ndarray, n: int) -> np.ndarray:
    return view * n + np.asarray(samples, dtype=np.int64)


def decode(indices: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(view, sample) of each encoded index."""
    indices = np.asarray(indices, dtype=np.int64)
    return indices // n, indices % n


def apply_view(dataset: Dataset, view: str, samples: np.ndarray) -> np.ndarray:
    """The features of `samples` seen through `view` (a new array; the dataset is untouched)."""
    x: np.ndarray = dataset.x[samples]
    if view == "identity":
        return x.copy()
    if view.startswith("rot"):
        degrees = float(view[3:])
        if x.ndim != 4:
            raise ValueError(f"view {view!r} needs images (n, C, H, W), got {x.shape}")
        if degrees % 90 == 0:
            return np.ascontiguousarray(np.rot90(x, int(degrees // 90) % 4, axes=(2, 3)))
        from scipy.ndimage import rotate

        rotated: np.ndarray = rotate(x, degrees, axes=(3, 2), reshape=False, order=1)
        return rotated.astype(x.dtype)
    if view.startswith("noise"):
        std = float(view[5:])
        tag = zlib.crc32(view.encode())
        noise = np.stack(
            [np.random.default_rng([tag, int(j)]).standard_normal(x.shape[1:]) for j in samples]
        ) if len(samples) else np.zeros_like(x)
        return (x + std * noise).astype(x.dtype)
    if view.startswith("modality:"):
        return x.reshape(len(x), -1)[:, dataset.modality_slice(view[len("modality:"):])]
    if view.startswith("labels:"):
        return x.copy()
    raise ValueError(f"unknown view {view!r}")


def label_map(view: str) -> np.ndarray | None:
    """The permutation p of a `labels:` view (label y is shown as p[y]); None for others."""
    if not view.startswith("labels:"):
        return None
    return np.array([int(c) for c in view[len("labels:"):].split(",")], dtype=np.int64)


def view_labels(
    dataset: Dataset, views: tuple[str, ...], indices: np.ndarray
) -> np.ndarray:
    """The labels of `indices` as their views show them (only `labels:` views change them)."""
    indices = np.asarray(indices, dtype=np.int64)
    if not views:
        labels: np.ndarray = dataset.y[indices]
        return labels
    view_of, sample = decode(indices, len(dataset.y))
    y: np.ndarray = dataset.y[sample].copy()
    for v in np.unique(view_of):
        perm = label_map(views[int(v)])
        if perm is not None:
            at = view_of == v
            y[at] = perm[y[at]]
    return y


def gather(
    dataset: Dataset, views: tuple[str, ...], indices: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of `indices` in order, decoding and applying views where the partition has them."""
    indices = np.asarray(indices, dtype=np.int64)
    if not views:
        return dataset.x[indices], dataset.y[indices]
    view_of, sample = decode(indices, len(dataset.x))
    used = np.unique(view_of)
    parts = {int(v): apply_view(dataset, views[int(v)], sample[view_of == v]) for v in used}
    shapes = {p.shape[1:] for p in parts.values()}
    if len(shapes) > 1:
        raise ValueError(f"indices mix views of different feature shapes: {sorted(shapes)}")
    if not parts:
        return dataset.x[:0], dataset.y[:0]
    x = np.empty((len(indices), *shapes.pop()), dtype=dataset.x.dtype)
    for v, part in parts.items():
        x[view_of == v] = part
    return x, view_labels(dataset, views, indices)


def client_data(
    dataset: Dataset, partition: Partition, client: int, part: str = "train"
) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of one client's `train` or `test` samples, views applied."""
    indices = {"train": partition.train, "test": partition.test}[part][client]
    return gather(dataset, partition.views, indices)


def holdout_data(dataset: Dataset, partition: Partition, s: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the held-out test set of distribution `s`."""
    return gather(dataset, partition.views, partition.holdout[s])
