"""A Hugging Face dataset: a hub id (read at a resolved commit), or a local copy with the hub's layout.

The same `datasets.load_dataset` call reads both, so the hub path is tested offline on local
copies with the real schemas (tests/hub_fixtures.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rankscale.corpus import CorpusError, Document, Skipped, record_document
from rankscale.sources.base import Source


def is_commit(revision: str | None) -> bool:
    return bool(revision) and re.fullmatch(r"[0-9a-f]{40}", str(revision)) is not None


def _offline() -> bool:
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def resolve_revision(spec: Mapping[str, Any], where: str) -> str | None:
    """The commit the entry's `revision` points at now; None for local directories.

    Loading then uses this commit, so the recorded revision is the one read even if the
    branch moves while the corpus streams. Offline (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE) the
    commit comes from the local hub cache's refs, or is None (the corpus's SHA-256 still
    identifies the text); online, a failed look-up is an error rather than a silent read of
    whatever the branch holds.
    """
    path, revision = str(spec["path"]), spec["revision"]
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


def documents(spec: Mapping[str, Any], where: str, revision: str | None) -> Iterator[Document | Skipped]:
    """Records of the dataset (streamed if asked), shuffled with `seed`; `revision` is the resolved commit."""
    import datasets

    streaming = spec["streaming"]
    local = Path(str(spec["path"])).exists()
    revision = revision or spec["revision"]
    try:
        ds = datasets.load_dataset(
            spec["path"], spec["name"], split=spec["split"], revision=None if local else revision, streaming=streaming
        )
    except Exception as exc:  # datasets raises many types; the user needs one message
        raise CorpusError(
            f"{where}: could not load hub dataset {spec['path']!r} (config {spec['name']!r}, "
            f"split {spec['split']!r}, revision {revision!r}): {exc}. "
            "Offline? Point `source: local` at a JSONL copy, or set HF_DATASETS_OFFLINE=1 with a warm cache."
        ) from exc
    if spec["seed"] is not None:
        ds = (
            ds.shuffle(seed=spec["seed"], buffer_size=spec["shuffle_buffer"])
            if streaming
            else ds.shuffle(seed=spec["seed"])
        )
    for i, record in enumerate(ds):
        yield record_document(record, spec, f"{where} (record {i})", i)


def provenance(spec: Mapping[str, Any], resolved: str | None) -> dict[str, Any]:
    local = Path(str(spec["path"])).exists()
    return {
        "path": str(spec["path"]),
        "config": spec["name"],
        "split": spec["split"],
        "revision": spec["revision"],
        "resolved_revision": resolved if resolved else ("local directory" if local else "unresolved (offline)"),
    }


SOURCE = Source(name="hub", documents=documents, provenance=provenance, resolve_revision=resolve_revision, shuffles=True)
