"""A local file: text (one document, or one per blank-line block) or JSON lines, either gzipped.

The format is the entry's `format:`, else read from the suffix in any case (`.JSONL` is JSON
lines); gzip is recognised by its magic bytes as well as by `.gz`. Every error names the file,
and the line or byte offset where one exists.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from rankscale.corpus import CorpusError, Document, FieldNotFound, InvalidRecord, Skipped, get_field, record_document
from rankscale.sources.base import Source

FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".txt": "txt", ".text": "txt", ".md": "txt", "": "txt"}


def file_format(spec: Mapping[str, Any], where: str) -> str:
    """`txt` or `jsonl`: the entry's `format`, else from the suffix (case-insensitive, `.gz` looked through)."""
    if spec["format"]:
        return str(spec["format"])
    name = Path(spec["path"]).name.lower()
    suffix = Path(name.removesuffix(".gz")).suffix
    if suffix not in FORMATS:
        raise CorpusError(
            f"{where}.format: cannot tell the format of {spec['path']!r} from its suffix {suffix!r}; "
            "set `format: txt` or `format: jsonl`"
        )
    return FORMATS[suffix]


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b" or path.name.lower().endswith(".gz")


def _open(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")  # type: ignore[return-value]


def _not_utf8(path: Path, line: int, offset: int, exc: UnicodeDecodeError, where: str) -> CorpusError:
    of = " of the decompressed data" if is_gzip(path) else ""
    bad = exc.object[exc.start : exc.start + 1].hex()
    return CorpusError(
        f"{where}: {path}:{line}: not UTF-8 (byte 0x{bad} at byte offset {offset}{of}: {exc.reason}); "
        "convert the file to UTF-8"
    )


def _unreadable(path: Path, exc: Exception, where: str) -> CorpusError:
    what = "a readable gzip file (corrupt or truncated?)" if is_gzip(path) else "readable"
    return CorpusError(f"{where}.path: {path} is not {what}: {exc}")


def _lines(path: Path, where: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line, decoded as UTF-8."""
    offset = 0
    try:
        with _open(path) as fh:
            for i, raw in enumerate(fh, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _not_utf8(path, i, offset + exc.start, exc, where) from None
                offset += len(raw)
                yield i, text.removeprefix("\ufeff") if i == 1 else text
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc, where) from None


def _records(path: Path, where: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON value) of every non-blank line."""
    for i, line in _lines(path, where):
        if line.strip():
            try:
                yield i, json.loads(line.rstrip("\r\n"))  # so an error's column is on this line
            except json.JSONDecodeError as exc:
                raise CorpusError(
                    f"{where}: {path}:{i} is not valid JSON ({exc.msg}, column {exc.colno}); fix or remove that line"
                ) from None


def _text(path: Path, where: str) -> str:
    """The file's text."""
    try:
        with _open(path) as fh:
            data = fh.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc, where) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, data.count(b"\n", 0, exc.start) + 1, exc.start, exc, where) from None


def check_utf8(path: Path, where: str) -> bool:
    """The whole file decodes as UTF-8 (read in chunks: fast, and before any job runs); whether it holds any text
    but whitespace."""
    base, line, carry, text = 0, 1, b"", False
    try:
        with _open(path) as fh:
            while True:
                chunk = fh.read(1 << 20)
                data = carry + chunk
                if not data:
                    return text
                try:
                    text = bool(data.decode("utf-8").strip()) or text
                    carry, consumed = b"", len(data)
                except UnicodeDecodeError as exc:
                    if chunk and exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
                        carry, consumed = data[exc.start :], exc.start  # a character cut at the chunk's end
                        text = bool(data[: exc.start].decode("utf-8").strip()) or text
                    else:
                        raise _not_utf8(
                            path, line + data.count(b"\n", 0, exc.start), base + exc.start, exc, where
                        ) from None
                line += data.count(b"\n", 0, consumed)
                base += consumed
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc, where) from None


