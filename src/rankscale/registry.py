"""A name -> entry registry that refuses a duplicate name and lists what it has when a name is unknown.

TABLES and FIGURES are built from every topic module's list; a dict comprehension would let a second entry
of one name replace the first in silence (one table computed, another's file name). lm-eval's task registry
refuses duplicates the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Read-only, in registration order."""

    def __init__(self, kind: str, entries: Iterable[T], name: Callable[[T], str]) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        for entry in entries:
            key = name(entry)
            if key in self._entries:
                raise ValueError(f"two {kind}s are registered as {key!r}: {self._entries[key]!r} and {entry!r}")
            self._entries[key] = entry

    def __getitem__(self, key: str) -> T:
        try:
            return self._entries[key]
        except KeyError:
            raise KeyError(f"no {self.kind} {key!r}; registered: {', '.join(self._entries)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
