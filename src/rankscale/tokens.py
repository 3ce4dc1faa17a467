"""Tokenized corpora: a flat id array with document offsets, plus provenance."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankscale.atomic import sha256_file, write_json, write_npz
from rankscale.corpus import Document


@dataclass(frozen=True)
class TokenizedCorpus:
    ids: np.ndarray  # int32, all documents concatenated
    offsets: np.ndarray  # int64, n_docs + 1

    def doc_lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def doc(self, d: int) -> np.ndarray:
        return self.ids[self.offsets[d] : self.offsets[d + 1]]


def tokenize_documents(
    docs: list[Document], tokenizer: Any, add_special_tokens: bool = False, max_scored_tokens: int | None = None
) -> tuple[TokenizedCorpus, dict[str, int]]:
    """Tokenize each document separately; drop (and count) documents under two tokens.

    With `max_scored_tokens`, documents are kept in corpus order until that many targets
    (tokens after each document's first) are available: a deterministic size cap.
    """
    pieces: list[np.ndarray] = []
    skipped = 0
    scored = 0
    for doc in docs:
        if max_scored_tokens is not None and scored >= max_scored_tokens:
            break
        ids = tokenizer(doc.text, add_special_tokens=add_special_tokens)["input_ids"]
        if len(ids) < 2:
            skipped += 1
            continue
        pieces.append(np.asarray(ids, dtype=np.int32))
        scored += len(ids) - 1
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = np.concatenate(pieces).astype(np.int32) if pieces else np.zeros(0, dtype=np.int32)
    return TokenizedCorpus(ids, offsets), {
        "documents": len(pieces),
        "skipped_short_documents": skipped,
        "tokens": int(ids.size),
    }


def save_tokens(corpus: TokenizedCorpus, path: str | Path, meta: dict[str, Any]) -> None:
    """Write `<path>` (.npz) and its `<path>.json` sidecar, each atomically."""
    write_npz(path, ids=corpus.ids, offsets=corpus.offsets)
    write_json(str(path) + ".json", {**meta, "sha256": sha256_file(path)})


def load_tokens(path: str | Path) -> TokenizedCorpus:
    with np.load(path) as data:
        return TokenizedCorpus(ids=data["ids"], offsets=data["offsets"])


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """Hash of the tokenizer's full serialisation (vocab, merges, normaliser, specials)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        payload = backend.to_str()
    else:
        payload = repr(sorted(tokenizer.get_vocab().items()))
    return hashlib.sha256(payload.encode()).hexdigest()
