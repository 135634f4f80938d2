"""A tiny name -> object registry used for datasets, schemes, models and algorithms."""

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from clusterfl.errors import unknown_name

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to entries; looking up an unknown name raises a one-line `UserError`."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str) -> Callable[[T], T]:
        def register(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._entries[name] = entry
            return entry

        return register

    def get(self, name: str, key: str | None = None) -> T:
        if name not in self._entries:
            raise unknown_name(key or self.kind, name, list(self._entries))
        return self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[tuple[str, T]]:
        return iter(sorted(self._entries.items()))
