"""User-facing errors: printed as one line by the CLI, never as a traceback."""

import difflib
from collections.abc import Iterable, Mapping
from typing import Any


class UserError(Exception):
    """Bad input from the user (a params key, a name, a file). The message is one line."""


class CorruptFile(UserError):
    """A data, partition or history file that fails validation (unreadable, wrong format,
    shapes or dtypes, or a checksum that differs from the one recorded when it was written).
    The CLI adds the command that rebuilds `path` (`pipeline.common.rebuild_command`)."""

    def __init__(self, path: object, problem: str) -> None:
        self.path, self.problem = str(path), " ".join(str(problem).split())  # one line
        super().__init__(f"{self.path}: {self.problem}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # crosses process boundaries
        return CorruptFile, (self.path, self.problem)


def _suggest(value: object, allowed: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(value), list(allowed), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_name(key: str, value: object, allowed: list[str] | tuple[str, ...]) -> UserError:
    """The error for a name that is not in a registry, naming the key and the allowed values."""
    return UserError(f"{key}: unknown value {value!r}{_suggest(value, allowed)}; "
                     f"allowed: {', '.join(sorted(allowed))}")


def child(key: str, name: object) -> str:
    """The path of `name` under `key`: `file.yaml:` + `a` -> `file.yaml:a`, `k` -> `k.a`."""
    return f"{key}{name}" if key.endswith(":") else f"{key}.{name}"


def check_keys(mapping: Mapping[str, Any], allowed: Iterable[str], key: str) -> None:
    """Params are closed: an unknown key is an error naming its full path (`key` is the
    path of `mapping`, e.g. `params.yaml:suite`, or `params.yaml:` for a file's top level),
    the allowed keys and the closest one."""
    allowed = sorted(allowed)
    for name in mapping:
        if name not in allowed:
            raise UserError(f"{child(key, name)}: unknown key{_suggest(name, allowed)}; "
                            f"allowed: {', '.join(allowed) or '(none)'}")