def check(spec: Mapping[str, Any], where: str, check_paths: bool) -> None:
    """The format is known; the file exists, is not empty, is UTF-8 throughout, and every record is valid JSON
    with its text fields (unless the entry skips invalid records): a bad line is refused with file and line
    before any job, not by the corpus job. Some text must remain once read (not every text empty): the corpus
    job would otherwise find no document and blame the split. A file checked unchanged is not read again
    (`CHECKED`)."""
    fmt = file_format(spec, where)
    if not check_paths:
        return
    path = Path(spec["path"])
    if not path.is_file():
        raise CorpusError(f"{where}.path: file {str(path)!r} does not exist")
    if path.stat().st_size == 0:
        raise CorpusError(f"{where}.path: file {str(path)!r} is empty")
    stamp = _stamp(path, spec, fmt)
    if stamp in _checked():
        return
    has_text = check_utf8(path, where)
    if fmt == "jsonl":
        _check_records(path, spec, where)
    elif not has_text:
        raise CorpusError(
            f"{where}.path: file {str(path)!r} holds only whitespace (read as `format: txt`, the whole file as "
            "text): the corpus would be empty before any split; give a file with text"
        )
    _remember(stamp)


def _check_records(path: Path, spec: Mapping[str, Any], where: str) -> None:
    """Every record: the first must have every text field; each is refused (file:line) unless skipped."""
    count = texts = 0
    for line, record in _records(path, where):
        if not count and isinstance(record, dict):
            for text_field in spec["text_fields"]:
                try:
                    get_field(record, text_field, f"{where}.text_fields", spec["list_separators"])
                except FieldNotFound as exc:
                    raise CorpusError(f"{exc} in the first record of {str(path)!r}; set `text_fields`") from None
                except InvalidRecord:
                    pass  # its type is checked next, with the line
        document = record_document(record, spec, f"{where} ({path}:{line})", count)  # refused unless skipped
        texts += isinstance(document, Document) and bool(document.text.strip())
        count += 1
    if not count:
        raise CorpusError(f"{where}.path: file {str(path)!r} holds no records; give a file of JSON lines")
    if not texts:
        skipped = ", or the record skipped as invalid" if spec["skip_invalid_records"] else ""
        raise CorpusError(
            f"{where}.text_fields: none of the {count} records of {str(path)!r} has text in the fields read "
            f"({spec['text_fields']}: each empty or whitespace{skipped}): the corpus would be empty before any "
            "split; name the fields that hold the documents' text"
        )


CHECKED = Path(".snakemake") / "rankscale" / "checked_files.json"  # files found valid, by stamp (working directory)
CHECKS = 2  # what `check` checks, as a version: 2 refuses a file whose texts are all empty


def _stamp(path: Path, spec: Mapping[str, Any], fmt: str) -> str:
    """The file (where, size, modification time) and the settings its records were checked with."""
    stat = path.stat()
    reading = [spec.get(k) for k in ("text_fields", "list_separators", "skip_invalid_records")]
    checks = CHECKS  # a file found valid by fewer checks is checked again
    return hashlib.sha256(
        repr([str(path.resolve()), stat.st_size, stat.st_mtime_ns, fmt, reading, checks]).encode()
    ).hexdigest()


def _checked() -> set[str]:
    try:
        return set(json.loads(CHECKED.read_text()))
    except (OSError, ValueError, TypeError):
        return set()  # none yet, or a damaged cache: check again


def _remember(stamp: str) -> None:
    import os

    known = sorted(_checked() | {stamp})[-1000:]
    try:
        CHECKED.parent.mkdir(parents=True, exist_ok=True)
        tmp = CHECKED.with_name(f".{CHECKED.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known))
        os.replace(tmp, CHECKED)
    except OSError:
        pass  # only a cache


def documents(spec: Mapping[str, Any], where: str, revision: str | None) -> Iterator[Document | Skipped]:
    path, fmt = Path(spec["path"]), file_format(spec, where)
    if not path.exists():
        raise CorpusError(f"{where}.path: file {str(path)!r} does not exist")
    if fmt == "jsonl":
        for i, record in _records(path, where):
            yield record_document(record, spec, f"{where} ({path}:{i})", i - 1)
    else:
        text = _text(path, where)
        blocks = text.split("\n\n") if spec["split_paragraphs"] else [text]
        for i, block in enumerate(blocks):
            yield Document(f"{path.name}:{i}", block)


def provenance(spec: Mapping[str, Any], resolved: str | None) -> dict[str, Any]:
    return {"path": str(spec["path"]), "resolved_revision": "local file"}


SOURCE = Source(name="local", documents=documents, provenance=provenance, check=check)
