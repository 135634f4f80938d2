"""Readers for the on-disk formats of the real datasets, each a pure function of its files.

- IDX (MNIST, Fashion-MNIST, EMNIST): big-endian magic `0x0000 08 ndim`, ndim uint32 sizes,
  then uint8 data; read from `.gz` files or from members of a zip (EMNIST's `gzip.zip`).
- CIFAR-10 python: `cifar-10-python.tar.gz` holding `cifar-10-batches-py/data_batch_1..5` and
  `test_batch`, each a pickle of {b"data": uint8 (10000, 3072), b"labels": list[int]}.
- UCI HAR: `UCI HAR Dataset.zip` holding `UCI HAR Dataset/{train,test}/Inertial Signals/
  <signal>_<split>.txt` (one window of 128 readings a row, whitespace-separated),
  `y_<split>.txt` (labels 1..6) and `subject_<split>.txt` (subjects 1..30).
- sktime `.ts` (BasicMotions): header lines starting with `#` or `@`, then one case a line:
  dimensions separated by `:`, values by `,`, the class label last.
- CMU-MOSEI: the `.npz` file documented in docs/data.md (`read_mosei_npz`).
"""

import gzip
import io
import pickle
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from clusterfl.core.errors import UserError


def parse_idx(raw: bytes, source: str = "IDX data") -> np.ndarray:
    """Decode one uncompressed IDX buffer of unsigned bytes."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise UserError(f"{source}: not an IDX file of unsigned bytes")
    ndim = raw[3]
    dims = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, offset=4))
    data = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise UserError(f"{source}: header says {dims} but holds {data.size} bytes")
    return data.reshape(dims)


def read_idx_gz(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return parse_idx(f.read(), str(path))


def read_idx_gz_from_zip(path: Path, member: str) -> np.ndarray:
    with zipfile.ZipFile(path) as z, z.open(member) as f:
        return parse_idx(gzip.decompress(f.read()), f"{path}:{member}")


def read_cifar10_tar(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Images (n, 3, 32, 32) uint8, labels, and split (0 = data_batch_*, 1 = test_batch)."""
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    xs, ys, splits = [], [], []
    with tarfile.open(path, "r:gz") as tar:
        for name in names:
            member = tar.extractfile(f"cifar-10-batches-py/{name}")
            if member is None:
                raise UserError(f"{path}: cifar-10-batches-py/{name} is not a file")
            batch = pickle.load(io.BytesIO(member.read()), encoding="bytes")
            data = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
            xs.append(data)
            ys.append(np.asarray(batch[b"labels"], dtype=np.int64))
            splits.append(np.full(len(data), int(name == "test_batch"), dtype=np.int8))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(splits)


HAR_ACCELEROMETER = ("total_acc_x", "total_acc_y", "total_acc_z")
HAR_GYROSCOPE = ("body_gyro_x", "body_gyro_y", "body_gyro_z")


def _read_table(z: zipfile.ZipFile, member: str) -> np.ndarray:
    with z.open(member) as f:
        return np.loadtxt(io.TextIOWrapper(f), dtype=np.float64, ndmin=2)


def read_uci_har_zip(path: Path) -> dict[str, np.ndarray]:
    """{'accelerometer', 'gyroscope'}: (n, 3, 128); 'y' 0..5; 'subject' 1..30; 'split'."""
    root = "UCI HAR Dataset"
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("acc", "gyro", "y", "subject", "split")}
    with zipfile.ZipFile(path) as z:
        for i, part in enumerate(("train", "test")):
            signals = f"{root}/{part}/Inertial Signals"
            out["acc"].append(np.stack(
                [_read_table(z, f"{signals}/{s}_{part}.txt") for s in HAR_ACCELEROMETER], axis=1
            ))
            out["gyro"].append(np.stack(
                [_read_table(z, f"{signals}/{s}_{part}.txt") for s in HAR_GYROSCOPE], axis=1
            ))
            y = _read_table(z, f"{root}/{part}/y_{part}.txt")[:, 0].astype(np.int64)
            out["y"].append(y - 1)
            out["subject"].append(
                _read_table(z, f"{root}/{part}/subject_{part}.txt")[:, 0].astype(np.int64)
            )
            out["split"].append(np.full(len(y), i, dtype=np.int8))
    arrays = {k: np.concatenate(v) for k, v in out.items()}
    return {
        "accelerometer": arrays["acc"], "gyroscope": arrays["gyro"], "y": arrays["y"],
        "subject": arrays["subject"], "split": arrays["split"],
    }


def read_ts(path: Path) -> tuple[np.ndarray, list[str], list[str]]:
    """A multivariate equal-length `.ts` file: (n, dims, length) float64, labels, class names."""
    cases, labels, class_names = [], [], []
    in_data = False
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not in_data:
            if line.lower().startswith("@classlabel"):
                class_names = line.split()[2:]
            in_data = line.lower() == "@data"
            continue
        *dims, label = line.split(":")
        cases.append([[float(v) for v in d.split(",")] for d in dims])
        labels.append(label)
    return np.asarray(cases, dtype=np.float64), labels, class_names


MOSEI_MODALITIES = ("text", "audio", "vision")


def read_mosei_npz(path: Path) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray | None]:
    """The CMU-MOSEI features file of docs/data.md: modalities, labels, optional split."""
    path = Path(path)
    if not path.exists():
        raise UserError(
            f"CMU-MOSEI features file {path} not found; make it as docs/data.md describes"
            " and pass its path in the path option"
        )
    with np.load(path, allow_pickle=False) as f:
        present = [m for m in MOSEI_MODALITIES if m in f.files]
        if not present or "label" not in f.files:
            raise UserError(
                f"{path}: needs a 'label' array and at least one of {', '.join(MOSEI_MODALITIES)}"
                f"; found {', '.join(f.files)}"
            )
        label = f["label"].astype(np.int64)
        modalities = {m: f[m].astype(np.float32) for m in present}
        split = f["split"].astype(np.int8) if "split" in f.files else None
    for m, arr in modalities.items():
        if len(arr) != len(label):
            raise UserError(f"{path}: '{m}' has {len(arr)} rows but 'label' has {len(label)}")
    if split is not None and len(split) != len(label):
        raise UserError(f"{path}: 'split' has {len(split)} rows but 'label' has {len(label)}")
    return modalities, label, split
