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


class InvalidRecord(CorpusError):
    """One record holds no usable text (null, a number, an object, not a JSON object at all);
    refused, or skipped and counted where the entry sets `skip_invalid_records`."""


class FieldNotFound(InvalidRecord):
    """A text field is missing from a record (in the first record: a misspelt `text_fields`)."""


@dataclass(frozen=True)
class Skipped:
    """A record left out under `skip_invalid_records`, and why."""

    reason: str


JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
}


def json_type(value: Any) -> str:
    return "null" if value is None else JSON_TYPES.get(type(value), type(value).__name__)


def get_field(record: Mapping[str, Any], field: str, where: str, list_separators: Sequence[str]) -> str:
    """Text at a dotted `field` path; lists are joined with `list_separators` by nesting depth.

    HotpotQA's `context.sentences` is a list of paragraphs, each a list of sentences that
    carry their own leading spaces: `list_separators: ["\n\n", ""]` rebuilds the paragraphs.
    Anything but a string (or lists of strings) is refused: `str()` of a number, null or dict
    would be scored as if it were text.
    """
    value: Any = record
    for part in field.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            keys = sorted(value) if isinstance(value, Mapping) else type(value).__name__
            raise FieldNotFound(f"{where}: text field {field!r} not found (at {part!r}; available: {keys})")
    return _flatten(value, tuple(list_separators), field, where)


def _flatten(value: Any, separators: tuple[str, ...], field: str, where: str, depth: int = 0) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        separator = separators[min(depth, len(separators) - 1)]
        return separator.join(_flatten(v, separators, field, where, depth + 1) for v in value)
    inside = " inside its list" if depth else ""
    raise InvalidRecord(
        f"{where}: text field {field!r} holds {json_type(value)}{inside} ({str(value)[:60]!r}), not a string; "
        "fix the record, or set `skip_invalid_records: true` on the dataset to skip and count such records"
    )


def record_text(record: Mapping[str, Any], spec: Mapping[str, Any], where: str) -> str:
    """A record's document text: its `text_fields` joined with `separator`."""
    separators = tuple(spec["list_separators"])
    return spec["separator"].join(get_field(record, f, where, separators) for f in spec["text_fields"])


def record_document(record: Any, spec: Mapping[str, Any], where: str, default_id: int) -> Document | Skipped:
    """One record as a document, or `Skipped` where it is invalid and the entry says to skip such records."""
    try:
        if not isinstance(record, Mapping):
            raise InvalidRecord(f"{where}: the record is {json_type(record)}, not an object with text fields")
        text = record_text(record, spec, where)
    except InvalidRecord as exc:
        if spec["skip_invalid_records"]:
            return Skipped(str(exc))
        raise
    return Document(str(record.get(spec["id_field"], default_id)), text)


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
