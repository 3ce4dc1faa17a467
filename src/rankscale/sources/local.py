"""A local file: `.txt` (one document, or one per blank-line block) or JSON lines (`.jsonl`, `.jsonl.gz`)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rankscale.corpus import CorpusError, Document, get_field, record_text
from rankscale.sources.base import Source


def _is_jsonl(path: Path) -> bool:
    return path.suffix in (".jsonl", ".json") or path.name.endswith(".jsonl.gz")


def _records(path: Path, where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every non-blank line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    yield i, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CorpusError(f"{where}: {path}:{i} is not valid JSON ({exc.msg})") from exc


def check(spec: Mapping[str, Any], where: str, check_paths: bool) -> None:
    """The file exists, is not empty, and its first record has every text field."""
    if not check_paths:
        return
    path = Path(spec["path"])
    if not path.is_file():
        raise CorpusError(f"{where}.path: file {str(path)!r} does not exist")
    if path.stat().st_size == 0:
        raise CorpusError(f"{where}.path: file {str(path)!r} is empty")
    if _is_jsonl(path):
        first = next(_records(path, where), None)
        if first is None:
            raise CorpusError(f"{where}.path: file {str(path)!r} holds no records")
        for text_field in spec["text_fields"]:
            try:
                get_field(first[1], text_field, f"{where}.text_fields")
            except CorpusError as exc:
                raise CorpusError(f"{exc} in the first record of {str(path)!r}") from None


def documents(spec: Mapping[str, Any], where: str, revision: str | None) -> Iterator[Document]:
    path = Path(spec["path"])
    if not path.exists():
        raise CorpusError(f"{where}.path: file {str(path)!r} does not exist")
    if _is_jsonl(path):
        for i, record in _records(path, where):
            yield Document(str(record.get(spec["id_field"], i - 1)), record_text(record, spec, f"{where} ({path}:{i})"))
    else:
        text = path.read_text(encoding="utf-8")
        blocks = text.split("\n\n") if spec["split_paragraphs"] else [text]
        for i, block in enumerate(blocks):
            yield Document(f"{path.name}:{i}", block)


def provenance(spec: Mapping[str, Any], resolved: str | None) -> dict[str, Any]:
    return {"path": str(spec["path"]), "resolved_revision": "local file"}


SOURCE = Source(documents=documents, provenance=provenance, check=check)
