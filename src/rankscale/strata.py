"""Strata of scored tokens: which tokens carry the law (docs/science.md, "Strata").

A stratum kind partitions a dataset's scored tokens the same way for every model of a family
(they share the tokenizer and windows, so the same targets at the same positions):

- `frequency`: the target's frequency rank among the dataset's scored targets (1 = the most
  frequent token id; ties by id), binned (`analysis.strata_bins.frequency`: upper bin edges);
- `context`: how many tokens the model saw before the target in its window, binned
  (`analysis.strata_bins.context`); bins no target can reach (past `max_length`) are left out;
- `kind`: what the target token is, from its text (`rankscale.token_kinds`).

Each token falls in one stratum of each kind. A summary numbers the strata of every kind in
one list (`assign`); per-document statistics count, per stratum, the tokens, their log-probs and
their hits at each k (`rankscale.statistics.STRATA`), so a stratum's metrics and intervals come
from the same per-document machinery and the same bootstrap draws as every other number.
CONTRIBUTING.md, "A new stratum kind", says how to add one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankscale.registry import Registry
from rankscale.token_kinds import KINDS
from rankscale.windows import WindowSpec, plan_windows


@dataclass(frozen=True)
class StrataSettings:
    """`analysis.strata` and `analysis.strata_bins`, and the k of each stratum's RBP_k (`analysis.law_k`)."""

    kinds: list[str]
    bins: dict[str, list[int]]  # upper bin edges, by stratum kind
    k: list[int]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> StrataSettings:
        return cls(list(params["kinds"]), {name: list(v) for name, v in params["bins"].items()}, list(params["k"]))


@dataclass(frozen=True)
class StrataTokens:
    """What stratum kinds see of a rank array's scored tokens (token-file order)."""

    target: np.ndarray
    doc: np.ndarray
    pos: np.ndarray
    windows: WindowSpec
    kind_table: np.ndarray | None  # `rankscale.token_kinds.kind_table` of the model's tokenizer


@dataclass(frozen=True)
class StratumKind:
    """One partition of the scored tokens: its strata's labels, and each token's stratum (an index into them)."""

    name: str
    labels: Callable[[StrataSettings, StrataTokens], list[str]]
    assign: Callable[[StrataSettings, StrataTokens], np.ndarray]
    reference: int = 0  # the stratum the others are contrasted with (strata_contrasts.csv)
    needs_kind_table: bool = False  # reads the tokenizer's token kinds (the token_kinds rule)


@dataclass(frozen=True)
class Stratum:
    kind: str
    label: str


def bin_labels(edges: Sequence[int], low: int = 1) -> list[str]:
    """'1-10', '11-100', ..., '1001+' for upper edges [10, 100, 1000] over values from `low`."""
    starts = [low, *(int(e) + 1 for e in edges)]
    return [f"{a}-{b}" if a != b else f"{a}" for a, b in zip(starts, edges, strict=False)] + [f"{starts[-1]}+"]


def binned(values: np.ndarray, edges: Sequence[int]) -> np.ndarray:
    """Bin index of each value: 0 for values <= edges[0], i for edges[i-1] < value <= edges[i], len(edges) above."""
    return np.searchsorted(np.asarray(edges, dtype=np.int64), np.asarray(values, dtype=np.int64), side="left")


def frequency_ranks(target: np.ndarray) -> np.ndarray:
    """Per token, its target's frequency rank among all scored targets (1 = most frequent; ties by token id)."""
    target = np.asarray(target, dtype=np.int64)
    counts = np.bincount(target)  # over the vocabulary: no sort of the tokens
    ids = np.flatnonzero(counts)
    order = np.lexsort((ids, -counts[ids]))  # by count, descending; then by id
    rank = np.zeros(len(counts), dtype=np.int64)
    rank[ids[order]] = np.arange(1, len(ids) + 1)
    return rank[target]


def context_lengths(tokens: StrataTokens) -> np.ndarray:
    """Per token, the tokens before it in the window that scored it.

    The windows are planned again as extraction planned them (`plan_windows`); a document's
    length is taken as its last scored position + 1, which yields the same windows over the
    scored positions, also where `max_windows_per_doc` left the document's end unscored.
    """
    doc = tokens.doc.astype(np.int64)
    pos = tokens.pos.astype(np.int64)
    n_docs = int(doc.max()) + 1 if doc.size else 0
    lengths = np.zeros(n_docs, dtype=np.int64)
    np.maximum.at(lengths, doc, pos + 1)
    first = np.full(n_docs, np.iinfo(np.int64).max)
    np.minimum.at(first, doc, pos)
    first[lengths == 0] = 1
    windows = plan_windows(lengths, tokens.windows, first)
    scale = int(lengths.max()) + 1 if n_docs else 1
    starts = windows.doc * scale + windows.score_from  # windows come in document order, each's scored span after
    index = np.searchsorted(starts, doc * scale + pos, side="right") - 1
    return pos - windows.start[index]


def _frequency(settings: StrataSettings, tokens: StrataTokens) -> np.ndarray:
    return binned(frequency_ranks(tokens.target), settings.bins["frequency"])


def _context_labels(settings: StrataSettings, tokens: StrataTokens) -> list[str]:
    """The context bins a target can reach: none has max_length or more tokens before it in its window."""
    edges = settings.bins["context"]
    lowest = [1, *(e + 1 for e in edges)]
    return bin_labels(edges)[: sum(low <= tokens.windows.max_length - 1 for low in lowest)]


def _context(settings: StrataSettings, tokens: StrataTokens) -> np.ndarray:
    return binned(context_lengths(tokens), settings.bins["context"])


def _kind(settings: StrataSettings, tokens: StrataTokens) -> np.ndarray:
    assert tokens.kind_table is not None, "the kind stratum reads the tokenizer's token kinds"
    return tokens.kind_table[tokens.target.astype(np.int64)].astype(np.int64)


STRATA: Registry[StratumKind] = Registry(
    "stratum kind",
    (
        StratumKind("frequency", lambda settings, tokens: bin_labels(settings.bins["frequency"]), _frequency),
        StratumKind("context", _context_labels, _context),
        StratumKind("kind", lambda settings, tokens: list(KINDS), _kind, reference=KINDS.index("word"),
                    needs_kind_table=True),  # fmt: skip
    )
)


def assign(settings: StrataSettings, tokens: StrataTokens) -> tuple[list[Stratum], np.ndarray]:
    """Every stratum of every kind of `settings`, in one list, and per token its stratum of each kind:
    [tokens, kinds] indices into that list."""
    strata: list[Stratum] = []
    columns = []
    for name in settings.kinds:
        kind = STRATA[name]
        labels = kind.labels(settings, tokens)
        index = kind.assign(settings, tokens)
        if index.size and (index.min() < 0 or index.max() >= len(labels)):
            raise ValueError(f"stratum kind {name!r} put a token outside its {len(labels)} strata")
        columns.append(index + len(strata))
        strata += [Stratum(name, label) for label in labels]
    out = np.stack(columns, axis=1) if columns else np.zeros((tokens.target.size, 0), dtype=np.int64)
    return strata, out
