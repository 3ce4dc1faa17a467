"""What a target token is: one of `KINDS` per token id, the same meaning under every tokenizer.

A token's kind comes from its own text (`token_text`), so the raw vocabulary piece has its
scheme's markers turned back into the characters they stand for:

- byte-level BPE (GPT-2, GPT-NeoX, Llama 3, Qwen, SmolLM2): every byte is a printable stand-in
  (`Ġ` space, `Ċ` newline, `ĉ` tab, ...); the inverse of GPT-2's `bytes_to_unicode` gives the bytes,
  decoded as UTF-8 with errors='replace', so a partial UTF-8 sequence keeps a U+FFFD;
- SentencePiece / Metaspace (Llama 2, Gemma, Mistral): `▁` is a space and a whole `<0xNN>`
  byte-fallback piece is that byte (again U+FFFD unless it is ASCII);
- WordPiece: the `##` continuation prefix is dropped.
The scheme is read from the tokenizer's decoder/pre-tokenizer (or, without a Rust backend, from
its vocabulary), never from its name. Added tokens are their literal content.

The same undoing gives each token's bytes (`piece_bytes`, `token_bytes`): its UTF-8 byte length is what
bits per byte divide by (`rankscale.metrics`, metric `bpb`). A byte-level piece is as many bytes as it has
stand-ins (exact even for a partial UTF-8 sequence), `▁` one space byte, a `<0xNN>` piece one byte, an added
token its content's UTF-8 bytes, and a special token none: it stands for no text.

Kinds (`classify`); whitespace (`str.isspace`) anywhere in a piece is ignored, the rest decides:
- whitespace: nothing but whitespace (spaces, indentation, newlines);
- number: decimal digits only (" 7", "123"); "1.5" or "1,000" mix digits and punctuation: other;
- word: letters, combining marks, digits and `_`, at least one letter or `_` ("Ġthe", "_init", "中文",
  and identifier-like "0x", "2nd", "x1");
- punctuation: Unicode punctuation or symbols only (P*, S*: "):", " ==", "\\n}", emoji);
- other: special tokens (`all_special_ids` and added tokens flagged special), the empty text,
  anything holding U+FFFD (byte fragments), control characters, mixed pieces ("a(", "<unused0>").
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from rankscale.atomic import sha256_file, write_json, write_npz
from rankscale.identity import TOKENIZER_COMMIT, TOKENIZER_SHA

KINDS: tuple[str, ...] = ("whitespace", "word", "number", "punctuation", "other")
KIND_INDEX = {kind: i for i, kind in enumerate(KINDS)}
BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@cache
def _byte_level_table() -> dict[int, int]:
    """GPT-2's bytes_to_unicode, inverted, for the stand-ins that are not the byte's own code point."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = [b for b in range(256) if b not in kept]
    return {256 + n: b for n, b in enumerate(shifted)}


@dataclass(frozen=True)
class Scheme:
    """How a tokenizer writes text into its pieces: 'byte_level', 'metaspace', 'wordpiece' or 'raw'."""

    name: str
    marker: str = ""


def _components(state: Any) -> list[dict[str, Any]]:
    """Every component of a serialised decoder/pre-tokenizer, Sequences flattened."""
    if isinstance(state, dict):
        return [state, *(c for v in state.values() for c in _components(v))]
    return [c for v in state for c in _components(v)] if isinstance(state, list) else []


