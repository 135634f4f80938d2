"""Build a frozen options dataclass from a params.yaml mapping, with one-line errors.

Every algorithm, data source and partition scheme declares its hyperparameters as a frozen
dataclass; this is the one place that checks a params mapping against it.
"""

import dataclasses
import math
import os
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from clusterfl.core.errors import UserError, check_keys

T = TypeVar("T")
# the largest float32 (numpy.finfo(numpy.float32).max): the models train in float32, and a
# hyperparameter beyond it (`lr: 1e300`) overflows in the first tensor operation it meets
FLOAT32_MAX = 3.4028234663852886e38


def _check_type(key: str, value: Any, annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in typing.get_args(annotation):
            return None
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        origin = typing.get_origin(annotation)
    if annotation is float and isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise UserError(f"{key}: must be a finite number, got {value!r}")
        if abs(value) > FLOAT32_MAX:
            raise UserError(f"{key}: {value!r} overflows float32, the models' dtype; allowed: "
                            f"numbers of magnitude up to {FLOAT32_MAX:.4g}")
        return float(value)
    if annotation is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if annotation is int and isinstance(value, float) and value.is_integer():
        return int(value)  # `rounds: 1e3` (YAML 1.2 reads it as a float)
    if annotation is bool and isinstance(value, bool):
        return value
    if annotation is str and isinstance(value, str):
        return value
    if origin is tuple and isinstance(value, list | tuple):
        inner = typing.get_args(annotation)[0]
        return tuple(_check_type(key, v, inner) for v in value)
    if origin is typing.Literal:
        allowed = typing.get_args(annotation)
        if value in allowed:
            return value
        raise UserError(f"{key}: {value!r} is not allowed; allowed: {', '.join(map(str, allowed))}")
    name = getattr(annotation, "__name__", str(annotation))
    quoted = ""
    if annotation in (int, float) and isinstance(value, str):
        try:
            float(value)
            quoted = " (a string: write the number without quotes)"
        except ValueError:
            pass
    raise UserError(f"{key}: expected {name}, got {value!r}{quoted}")


def build_options(cls: type[T], mapping: Mapping[str, Any] | None, key: str) -> T:
    """Instantiate `cls` from `mapping`; unknown keys and wrong types name `key.field`."""
    mapping = dict(mapping or {})
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    check_keys({k: None for k in sorted(mapping)}, fields, key)
    values = {name: _check_type(f"{key}.{name}", v, hints[name]) for name, v in mapping.items()}
    try:
        options = cls(**values)
    except TypeError as err:  # a required field is missing
        raise UserError(f"{key}: {err}") from None
    validate = getattr(options, "validate", None)
    if validate is not None:
        validate(key)
    return options


def require(condition: bool, key: str, message: str) -> None:
    """Raise a one-line `UserError` for `key` unless `condition` holds."""
    if not condition:
        raise UserError(f"{key}: {message}")


def count(key: str, value: int | None, env: str | None = None) -> int | None:
    """A count of processes or threads: `value` (the option `key`, e.g. --jobs) if given, else
    the environment variable `env` if set, else None (the caller's default). Either must be an
    integer >= 1: 0 is no count, and a typo in the environment is one line, not int()'s
    traceback."""
    if value is None:
        text = os.environ.get(env, "").strip() if env else ""
        if not text:
            return None
        try:
            value = int(text)
        except ValueError:
            raise UserError(f"{env}: expected an integer >= 1, got {text!r}") from None
        assert env is not None  # text came from it
        key = env
    if value < 1:
        raise UserError(f"{key}: must be an integer >= 1, got {value}")
    return value


# Sizes read from params checked against this machine's memory before anything is allocated:
# a generator asked for 10^11 clients is one line naming the key, not numpy's
# `_ArrayMemoryError` (or the kernel's OOM killer) after minutes of work.
FLOAT64 = 8  # bytes: generators draw float64 before storing float32


def available_bytes() -> int:
    """Memory a new allocation can have now: MemAvailable of /proc/meminfo (Linux), else
    the machine's physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # not reached


def require_fits(key: str, needed: int, what: str, available: int | None = None) -> None:
    """A one-line `UserError` for `key` if `needed` bytes (`what` says for what) exceed the
    memory available now."""
    free = available_bytes() if available is None else available
    if needed > free:
        raise UserError(f"{key}: {what} needs at least {human(needed)} of memory, more than "
                        f"the {human(free)} available here; lower it")
