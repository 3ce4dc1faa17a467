"""What a rank array depends on, written down once.

A rank array is determined by the model (where it loads from, its revision), the tokenizer,
the dtypes, how documents are cut into windows, and the rank convention; nothing else may
invalidate it. The same `RankIdentity` is the extract rule's params (its rerun trigger), is
written to the array's sidecar, is read back by `share.py` and by the aggregation's
provenance check, and is compared by one `diff`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from rankscale.canon import canonical
from rankscale.formats import RANK_FORMAT
from rankscale.windows import WINDOW_KEYS, WindowSpec

# the settings of a config entry (extraction defaults, model, dataset windows) that are identity
SETTING_KEYS = ("dtype", "head_dtype", *WINDOW_KEYS, "ties")


# what `params` leaves out at these values: arrays made before the key existed have them
OMITTED: dict[str, Any] = {"head_dtype": None, "weights": None, "rank_format": 1}


@dataclass(frozen=True)
class RankIdentity:
    location: str  # hub id or local directory of the weights
    revision: str | None  # hub revision as configured (None for a local directory)
    tokenizer: str  # hub id or directory of the tokenizer
    dtype: str
    head_dtype: str | None  # dtype of the output head's logits; None for float32 models
    max_length: int
    stride: int | None
    max_windows_per_doc: int | None
    ties: str
    rank_format: int  # RANK_FORMAT's version when the array was made (rankscale.formats)
    weights: str | None  # content digest of a local model's weights and config (None: hub or ladder model)

    @classmethod
    def from_settings(
        cls,
        location: str,
        revision: str | None,
        tokenizer: str,
        settings: Mapping[str, Any],
        weights: str | None,
    ) -> RankIdentity:
        """From resolved settings; the head dtype only matters below float32, so float32 models carry none."""
        dtype = settings["dtype"]
        head = None if dtype == "float32" else settings["head_dtype"]
        values = {k: settings[k] for k in WINDOW_KEYS}
        return cls(location, revision, tokenizer, dtype, head, ties=settings["ties"], rank_format=RANK_FORMAT.version,
                   weights=weights, **canonical(values))  # fmt: skip

    @property
    def windows(self) -> WindowSpec:
        return WindowSpec(self.max_length, self.stride, self.max_windows_per_doc)

    def params(self) -> dict[str, Any]:
        """Canonical Snakemake params: sorted keys, normalised numbers. A key at the value arrays made before it
        existed have (`OMITTED`: no head dtype for float32 models, no weights digest for hub and ladder models,
        rank format 1) is left out, so such arrays stay up to date."""
        values = {k: v for k, v in asdict(self).items() if not (k in OMITTED and v == OMITTED[k])}
        return canonical(values)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RankIdentity:
        return cls(**{f.name: params[f.name] if f.name in params else OMITTED.get(f.name) for f in fields(cls)})

    def sidecar(self) -> dict[str, Any]:
        """The identity as a rank array's sidecar holds it (window settings grouped under `windows`; keys at their
        `OMITTED` value left out, as in the params: a sidecar of an older array reads the same)."""
        out: dict[str, Any] = {
            "location": self.location,
            "revision": self.revision,
            "tokenizer": self.tokenizer,
            "dtype": self.dtype,
            "ties": self.ties,
            "windows": {k: getattr(self, k) for k in WINDOW_KEYS},
        }
        extra = {"head_dtype": self.head_dtype, "rank_format": self.rank_format, "weights_sha256": self.weights}
        defaults = {"head_dtype": OMITTED["head_dtype"], "rank_format": OMITTED["rank_format"], "weights_sha256": None}
        out.update({k: v for k, v in extra.items() if v != defaults[k]})
        return out

    @classmethod
    def from_sidecar(cls, meta: Mapping[str, Any]) -> RankIdentity:
        windows = meta.get("windows") or {}
        return cls(
            location=meta.get("location"),
            revision=meta.get("revision"),
            tokenizer=meta.get("tokenizer"),
            dtype=meta.get("dtype"),
            head_dtype=meta.get("head_dtype"),
            ties=meta.get("ties"),
            rank_format=meta["rank_format"] if "rank_format" in meta else OMITTED["rank_format"],
            weights=meta.get("weights_sha256"),
            **{k: windows.get(k) for k in WINDOW_KEYS},
        )

    def diff(self, recorded: RankIdentity) -> list[str]:
        """Why an array computed with `recorded` is not one computed with this identity (empty: it is)."""
        return [
            f"{f.name}: array has {getattr(recorded, f.name)!r}, config says {getattr(self, f.name)!r}"
            for f in fields(self)
            if canonical(getattr(recorded, f.name)) != canonical(getattr(self, f.name))
        ]


# How sidecars name the checksums of a rank array's upstream files (written by the tokenize and extract
# rules, read by the provenance check and share.py): one place for the key names.
OWN_SHA = "sha256"  # a file's own checksum, in its sidecar
TOKENS_SHA = "tokens_sha256"  # a rank array's token file
TOKENIZER_SHA = "tokenizer_sha256"  # the tokenizer's fingerprint (rankscale.tokens.tokenizer_fingerprint)
# the hub commit a tokenizer was loaded at, in the sidecars of token files, token tables and rank arrays (absent:
# a local tokenizer, or a file written before it was recorded): rankscale.tokenizer_pin
TOKENIZER_COMMIT = "tokenizer_commit"
CORPUS_SHA = "corpus_sha256"  # the corpus JSONL the token file was cut from


@dataclass(frozen=True)
class Upstream:
    """What a rank array was computed from, by content: its token file, that file's tokenizer and corpus.

    A token file's sidecar holds its own checksum and those of its tokenizer and corpus; a rank
    array's sidecar copies all three, so a changed upstream file is caught however it changed.
    """

    tokens: str | None
    tokenizer: str | None
    corpus: str | None

    @classmethod
    def of_token_file(cls, tokens_meta: Mapping[str, Any]) -> Upstream:
        """The upstream a rank array computed now from this token file would record."""
        return cls(tokens_meta.get(OWN_SHA), tokens_meta.get(TOKENIZER_SHA), tokens_meta.get(CORPUS_SHA))

    @classmethod
    def from_sidecar(cls, meta: Mapping[str, Any]) -> Upstream:
        """The upstream a rank array's sidecar records."""
        return cls(meta.get(TOKENS_SHA), meta.get(TOKENIZER_SHA), meta.get(CORPUS_SHA))

    def sidecar(self) -> dict[str, str | None]:
        return {TOKENIZER_SHA: self.tokenizer, CORPUS_SHA: self.corpus, TOKENS_SHA: self.tokens}

    def diff(self, recorded: Upstream) -> list[str]:
        """Why an array computed from `recorded` was not computed from these files (empty: it was)."""
        names = {"tokens": "token file", "tokenizer": "tokenizer", "corpus": "corpus"}
        return [
            f"{what}: array has {getattr(recorded, field)!r}, current is {getattr(self, field)!r}"
            for field, what in names.items()
            if getattr(recorded, field) != getattr(self, field)
        ]