def scheme(tokenizer: Any) -> Scheme:
    """The marker scheme, from the Rust backend's decoder and pre-tokenizer (vocabulary otherwise)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:  # a Python tokenizer: the markers its vocabulary uses
        pieces = list(tokenizer.get_vocab())
        counts = {m: sum(m in p for p in pieces) for m in ("Ġ", "▁", "##")}
        best = max(counts, key=lambda m: counts[m])
        if counts[best] == 0:
            return Scheme("raw")
        return {"Ġ": Scheme("byte_level"), "▁": Scheme("metaspace", "▁"), "##": Scheme("wordpiece", "##")}[best]
    parts = [json.loads(p.__getstate__()) for p in (backend.decoder, backend.pre_tokenizer) if p is not None]
    comps = _components(parts)
    for c in comps:
        if c.get("type") == "ByteLevel":
            return Scheme("byte_level")
    for c in comps:
        if c.get("type") == "Metaspace":
            return Scheme("metaspace", c.get("replacement", "▁"))
        if c.get("type") == "Replace" and c.get("content") == " " and "String" in c.get("pattern", {}):
            return Scheme("metaspace", c["pattern"]["String"])
        if c.get("type") == "WordPiece":
            return Scheme("wordpiece", c.get("prefix", "##"))
    if type(backend.model).__name__ == "WordPiece":
        return Scheme("wordpiece", backend.model.continuing_subword_prefix)
    return Scheme("raw")


def piece_bytes(sch: Scheme, piece: str) -> bytes:
    """The bytes a vocabulary piece stands for under `sch` (not for added tokens, whose content is already text):
    the one place the scheme's markers are undone, for both a piece's text and its byte length."""
    if sch.name == "byte_level":
        try:
            return piece.translate(_byte_level_table()).encode("latin-1")
        except UnicodeEncodeError:  # not a byte-level piece after all
            return piece.encode("utf-8", errors="surrogatepass")
    if sch.name == "metaspace":
        byte = BYTE_PIECE.fullmatch(piece)
        if byte:
            return bytes([int(byte.group(1), 16)])
        return piece.replace(sch.marker, " ").encode("utf-8", errors="surrogatepass")
    if sch.name == "wordpiece":
        return piece.removeprefix(sch.marker).encode("utf-8", errors="surrogatepass")
    return piece.encode("utf-8", errors="surrogatepass")


def piece_text(sch: Scheme, piece: str) -> str:
    """A vocabulary piece's text under `sch`: its bytes as UTF-8, a partial sequence as U+FFFD."""
    return piece_bytes(sch, piece).decode("utf-8", errors="replace")


def special_ids(tokenizer: Any) -> set[int]:
    """Ids that are control tokens, not text: `all_special_ids` plus added tokens flagged special."""
    added = {i for i, tok in tokenizer.added_tokens_decoder.items() if tok.special}
    return added | set(tokenizer.all_special_ids)


def token_text(tokenizer: Any, token_id: int) -> str:
    """The text token `token_id` stands for, leading space included (`decode` drops it for SentencePiece)."""
    added = tokenizer.added_tokens_decoder.get(token_id)
    if added is not None:
        return added.content
    return piece_text(scheme(tokenizer), tokenizer.convert_ids_to_tokens(token_id) or "")


def token_bytes(tokenizer: Any, token_id: int) -> bytes:
    """The bytes of text token `token_id` stands for (`byte_table`'s entry is their number): none for a special
    token, an added token's content, a vocabulary piece's bytes (`piece_bytes`)."""
    if token_id in special_ids(tokenizer):
        return b""
    added = tokenizer.added_tokens_decoder.get(token_id)
    if added is not None:
        return added.content.encode("utf-8", errors="surrogatepass")
    return piece_bytes(scheme(tokenizer), tokenizer.convert_ids_to_tokens(token_id) or "")


def _is_letter(c: str) -> bool:
    return c.isalpha() or c == "_" or unicodedata.category(c)[0] == "M"


def classify(text: str) -> str:
    """The kind (one of `KINDS`) of a piece's text; special tokens are `kind_table`'s business."""
    core = "".join(c for c in text if not c.isspace())
    if not text or "\ufffd" in text:
        return "other"
    if not core:
        return "whitespace"
    if core.isdecimal():
        return "number"
    if all(_is_letter(c) or c.isalnum() for c in core) and any(_is_letter(c) for c in core):
        return "word"
    if all(unicodedata.category(c)[0] in "PS" for c in core):
        return "punctuation"
    return "other"


TOKEN_TABLE_FORMAT = 2  # 2: each token's UTF-8 byte length beside its kind; 1 (no `format`): kinds alone


@dataclass(frozen=True)
class TokenTable:
    """What each token id of a tokenizer is: its kind, and the UTF-8 byte length of the text it stands for."""

    kinds: np.ndarray  # uint8 [len(tokenizer)]: the `KINDS` index; special tokens are 'other'
    n_bytes: np.ndarray  # int64 [len(tokenizer)]: bytes of the token's text (`token_bytes`); special tokens 0


def token_table(tokenizer: Any) -> TokenTable:
    """Every token id's kind and byte length, from one undoing of the scheme's markers per piece."""
    sch, n = scheme(tokenizer), len(tokenizer)
    added = {i: tok.content for i, tok in tokenizer.added_tokens_decoder.items()}
    special = special_ids(tokenizer)
    pieces = tokenizer.convert_ids_to_tokens(list(range(n)))
    kinds = np.empty(n, dtype=np.uint8)
    n_bytes = np.zeros(n, dtype=np.int64)
    for i, piece in enumerate(pieces):
        if i in special:
            kinds[i] = KIND_INDEX["other"]
            continue
        raw = added[i].encode("utf-8", errors="surrogatepass") if i in added else piece_bytes(sch, piece or "")
        text = added[i] if i in added else raw.decode("utf-8", errors="replace")
        kinds[i] = KIND_INDEX[classify(text)]
        n_bytes[i] = len(raw)
    return TokenTable(kinds, n_bytes)


