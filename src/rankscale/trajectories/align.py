"""Which models of a family can be followed token by token (docs/science.md, "Token trajectories").

Two rank arrays are compared position by position only when their sidecars show the same token file (its
digest, the tokenizer's, the windows and the special tokens put before each document) and their scored tokens
are the same (document, position, target). A model that fails either is left out with a note that says why:
a silent misalignment would compare one token's rank with another's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankscale.identity import TOKENIZER_SHA, TOKENS_SHA
from rankscale.rankfile import RankArrays

# what a rank array's sidecar says of the token positions it scored: equal values, the same tokens
ALIGNMENT_KEYS = (TOKENS_SHA, TOKENIZER_SHA, "windows", "add_special_tokens", "special_prefix_tokens", "n_tokens")


@dataclass(frozen=True)
class TrackedModel:
    """A model of the family as the plan describes it (`ModelPlan.info()`) and its size S from the sidecar."""

    name: str
    S: int
    D: int | None
    size: str  # the training run it is a checkpoint of
    replica_of: str  # the size it is one run of
    seed: int | None
    final: bool

    @classmethod
    def of(cls, name: str, info: Mapping[str, Any], S: int) -> TrackedModel:
        return cls(name, int(S), info.get("D"), info["size"], info["replica_of"], info.get("seed"), bool(info["final"]))


def alignment_problems(reference: Mapping[str, Any], meta: Mapping[str, Any]) -> list[str]:
    """Why `meta`'s rank array does not score the tokens `reference`'s does (empty: it does), from the sidecars."""
    return [
        f"{key}: {meta.get(key)!r}, not {reference.get(key)!r}"
        for key in ALIGNMENT_KEYS
        if meta.get(key) != reference.get(key)
    ]


@dataclass(frozen=True)
class Aligned:
    """The family's aligned models and their ranks, [models, tokens] (the memory the analysis holds)."""

    models: list[TrackedModel]
    ranks: np.ndarray  # uint32 [models, tokens], rows in `models` order
    doc: np.ndarray
    pos: np.ndarray
    target: np.ndarray
    notes: list[str]


def align(models: Sequence[TrackedModel], load: Callable[[int], tuple[RankArrays, Mapping[str, Any]]]) -> Aligned:
    """The models whose arrays align with the reference (the smallest final model), in the plan's order.

    `load(i)` reads model i's rank array and sidecar; one array is held at a time besides the [models, tokens]
    ranks, so memory stays O(models x tokens) uint32 (benchmarks/trajectories.py)."""
    if not models:
        raise ValueError("align: no models")
    order = sorted(range(len(models)), key=lambda i: (not models[i].final, models[i].S, models[i].name))
    ref = order[0]
    reference, ref_meta = load(ref)
    ranks = np.empty((len(models), reference.rank.size), dtype=np.uint32)
    notes: list[str] = []
    kept: list[int] = []
    for i in range(len(models)):
        arrays, meta = (reference, ref_meta) if i == ref else load(i)
        why = alignment_problems(ref_meta, meta)
        if not why and i != ref:
            same = all(np.array_equal(getattr(reference, f), getattr(arrays, f)) for f in ("doc", "pos", "target"))
            why = [] if same else ["its scored tokens (document, position, target) differ"]
        if why:
            notes.append(f"{models[i].name} left out: not aligned with {models[ref].name} ({'; '.join(why)})")
            continue
        ranks[len(kept)] = arrays.rank
        kept.append(i)
        del arrays
    return Aligned([models[i] for i in kept], ranks[: len(kept)], reference.doc, reference.pos, reference.target, notes)
