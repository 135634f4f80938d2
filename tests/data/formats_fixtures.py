"""Small files in the real on-disk formats, made by the tests."""

import gzip
import hashlib
import io
import pickle
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np


def idx_bytes(array: np.ndarray) -> bytes:
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.tobytes()


def write_idx_gz(path: Path, array: np.ndarray) -> Path:
    path.write_bytes(gzip.compress(idx_bytes(array), mtime=0))
    return path


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def write_cifar_tar(path: Path, per_batch: int, rng: np.random.Generator) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            batch = {
                b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                b"labels": rng.integers(0, 10, per_batch).tolist(),
            }
            raw = pickle.dumps(batch)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return path


def write_har_zip(path: Path, sizes: dict[str, int], rng: np.random.Generator) -> dict:
    truth = {}
    signals = ["total_acc_x", "total_acc_y", "total_acc_z", "body_gyro_x", "body_gyro_y",
               "body_gyro_z", "body_acc_x", "body_acc_y", "body_acc_z"]
    with zipfile.ZipFile(path, "w") as z:
        for part, n in sizes.items():
            base = f"UCI HAR Dataset/{part}"
            for s in signals:
                values = rng.normal(size=(n, 128)).round(6)
                truth[(part, s)] = values
                z.writestr(f"{base}/Inertial Signals/{s}_{part}.txt",
                           "\n".join("  " + " ".join(f"{v: .7e}" for v in row) for row in values))
            y = rng.integers(1, 7, n)
            subject = rng.integers(1, 31, n)
            truth[(part, "y")], truth[(part, "subject")] = y, subject
            z.writestr(f"{base}/y_{part}.txt", "\n".join(map(str, y)) + "\n")
            z.writestr(f"{base}/subject_{part}.txt", "\n".join(map(str, subject)) + "\n")
    return truth
