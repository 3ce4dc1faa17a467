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
from rankscale.windows import WINDOW_KEYS, WindowSpec

# the settings of a config entry (extraction defaults, model, dataset windows) that are identity
SETTING_KEYS = ("dtype", "head_dtype", *WINDOW_KEYS, "ties")


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

    @classmethod
    def from_settings(
        cls, location: str, revision: str | None, tokenizer: str, settings: Mapping[str, Any]
    ) -> RankIdentity:
        """From resolved settings; the head dtype only matters below float32, so float32 models carry none."""
        dtype = settings["dtype"]
        head = None if dtype == "float32" else settings["head_dtype"]
        values = {k: settings[k] for k in WINDOW_KEYS}
        return cls(location, revision, tokenizer, dtype, head, ties=settings["ties"], **canonical(values))

    @property
    def windows(self) -> WindowSpec:
        return WindowSpec(self.max_length, self.stride, self.max_windows_per_doc)

    def params(self) -> dict[str, Any]:
        """Canonical Snakemake params: sorted keys, normalised numbers; no head dtype for float32 models."""
        values = asdict(self)
        if values["head_dtype"] is None:
            del values["head_dtype"]
        return canonical(values)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RankIdentity:
        return cls(**{f.name: params.get(f.name) for f in fields(cls)})

    def sidecar(self) -> dict[str, Any]:
        """The identity as a rank array's sidecar holds it (window settings grouped under `windows`)."""
        out: dict[str, Any] = {
            "location": self.location,
            "revision": self.revision,
            "tokenizer": self.tokenizer,
            "dtype": self.dtype,
            "ties": self.ties,
            "windows": {k: getattr(self, k) for k in WINDOW_KEYS},
        }
        if self.head_dtype is not None:
            out["head_dtype"] = self.head_dtype
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
            **{k: windows.get(k) for k in WINDOW_KEYS},
        )

    def diff(self, recorded: RankIdentity) -> list[str]:
        """Why an array computed with `recorded` is not one computed with this identity (empty: it is)."""
        return [
            f"{f.name}: array has {getattr(recorded, f.name)!r}, config says {getattr(self, f.name)!r}"
            for f in fields(self)
            if canonical(getattr(recorded, f.name)) != canonical(getattr(self, f.name))
        ]
