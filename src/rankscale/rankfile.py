"""Rank arrays on disk: an uncompressed .npz plus a JSON provenance sidecar.

Arrays made before the calibration fields existed lack them; their sidecar lists no `fields`. They keep
serving everything that reads rank and log-prob, and load with `calibration` None, never as zeros.
"""

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
class Calibration:
    """Per scored token, what calibration reads (rankscale.ranking.TokenScores; docs/science.md)."""

    mass_above: np.ndarray  # float32, mass of the tokens ranked at or above the target, itself excluded
    top1_logprob: np.ndarray  # float32, log of the largest probability
    entropy: np.ndarray  # float32, nats

    def as_dict(self) -> dict[str, np.ndarray]:
        return {"mass_above": self.mass_above, "top1_logprob": self.top1_logprob, "entropy": self.entropy}


@dataclass(frozen=True)
class RankArrays:
    """Per scored token, in (document, position) order."""

    rank: np.ndarray  # uint32, 1 = greedy choice is right
    logprob: np.ndarray  # float32, log p(target)
    doc: np.ndarray  # uint32, document index in the tokenized corpus
    pos: np.ndarray  # uint32, target position inside its document (>= 1)
    target: np.ndarray  # uint32, target token id
    calibration: Calibration | None = None  # None: an array made before the calibration fields

    def as_dict(self) -> dict[str, np.ndarray]:
        fields = {"rank": self.rank, "logprob": self.logprob, "doc": self.doc, "pos": self.pos, "target": self.target}
        return fields | (self.calibration.as_dict() if self.calibration is not None else {})


FIELDS = {"rank": np.uint32, "logprob": np.float32, "doc": np.uint32, "pos": np.uint32, "target": np.uint32}
CALIBRATION_FIELDS = {"mass_above": np.float32, "top1_logprob": np.float32, "entropy": np.float32}
FIELDS_KEY = "fields"  # the sidecar's list of the arrays' fields; absent: FIELDS only (an older array)


def stored_fields(meta: dict[str, Any]) -> tuple[str, ...]:
    """The fields a rank array holds, by its sidecar."""
    return tuple(meta.get(FIELDS_KEY, FIELDS))


def has_calibration(meta: dict[str, Any]) -> bool:
    """Whether the array of this sidecar holds the calibration fields (arrays made before them do not)."""
    return set(CALIBRATION_FIELDS) <= set(stored_fields(meta))


class RankFileError(ValueError):
    """A rank array does not match its sidecar; the message names the file."""


def calibration_planned(meta_path: str | Path, refresh: bool) -> bool:
    """Whether extraction is asked for the calibration fields of this array: always for a new array (or an
    unreadable one, which extraction redoes anyway) and for one that has them; for an existing array made
    before them, only when `refresh` (`extraction.refresh_calibration`). So a study's older arrays keep
    serving until a user asks, and the setting re-extracts exactly those that lack the fields."""
    if refresh or not Path(meta_path).exists():
        return True
    try:
        return has_calibration(read_sidecar(Path(meta_path).with_suffix(".npz"), meta_path))
    except RankFileError:
        return True


def save_rank_arrays(arrays: RankArrays, path: str | Path, meta_path: str | Path, meta: dict[str, Any]) -> None:
    """Write the arrays, then the sidecar (with the arrays' checksum and fields): a sidecar means complete."""
    fields = arrays.as_dict()
    write_npz(path, **fields)
    write_json(meta_path, {**meta, "n_tokens": int(arrays.rank.size), FIELDS_KEY: list(fields), OWN_SHA: sha256_file(path)})


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
    """Load and check against the sidecar: fields, dtypes, lengths, checksum, rank range.

    The calibration fields load where the sidecar lists them; elsewhere `calibration` is None."""
    meta = read_sidecar(path, meta_path)
    if verify_checksum and sha256_file(path) != meta.get(OWN_SHA):
        raise RankFileError(f"{path}: checksum does not match its sidecar {meta_path} (truncated or replaced file?)")
    expected = FIELDS | (CALIBRATION_FIELDS if has_calibration(meta) else {})
    try:
        with np.load(path) as data:
            loaded = {k: data[k] for k in expected}
    except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise RankFileError(f"{path}: unreadable rank array ({exc}; its sidecar lists {sorted(expected)})") from exc
    for key, dtype in expected.items():
        if loaded[key].dtype != dtype or loaded[key].shape != (meta["n_tokens"],):
            raise RankFileError(
                f"{path}: field {key!r} is {loaded[key].dtype}{loaded[key].shape}, sidecar says {np.dtype(dtype)}({meta['n_tokens']},)"
            )
    rank = loaded["rank"]
    if rank.size and (rank.min() < 1 or rank.max() > meta["vocab_size"]):
        raise RankFileError(f"{path}: ranks outside 1..{meta['vocab_size']}")
    calibration = Calibration(**{k: loaded.pop(k) for k in CALIBRATION_FIELDS}) if has_calibration(meta) else None
    return RankArrays(**loaded, calibration=calibration), meta


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
