"""Documents and their text: records' fields joined into text, the held-out split, JSONL files.

Where documents come from (packaged, local, hub) is `rankscale.sources`; this module holds
what every source shares.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPLITS = ("all", "train", "heldout")


class CorpusError(ValueError):
    """A dataset entry cannot be turned into documents; the message names the key."""


@dataclass(frozen=True)
class Document:
    id: str
    text: str


def in_heldout(key: str, fraction: float) -> bool:
    """Stable, seed-free split: a document is held out when its key hashes below `fraction`."""
    value = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
    return value < fraction


def split_documents(docs: Iterable[Document], split: str, fraction: float) -> Iterator[Document]:
    """`all`, or the `train` / `heldout` side of the stable hash split."""
    if split not in SPLITS:
        raise CorpusError(f"split_heldout: {split!r} is not one of {SPLITS}")
    for doc in docs:
        if split == "all" or (split == "heldout") == in_heldout(doc.id, fraction):
            yield doc


def get_field(record: Mapping[str, Any], field: str, where: str, list_separators: Sequence[str] = ("\n",)) -> str:
    """Text at a dotted `field` path; lists are joined with `list_separators` by nesting depth.

    HotpotQA's `context.sentences` is a list of paragraphs, each a list of sentences that
    carry their own leading spaces: `list_separators: ["\n\n", ""]` rebuilds the paragraphs.
    """
    value: Any = record
    for part in field.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            keys = sorted(value) if isinstance(value, Mapping) else type(value).__name__
            raise CorpusError(f"{where}: text field {field!r} not found (at {part!r}; available: {keys})")
    return _flatten(value, tuple(list_separators) or ("\n",))


def _flatten(value: Any, separators: tuple[str, ...], depth: int = 0) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        separator = separators[min(depth, len(separators) - 1)]
        return separator.join(_flatten(v, separators, depth + 1) for v in value)
    if value is None:
        return ""
    return str(value)


def record_text(record: Mapping[str, Any], spec: Mapping[str, Any], where: str) -> str:
    """A record's document text: its `text_fields` joined with `separator`."""
    separators = tuple(spec["list_separators"])
    return spec["separator"].join(get_field(record, f, where, separators) for f in spec["text_fields"])


def write_jsonl(docs: Iterable[Document], path: Path) -> int:
    """Write documents as JSONL (id, text); returns the count."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for doc in docs:
            fh.write(json.dumps({"id": doc.id, "text": doc.text}, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> list[Document]:
    with open(path, encoding="utf-8") as fh:
        return [Document(r["id"], r["text"]) for r in map(json.loads, fh)]
