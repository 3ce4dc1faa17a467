"""Tokenized corpora: a flat id array with document offsets, plus provenance."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankscale.atomic import sha256_file, write_json, write_npz
from rankscale.corpus import Document
from rankscale.identity import OWN_SHA


@dataclass(frozen=True)
class TokenizedCorpus:
    ids: np.ndarray  # int32, all documents concatenated
    offsets: np.ndarray  # int64, n_docs + 1
    # per document, the number of special tokens the tokenizer put before the text (e.g. OPT's
    # BOS); None: none. The token right after them is predicted from specials alone: not scored.
    prefix: np.ndarray | None = None

    def doc_lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def first_targets(self) -> np.ndarray:
        """First scored position of each document (see `plan_windows`)."""
        n = len(self.offsets) - 1
        return np.ones(n, dtype=np.int64) if self.prefix is None else self.prefix.astype(np.int64) + 1

    def doc(self, d: int) -> np.ndarray:
        return self.ids[self.offsets[d] : self.offsets[d + 1]]


def tokenize_documents(
    docs: list[Document], tokenizer: Any, add_special_tokens: bool
) -> tuple[TokenizedCorpus, dict[str, Any]]:
    """Tokenize each document separately; drop (and count) documents under two text tokens.

    With `add_special_tokens`, each document begins with what the tokenizer puts before the
    text (a BOS the model was trained with); what it would append (an EOS) is dropped, since
    it is not text and must not become a scored target. Every document of the corpus is
    tokenized: the dataset's caps (`max_documents`, `max_chars`, `max_bytes`) decided its
    documents once for every tokenizer. A document a tokenizer leaves with fewer than two text
    tokens stays in the dataset's document set, with no scored token of this tokenizer's models
    (the bootstrap still draws it, for every family alike).
    """
    pieces: list[np.ndarray] = []
    prefixes: list[int] = []
    kept: list[int] = []  # each kept document's index in the corpus: the bootstrap's resampling unit
    skipped = 0
    scored = 0
    dropped_end = 0
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    for index, doc in enumerate(docs):
        ids = tokenizer(doc.text, add_special_tokens=False)["input_ids"]
        if len(ids) < 2:
            skipped += 1
            continue
        prefix: list[int] = []
        if add_special_tokens:
            prefix, end = start_tokens(tokenizer(doc.text, add_special_tokens=True)["input_ids"], ids, special, doc)
            dropped_end += end
        pieces.append(np.asarray(prefix + ids, dtype=np.int32))
        prefixes.append(len(prefix))
        kept.append(index)
        scored += len(ids) - 1
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = np.concatenate(pieces).astype(np.int32) if pieces else np.zeros(0, dtype=np.int32)
    prefix_arr = np.asarray(prefixes, dtype=np.int32) if any(prefixes) else None
    return TokenizedCorpus(ids, offsets, prefix_arr), {
        "documents": len(pieces),
        "skipped_short_documents": skipped,
        "tokens": int(ids.size),
        "special_prefix_tokens": int(sum(prefixes)),
        "dropped_end_tokens": int(dropped_end),
        "scored_targets": int(scored),
        "corpus_documents": kept,
    }


def start_tokens(with_special: list[int], text: list[int], special: set[int], doc: Document) -> tuple[list[int], int]:
    """(the special tokens a tokenizer puts before `text`, how many it puts after) in `with_special`.

    A tokenizer's post-processor wraps the text's tokens (e.g. `<s> $A` or `<s> $A </s>`);
    anything else (a tokenizer whose text tokens change with specials on) is refused, naming
    the document, rather than guessed at.
    """
    n = len(text)
    for start in range(len(with_special) - n + 1):
        if with_special[start : start + n] == text and all(t in special for t in with_special[:start]):
            return list(with_special[:start]), len(with_special) - start - n
    raise ValueError(
        f"document {doc.id!r}: the tokenizer's tokens with special tokens ({with_special[:8]}...) do not hold its "
        f"tokens without them ({text[:8]}...) after a run of special tokens; set `tokenization.add_special_tokens: "
        "false` and give the model its start token another way"
    )


def save_tokens(corpus: TokenizedCorpus, path: str | Path, meta: dict[str, Any]) -> None:
    """Write `<path>` (.npz) and its `<path>.json` sidecar, each atomically."""
    arrays = {"ids": corpus.ids, "offsets": corpus.offsets}
    if corpus.prefix is not None:  # absent when no special token was added: files stay as before
        arrays["prefix"] = corpus.prefix
    write_npz(path, **arrays)
    write_json(str(path) + ".json", {**meta, OWN_SHA: sha256_file(path)})


def load_tokens(path: str | Path) -> TokenizedCorpus:
    """The token file `save_tokens` wrote, checked against the checksum in its sidecar first: a truncated or
    bit-flipped token file (a damaged copy, a bad DVC pull) would otherwise be scored or trained on unseen."""
    sidecar = Path(f"{path}.json")
    try:
        recorded = json.loads(sidecar.read_text()).get(OWN_SHA)
    except (OSError, ValueError, AttributeError) as exc:
        raise ValueError(f"{sidecar}: unreadable sidecar of {path} ({exc}); delete both and rerun snakemake") from None
    if sha256_file(path) != recorded:
        raise ValueError(
            f"{path}: checksum does not match its sidecar {sidecar} (truncated or replaced file?); "
            "delete both and rerun snakemake"
        )
    with np.load(path) as data:
        prefix = data["prefix"] if "prefix" in data.files else None
        return TokenizedCorpus(ids=data["ids"], offsets=data["offsets"], prefix=prefix)


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """Hash of the tokenizer's full serialisation (vocab, merges, normaliser, specials)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        payload = backend.to_str()
    else:
        payload = repr(sorted(tokenizer.get_vocab().items()))
    return hashlib.sha256(payload.encode()).hexdigest()


def corpus_units(tokens_meta: dict[str, Any], path: str | Path) -> np.ndarray:
    """Corpus index of each document of a token file (the bootstrap resamples corpus documents).

    Token files written before this was recorded kept a prefix of the corpus when they skipped
    nothing; otherwise the mapping is unknown and the file must be rewritten.
    """
    if "corpus_documents" in tokens_meta:
        return np.asarray(tokens_meta["corpus_documents"], dtype=np.int64)
    if tokens_meta.get("skipped_short_documents", 0) == 0:
        return np.arange(tokens_meta["documents"], dtype=np.int64)
    raise ValueError(
        f"{path}: written by an older rankscale that did not record which corpus documents it kept; "
        "rerun its tokenization (snakemake --forcerun tokenize), which leaves the token ids unchanged"
    )
