"""Rank arrays on disk: an uncompressed .npz plus a JSON provenance sidecar."""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankscale.atomic import sha256_file, write_json, write_npz
from rankscale.canon import keyed_name
from rankscale.identity import OWN_SHA, RankIdentity, problems


@dataclass(frozen=True)
class RankArrays:
    """Per scored token, in (document, position) order."""

    rank: np.ndarray  # uint32, 1 = greedy choice is right
    logprob: np.ndarray  # float32, log p(target)
    doc: np.ndarray  # uint32, document index in the tokenized corpus
    pos: np.ndarray  # uint32, target position inside its document (>= 1)
    target: np.ndarray  # uint32, target token id

    def as_dict(self) -> dict[str, np.ndarray]:
        return {"rank": self.rank, "logprob": self.logprob, "doc": self.doc, "pos": self.pos, "target": self.target}


FIELDS = {"rank": np.uint32, "logprob": np.float32, "doc": np.uint32, "pos": np.uint32, "target": np.uint32}


class RankFileError(ValueError):
    """A rank array does not match its sidecar; the message names the file."""


def save_rank_arrays(arrays: RankArrays, path: str | Path, meta_path: str | Path, meta: dict[str, Any]) -> None:
    """Write the arrays, then the sidecar (with the arrays' checksum): a sidecar means complete."""
    write_npz(path, **arrays.as_dict())
    write_json(meta_path, {**meta, "n_tokens": int(arrays.rank.size), OWN_SHA: sha256_file(path)})


def read_sidecar(path: str | Path, meta_path: str | Path) -> dict[str, Any]:
    """A rank array's sidecar; a truncated, emptied or missing one (a killed copy, a bad DVC pull) is refused naming
    both files, never a bare JSONDecodeError."""
    try:
        meta = json.loads(Path(meta_path).read_text())
    except (OSError, ValueError) as exc:
        meta, problem = None, str(exc)
    else:
        problem = f"holds {type(meta).__name__}, not a JSON object"
    if not isinstance(meta, dict):
        raise RankFileError(
            f"{meta_path}: unreadable sidecar of rank array {path} ({problem}); restore both (dvc pull), or delete "
            "both and rerun snakemake, which extracts the array again"
        )
    return meta


def load_rank_arrays(
    path: str | Path, meta_path: str | Path, verify_checksum: bool = True
) -> tuple[RankArrays, dict[str, Any]]:
    """Load and check against the sidecar: fields, dtypes, lengths, checksum, rank range."""
    meta = read_sidecar(path, meta_path)
    if verify_checksum and sha256_file(path) != meta.get(OWN_SHA):
        raise RankFileError(f"{path}: checksum does not match its sidecar {meta_path} (truncated or replaced file?)")
    try:
        with np.load(path) as data:
            loaded = {k: data[k] for k in FIELDS}
    except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise RankFileError(f"{path}: unreadable rank array ({exc})") from exc
    for key, dtype in FIELDS.items():
        if loaded[key].dtype != dtype or loaded[key].shape != (meta["n_tokens"],):
            raise RankFileError(
                f"{path}: field {key!r} is {loaded[key].dtype}{loaded[key].shape}, sidecar says {np.dtype(dtype)}({meta['n_tokens']},)"
            )
    rank = loaded["rank"]
    if rank.size and (rank.min() < 1 or rank.max() > meta["vocab_size"]):
        raise RankFileError(f"{path}: ranks outside 1..{meta['vocab_size']}")
    return RankArrays(**loaded), meta


def check_provenance(
    meta: dict[str, Any], tokens_meta: dict[str, Any], identity: RankIdentity, path: str | Path
) -> None:
    """Refuse a rank array that does not score the current token windows under the current settings.

    Catches stale arrays (another window length, tokenizer, corpus, dtype or rank convention)
    and arrays copied to results/ranks/<model>/<dataset>-<key>.npz of another model or dataset, which a
    checksum alone cannot: the file is intact, it is just not the file this analysis expects. The
    check is `rankscale.identity.problems`, the one `share.py` uses for pulled arrays.
    """
    misplaced, stale = problems(meta, Path(path).parent.name, keyed_name(Path(path).stem), identity, tokens_meta)
    if misplaced:
        raise RankFileError(
            f"{path}: rank array of another model or dataset ({'; '.join(misplaced)}); "
            "it was copied or moved here: delete it (or rerun with --forcerun extract) to recompute"
        )
    if stale:
        raise RankFileError(
            f"{path}: stale rank array ({'; '.join(stale)}); delete it (or rerun with --forcerun extract) to recompute"
        )
