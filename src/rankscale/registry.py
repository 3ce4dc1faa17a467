"""A name -> entry registry that refuses a duplicate name and lists what it has when a name is unknown.

Every extension point (TABLES, FIGURES, METRICS, FORMS, SOURCES, STRATA) is one: an entry is added with
`register`, never by item assignment, so a second entry of a name (a recipe's `METRICS["ce"] = ...`) fails,
naming both, instead of replacing a built-in in silence. lm-eval's task registry refuses duplicates the same way.
An entry that names its implementation as "module:function" has it imported by `resolve`, by the job that runs it.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Read-only but for `register`, in registration order."""

    def __init__(self, kind: str, entries: Iterable[T] = (), key_of: Callable[[T], str] = lambda e: e.name) -> None:
        self.kind = kind
        self._key_of = key_of  # an entry's name
        self._entries: dict[str, T] = {}
        for entry in entries:
            self.register(entry)

    def register(self, entry: T) -> T:
        """Add `entry` under its name; a name registered already is refused, naming both entries."""
        key = self._key_of(entry)
        if key in self._entries:
            raise ValueError(f"two {self.kind}s are registered as {key!r}: {self._entries[key]!r} and {entry!r}")
        self._entries[key] = entry
        return entry

    @contextlib.contextmanager
    def added(self, entry: T) -> Iterator[T]:
        """`entry` registered for the length of a `with` block (a test's form or metric), then gone again."""
        self.register(entry)
        try:
            yield entry
        finally:
            del self._entries[self._key_of(entry)]

    def __getitem__(self, key: str) -> T:
        try:
            return self._entries[key]
        except KeyError:
            raise KeyError(f"no {self.kind} {key!r}; registered: {', '.join(self._entries)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"


def resolve(target: str) -> Any:
    """The object a "module:function" string names, imported now."""
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise ValueError(f"{target!r} is not a 'module:function' name")
    return getattr(importlib.import_module(module), attribute)
