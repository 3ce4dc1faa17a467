"""What a dataset source provides (see `rankscale.sources` for the registry)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rankscale.corpus import Document, Skipped


def _no_check(spec: Mapping[str, Any], where: str, check_paths: bool) -> None:
    """Nothing to check before the corpus job runs."""


def _no_revision(spec: Mapping[str, Any], where: str) -> str | None:
    return None


@dataclass(frozen=True)
class Source:
    """One dataset source. `documents(spec, where, revision)` yields the entry's documents in a fixed
    order, and a `Skipped` for each invalid record the entry says to skip (so it is counted)."""

    name: str  # the `source:` value that picks it (its key in `rankscale.sources.SOURCES`)
    documents: Callable[[Mapping[str, Any], str, str | None], Iterable[Document | Skipped]]
    provenance: Callable[[Mapping[str, Any], str | None], dict[str, Any]]
    check: Callable[[Mapping[str, Any], str, bool], None] = _no_check  # before any job: paths, fields
    resolve_revision: Callable[[Mapping[str, Any], str], str | None] = _no_revision  # the exact version to read
    shuffles: bool = False  # the source applies `seed` itself (hub: the datasets library's shuffle)
