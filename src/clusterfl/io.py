"""Atomic file writes: a result is either complete on disk or absent, never half-written."""

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    _atomic(path, lambda tmp: tmp.write_text(text))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def atomic_write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    def write(tmp: Path) -> None:
        with tmp.open("wb") as f:
            np.savez_compressed(f, **arrays)

    _atomic(path, write)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    _atomic(path, lambda tmp: tmp.write_bytes(data))
