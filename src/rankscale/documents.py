"""A dataset entry's documents: what its source (`rankscale.sources.SOURCES`) yields, after the steps every source
shares (held-out split, seeded shuffle, size limits) and with its provenance for the corpus sidecar.

Apart from the sources themselves: the corpus format (`rankscale.formats.CORPUS_FORMAT`) pins this code, and each
source's module is pinned on its own (`SOURCE_FORMATS`), so a new source moves no existing pin.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rankscale.config import dataset_spec
from rankscale.corpus import CorpusError, Document, Skipped, split_documents
from rankscale.sources import SOURCES
from rankscale.sources.base import Source

log = logging.getLogger(__name__)


def source_of(spec: Mapping[str, Any], where: str) -> Source:
    name = spec["source"]
    if name not in SOURCES:
        raise CorpusError(f"{where}.source: unknown dataset source {name!r}; choose one of {sorted(SOURCES)}")
    return SOURCES[name]


# Each function takes a dataset entry as written or as validated: `dataset_spec` checks it
# against the schema and fills in its source's defaults (idempotent and cheap).


def check_dataset(spec: Mapping[str, Any], where: str, check_paths: bool = True) -> None:
    """What can be checked before any job: the source's own checks (files, fields, names)."""
    spec = dataset_spec(spec, where)
    source_of(spec, where).check(spec, where, check_paths)


def resolve_revision(spec: Mapping[str, Any], where: str = "dataset") -> str | None:
    """The exact version the corpus job reads (a hub commit), or None where the content hash identifies it."""
    spec = dataset_spec(spec, where)
    return source_of(spec, where).resolve_revision(spec, where)


def provenance(spec: Mapping[str, Any], resolved: str | None) -> dict[str, Any]:
    """Where a corpus came from, for its sidecar; always has `source` and `resolved_revision`."""
    spec = dataset_spec(spec)
    return {"source": spec["source"], **source_of(spec, "dataset").provenance(spec, resolved)}


def load_documents(spec: Mapping[str, Any], where: str, revision: str | None = None) -> list[Document]:
    """Documents of one dataset entry after split, shuffle and size limits (see `load_corpus`)."""
    return load_corpus(spec, where, revision)[0]


def load_corpus(
    spec: Mapping[str, Any], where: str, revision: str | None = None
) -> tuple[list[Document], dict[str, int]]:
    """Documents of one dataset entry after split, shuffle and size limits, and what was skipped.

    `revision`: the version `resolve_revision` returned, so what is read is what is recorded.
    `skipped_records` counts the invalid records read and skipped (`skip_invalid_records`).
    """
    spec = dataset_spec(spec, where)
    source = source_of(spec, where)
    skipped: list[Skipped] = []

    def valid(items: Iterable[Document | Skipped]) -> Iterator[Document]:
        for item in items:
            if isinstance(item, Skipped):
                skipped.append(item)
                if len(skipped) <= 3:
                    log.warning("skipped: %s", item.reason)
            else:
                yield item

    docs: Iterable[Document] = valid(source.documents(spec, where, revision))
    if "split_heldout" in spec:
        docs = split_documents(docs, spec["split_heldout"], spec["heldout_fraction"])
    docs = (d for d in docs if d.text.strip())
    if spec["seed"] is not None and not source.shuffles:
        materialised = list(docs)
        random.Random(spec["seed"]).shuffle(materialised)
        docs = materialised
    out = _limit(docs, spec["max_documents"], spec["max_chars"], spec["max_bytes"])
    if skipped:
        log.warning("%s: %d invalid records skipped (skip_invalid_records)", where, len(skipped))
    return out, {"skipped_records": len(skipped)}


def _limit(
    docs: Iterable[Document], max_documents: int | None, max_chars: int | None, max_bytes: int | None
) -> list[Document]:
    """The first documents, in order, until a cap is reached: a rule on the dataset alone, so every tokenizer
    (every family) scores the same documents and the bootstrap can draw them once for all."""
    out: list[Document] = []
    chars = size = 0
    for doc in docs:
        if max_documents is not None and len(out) >= max_documents:
            break
        if max_chars is not None and chars >= max_chars:
            break
        if max_bytes is not None and size >= max_bytes:
            break
        out.append(doc)
        chars += len(doc.text)
        size += len(doc.text.encode("utf-8"))
    return out
