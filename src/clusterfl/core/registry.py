"""A tiny name -> object registry used for datasets, schemes, models and algorithms.

An entry is added as an object (`add`) or, lazily, as a "module:attribute" string that is
imported on its first lookup (`Registry(kind, lazy=...)`): the algorithm registry names every
general method that way, so that importing the registry imports none of them, and the import
graph (`pipeline.imports`) leads from a train cell to its own algorithm's file only.
"""

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from clusterfl.core.errors import unknown_name

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to entries; looking up an unknown name raises a one-line `UserError`."""

    def __init__(self, kind: str, lazy: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, str] = dict(lazy or {})  # name -> "module:attribute", not loaded

    def add(self, name: str) -> Callable[[T], T]:
        def register(entry: T) -> T:
            if name in self._entries or name in self._lazy:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._entries[name] = entry
            return entry

        return register

    def get(self, name: str, key: str | None = None) -> T:
        if name in self._lazy:
            module, _, attribute = self._lazy.pop(name).partition(":")
            self._entries[name] = getattr(importlib.import_module(module), attribute)
        if name not in self._entries:
            raise unknown_name(key or self.kind, name, self.names())
        return self._entries[name]

    def module(self, name: str) -> str:
        """The module that defines entry `name`, without importing it."""
        if name in self._lazy:
            return self._lazy[name].partition(":")[0]
        return getattr(self.get(name), "__module__", "")

    def names(self) -> list[str]:
        return sorted([*self._entries, *self._lazy])

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[tuple[str, T]]:
        """Every entry, the lazy ones imported."""
        return iter([(name, self.get(name)) for name in self.names()])
