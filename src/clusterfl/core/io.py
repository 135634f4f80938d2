"""Atomic file writes: a result is either complete on disk or absent, never half-written;
and the content checksums recorded in written files and checked when they are read."""

import hashlib
import json
import math
import os
import re
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from clusterfl.core.errors import UserError


def temporary_file(directory: Path, prefix: str, suffix: str = "") -> Path:
    """A new empty file `<prefix><random><suffix>` in `directory`, with the mode the process
    umask gives a new file (0644 under umask 022): unlike `tempfile.mkstemp`'s 0600, so that
    a result swapped in from it can be served and shared like any file the user writes."""
    for _ in range(100):
        tmp = directory / f"{prefix}{secrets.token_hex(4)}{suffix}"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"{directory}: no free name {prefix}*{suffix}")


def temporary_dir(directory: Path, prefix: str) -> Path:
    """A new empty directory `<prefix><random>` in `directory`, with the mode the process
    umask gives (0755 under umask 022), unlike `tempfile.mkdtemp`'s 0700."""
    for _ in range(100):
        tmp = directory / f"{prefix}{secrets.token_hex(4)}"
        try:
            tmp.mkdir(mode=0o777)
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"{directory}: no free name {prefix}*")


def _atomic(path: Path, write: Callable[[Path], object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_file(path.parent, f".{path.name}.", ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as err:  # e.g. a full disk: the error names `path`, not the temporary
        tmp.unlink(missing_ok=True)
        if err.errno is None or err.filename not in (None, str(tmp)):
            raise
        raise OSError(err.errno, err.strerror or os.strerror(err.errno), str(path)) from err
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    _atomic(path, lambda tmp: tmp.write_text(text))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


NPZ_CHECKSUM = "__sha256__"  # the entry of an .npz that holds the sha256 of the others


def content_sha256(obj: Any) -> str:
    """sha256 of a JSON value in canonical form (sorted keys): equal after a JSON round trip."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def arrays_sha256(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over every array's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def atomic_write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write `arrays` compressed, with their checksum as entry `NPZ_CHECKSUM`."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    checksum = np.array(arrays_sha256(arrays))

    def write(tmp: Path) -> None:
        with tmp.open("wb") as f:
            # numpy's stub reads `**arrays` as possibly its `allow_pickle: bool` keyword
            entries: dict[str, Any] = {**arrays, NPZ_CHECKSUM: checksum}
            np.savez_compressed(f, **entries)

    _atomic(path, write)


def read_npz(path: Path, kinds: dict[str, str], what: str) -> dict[str, np.ndarray]:
    """Every array of the `.npz` at `path`, validated: a readable archive without pickled
    objects, the checksum recorded when it was written, and each name of `kinds` present
    with a dtype of that kind (numpy kind letters, e.g. "iu" for integers, "f", "U").
    Anything else is a one-line `CorruptFile` naming the file; `what` names the kind of file.
    """
    from clusterfl.core.errors import CorruptFile

    try:
        with path.open("rb") as f:
            if f.read(4) != b"PK\x03\x04":  # every .npz is a zip archive
                raise CorruptFile(path, f"not a valid {what} (not an .npz archive)")
        with np.load(path, allow_pickle=False) as f:
            arrays = {name: f[name] for name in f.files}
    except FileNotFoundError:
        raise CorruptFile(path, "missing") from None
    except CorruptFile:
        raise
    except Exception as err:  # zipfile, zlib, pickle and format errors all mean: unreadable
        raise CorruptFile(path, f"not a valid {what} ({type(err).__name__}: {err})") from None
    recorded = arrays.pop(NPZ_CHECKSUM, None)
    if recorded is None:
        raise CorruptFile(path, f"not a {what} written by clusterfl (no recorded checksum)")
    if str(recorded) != arrays_sha256(arrays):
        raise CorruptFile(path, "checksum differs from the one recorded when it was written "
                                "(the file was changed)")
    for name, kind in kinds.items():
        if name not in arrays:
            raise CorruptFile(path, f"not a valid {what}: no array {name!r}")
        if arrays[name].dtype.kind not in kind:
            raise CorruptFile(path, f"not a valid {what}: {name!r} has dtype "
                                    f"{arrays[name].dtype}")
    return arrays


def atomic_write_bytes(path: Path, data: bytes) -> None:
    _atomic(path, lambda tmp: tmp.write_bytes(data))


def mapping(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise UserError(f"{key}: expected a mapping, got {type(value).__name__}")
    return dict(value)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader reading floats as YAML 1.2 (and DVC, which reads the same params)
    does: YAML 1.1 wants a dot and a signed exponent, so `1e30` and `1e-5` were strings."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def non_finite(value: Any, key: str) -> str | None:
    """The path (under `key`) of the first inf or nan in a parsed YAML value, else None."""
    if isinstance(value, float) and not math.isfinite(value):
        return key
    items = (value.items() if isinstance(value, Mapping)
             else enumerate(value) if isinstance(value, list) else ())
    for name, item in items:
        if (found := non_finite(item, f"{key}{name}" if key.endswith(":")
                                else f"{key}[{name}]" if isinstance(name, int)
                                else f"{key}.{name}")) is not None:
            return found
    return None


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping; a missing file, malformed YAML, an empty file or an inf/nan anywhere
    (no params value is infinite) is one line."""
    try:
        text = path.read_text()
    except OSError as err:
        raise UserError(f"{path}: cannot read ({err.strerror})") from None
    try:
        raw = yaml.load(text, Loader=_Loader)  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{path}: not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    if raw is None:
        raise UserError(f"{path}: empty file; expected a mapping")
    if (key := non_finite(raw, f"{path}:")) is not None:
        raise UserError(f"{key}: must be a finite number (not inf or nan)")
    return mapping(raw, str(path))


def shown(path: Path) -> Path:
    """`path` as errors show it: relative to the working directory where it is below it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path