def kind_table(tokenizer: Any) -> np.ndarray:
    """uint8 [len(tokenizer)]: the `KINDS` index of every token id; special tokens are 'other'."""
    return token_table(tokenizer).kinds


def byte_table(tokenizer: Any) -> np.ndarray:
    """int64 [len(tokenizer)]: the UTF-8 byte length of every token id's text; special tokens 0."""
    return token_table(tokenizer).n_bytes


def save_token_table(
    table: TokenTable, path: str | Path, tokenizer: str, provenance: Mapping[str, str | None] | None = None
) -> None:
    """Write a tokenizer's token table (atomically), with the kinds' names so a reader checks what the codes mean;
    `provenance`: its tokenizer's fingerprint and hub commit (`check_token_table` compares them with a rank array's)."""
    write_npz(path, kinds=table.kinds.astype(np.uint8), names=np.array(KINDS), n_bytes=table.n_bytes.astype(np.int64),
              format=np.array(TOKEN_TABLE_FORMAT))  # fmt: skip
    write_json(f"{path}.json", {"tokenizer": tokenizer, **(provenance or {}), "vocab_size": int(table.kinds.size),
                                "format": TOKEN_TABLE_FORMAT,
                                "sha256": sha256_file(path),  # the table's checksum: a damaged copy is refused
                                "counts": {k: int((table.kinds == i).sum()) for i, k in enumerate(KINDS)},
                                "text_bytes": {"max": int(table.n_bytes.max(initial=0)),
                                               "zero": int((table.n_bytes == 0).sum())}})  # fmt: skip


def load_token_table(path: str | Path) -> TokenTable:
    """A token table written by `save_token_table`; refused if an older rankscale's (other kinds, no byte lengths) or
    unlike the checksum its sidecar records (a truncated or bit-flipped copy would shift kinds and byte lengths)."""
    sidecar = Path(f"{path}.json")
    recorded = table_sidecar(path).get("sha256")
    if recorded is not None and sha256_file(path) != recorded:
        raise ValueError(f"{path}: checksum does not match its sidecar {sidecar} (truncated or replaced file?); "
                         "delete both and rerun snakemake")  # fmt: skip
    with np.load(path) as data:
        if [str(n) for n in data["names"]] != list(KINDS):
            raise ValueError(f"{path}: token kinds {list(data['names'])} are not {list(KINDS)}; delete it and rerun")
        version = int(data["format"]) if "format" in data.files else 1
        if version != TOKEN_TABLE_FORMAT:
            raise ValueError(f"{path}: token table format {version}, not {TOKEN_TABLE_FORMAT} (this rankscale's, with "
                             "each token's byte length); delete it and rerun")  # fmt: skip
        return TokenTable(data["kinds"], data["n_bytes"])


def table_sidecar(path: str | Path) -> dict[str, Any]:
    """A token table's sidecar ({} where there is none); a truncated or damaged one is refused naming it."""
    sidecar = Path(f"{path}.json")
    if not sidecar.is_file():
        return {}
    try:
        meta = json.loads(sidecar.read_text())
    except (OSError, ValueError) as exc:
        meta = exc
    if not isinstance(meta, dict):
        raise ValueError(
            f"{sidecar}: unreadable sidecar of token table {path} ({meta!r}); delete both and rerun snakemake"
        )
    return meta


def check_token_table(table_path: str | Path, rank_meta: Mapping[str, Any], rank_path: str | Path) -> None:
    """Refuse a token table (kinds, byte lengths) of another tokenizer commit or content than a rank array's."""
    sidecar = Path(f"{table_path}.json")
    table = table_sidecar(table_path)
    for key, what in ((TOKENIZER_COMMIT, "commit"), (TOKENIZER_SHA, "content fingerprint")):
        ours, theirs = table.get(key), rank_meta.get(key)
        if ours is not None and theirs is not None and ours != theirs:
            raise ValueError(
                f"{table_path}: token table of tokenizer {table.get('tokenizer')!r} at {what} {ours}, but rank "
                f"array {rank_path} was scored with its {what} {theirs}: its token kinds and bits per byte would be "
                f"another tokenizer's. Delete {table_path} and {sidecar} and rerun snakemake"
            )
