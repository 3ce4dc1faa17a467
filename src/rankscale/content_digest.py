"""What data an output was computed from: content digests of a local model's weights, a local tokenizer's files and
single files (a GGUF model, a local dataset), cached under cheap stamps of the files so that gigabytes are hashed once
per version. Extraction checks a local model's weights with them; the code digests are `rankscale.fingerprint`'s,
which no job runs (so an edit there moves no format pin of `rankscale.formats`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

WEIGHT_PATTERNS = (
    "config.json",
    "*.safetensors",
    "*.safetensors.index.json",
    "*.bin",
    "*.bin.index.json",
    "*.pt",
    "*.pth",
)
WEIGHTS_CACHE = Path(".snakemake") / "rankscale" / "weights.json"  # in the working directory, beside Snakemake's own


def weight_files(directory: Path) -> list[Path]:
    """The files a local model's weights and architecture are read from (not its tokenizer: the token files cover it)."""
    return sorted({p for pattern in WEIGHT_PATTERNS for p in directory.glob(pattern) if p.is_file()})


def weights_digest(directory: str | Path, cache: Path = WEIGHTS_CACHE) -> str | None:
    """A content digest of a local model's weight and config files, or None if it has none (yet).

    Hashing gigabytes at every plan would be slow, so the digest is cached under a cheap stamp of
    the files (names, sizes, modification times): an unchanged model is hashed once, a model whose
    weights are replaced in place (any stamp changes) is hashed again, and so rescored.
    """
    files = weight_files(Path(directory))
    return _cached_digest(Path(directory), files, named=True, cache=cache) if files else None


# the files a tokenizer loads from (transformers' fast and slow tokenizers, sentencepiece, tiktoken); not config.json,
# so models of several sizes sharing one tokenizer share its key
TOKENIZER_PATTERNS = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "*.model",
    "*.tiktoken",
)


def tokenizer_digest(directory: str | Path, cache: Path = WEIGHTS_CACHE) -> str | None:
    """A content digest of a local tokenizer's files (cached like `weights_digest`), or None if it has none:
    what a local tokenizer's key and a rank array's identity follow, wherever the directory lives."""
    base = Path(directory)
    files = (
        sorted({p for pattern in TOKENIZER_PATTERNS for p in base.glob(pattern) if p.is_file()})
        if base.is_dir()
        else []
    )
    return _cached_digest(base, files, named=True, cache=cache) if files else None


def file_digest(path: str | Path, cache: Path = WEIGHTS_CACHE) -> str:
    """A content digest of one file (e.g. a GGUF model), cached like `weights_digest`; its name is not part of it."""
    return _cached_digest(Path(path), [Path(path)], named=False, cache=cache)


def _cached_digest(anchor: Path, files: list[Path], named: bool, cache: Path) -> str:
    """sha256 (16 hex digits) of the files' contents (with each file's name and size where `named`), cached."""
    import json
    import os

    stamp = hashlib.sha256(
        repr([str(anchor.resolve()), [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]]).encode()
    ).hexdigest()
    if not named:
        stamp = f"file:{stamp}"
    known: dict[str, str] = {}
    if cache.is_file():
        try:
            known = json.loads(cache.read_text())
        except ValueError:
            known = {}  # a damaged cache is only a cache: rehash
    if stamp in known:
        return known[stamp]
    digest = hashlib.sha256()
    for path in files:
        if named:
            digest.update(f"{path.name}\n{path.stat().st_size}\n".encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 24), b""):
                digest.update(block)
    known[stamp] = digest.hexdigest()[:16]
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(known, indent=0, sort_keys=True))
    os.replace(tmp, cache)
    return known[stamp]