def token_file_hashes(tokenizer_sha: str, corpus_sha: str) -> dict[str, str]:
    """What a token file's sidecar records of its upstream (its own checksum is added when it is written)."""
    return {TOKENIZER_SHA: tokenizer_sha, CORPUS_SHA: corpus_sha}


def placement_problems(meta: Mapping[str, Any], model: str, dataset: str) -> list[str]:
    """Why a sidecar does not describe `model` on `dataset` (empty: it does).

    Two entries for the same weights have the same identity: only the names tell their arrays apart.
    """
    expected = {"model": model, "dataset": dataset}
    return [
        f"{key}: array has {meta.get(key)!r}, its path says {value!r}"
        for key, value in expected.items()
        if meta.get(key) != value
    ]


def problems(
    meta: Mapping[str, Any], model: str, dataset: str, identity: RankIdentity, tokens_meta: Mapping[str, Any] | None
) -> tuple[list[str], list[str]]:
    """(misplaced, stale): why the rank array whose sidecar is `meta`, found at results/ranks/<model>/<dataset>-<key>,
    is not the array the current configuration and token file call for. Both empty: it is.

    The one check behind the aggregation's refusal of stale arrays and share.py's restore.
    """
    stale = identity.diff(RankIdentity.from_sidecar(meta))
    if tokens_meta is None:
        stale.append("its token file is missing (dvc pull first)")
    else:
        stale += Upstream.of_token_file(tokens_meta).diff(Upstream.from_sidecar(meta))
    return placement_problems(meta, model, dataset), stale
