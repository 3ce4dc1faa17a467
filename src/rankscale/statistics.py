"""Per-document statistics: the sums over each document's scored tokens that metrics are computed from.

A `DocumentStatistic` maps the scored tokens of a rank array to one row per document
([documents, ...]). The summary computes every registered statistic once: its column sums are
the point totals, and the same matrix, weighted by each replicate's document draw, gives the
bootstrap replicates (`rankscale.bootstrap`). So a statistic declared once has a point value
and an interval, with no second computation to keep in step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rankscale.rankfile import Calibration


@dataclass(frozen=True)
class Scored:
    """The scored tokens of one rank array, as per-document statistics see them."""

    rank: np.ndarray  # per token, 1 = the greedy choice is right
    logprob: np.ndarray  # float32 log p(target)
    row: np.ndarray  # the token's document row, 0..n_rows-1 (documents in token-file order)
    n_rows: int
    starts: np.ndarray  # True where a run of consecutive scored positions begins (`segment_starts`)
    ks: Sequence[int]  # the k grid
    emergence_k: Sequence[int]  # k of the N-token run analysis
    emergence_n: Sequence[int]  # run lengths N
    stratum_index: np.ndarray | None = None  # [tokens, stratum kinds]: each token's stratum of each kind
    n_strata: int = 0  # the strata of every kind, numbered in one list
    strata_k: Sequence[int] = ()  # the k of each stratum's hits
    n_bytes: np.ndarray | None = None  # per token, the UTF-8 byte length of its target's text; None: not known
    calibration: Calibration | None = None  # the rank array's calibration fields; None: an array made before them


@dataclass(frozen=True)
class DocumentStatistic:
    """A sum over each document's tokens: `per_document(scored)` gives [documents, ...], or None where the scored
    tokens do not carry what it sums (no byte lengths): the summary then has no such statistic."""

    name: str
    per_document: Callable[[Scored], np.ndarray | None]


def _count(scored: Scored) -> np.ndarray:
    return np.bincount(scored.row, minlength=scored.n_rows)


def _logprob_sum(scored: Scored) -> np.ndarray:
    return np.bincount(scored.row, weights=scored.logprob.astype(np.float64), minlength=scored.n_rows)


def _bytes_sum(scored: Scored) -> np.ndarray | None:
    if scored.n_bytes is None:
        return None
    return np.bincount(scored.row, weights=scored.n_bytes.astype(np.float64), minlength=scored.n_rows).astype(np.int64)


def _hits(scored: Scored) -> np.ndarray:
    return hits_per_document(scored.rank, scored.row, scored.n_rows, list(scored.ks))


def _everywhere(scored: Scored) -> np.ndarray:
    return np.ones(scored.rank.size, dtype=bool)


def _run_windows(scored: Scored) -> np.ndarray:
    return run_windows(_everywhere(scored), scored.starts, scored.row, scored.emergence_n, scored.n_rows)


def _per_emergence_k(scored: Scored, compute: Callable[[np.ndarray], np.ndarray], tail: tuple[int, ...]) -> np.ndarray:
    """`compute(rank <= k)` for each emergence k, stacked on axis 1 ([documents, K, *tail])."""
    parts = [compute(scored.rank <= k) for k in scored.emergence_k]
    return np.stack(parts, axis=1) if parts else np.zeros((scored.n_rows, 0, *tail))


def _run_hits(scored: Scored) -> np.ndarray:
    def runs(mask: np.ndarray) -> np.ndarray:
        return run_windows(mask, scored.starts, scored.row, scored.emergence_n, scored.n_rows)

    return _per_emergence_k(scored, runs, (len(scored.emergence_n),))


def _pairs(scored: Scored) -> np.ndarray:
    return hit_pairs(_everywhere(scored), scored.starts, scored.row, scored.n_rows)[0]


def _pairs_prev_hit(scored: Scored) -> np.ndarray:
    return _per_emergence_k(scored, lambda mask: hit_pairs(mask, scored.starts, scored.row, scored.n_rows)[1], ())


def _pairs_both_hit(scored: Scored) -> np.ndarray:
    return _per_emergence_k(scored, lambda mask: hit_pairs(mask, scored.starts, scored.row, scored.n_rows)[2], ())


def _by_stratum(scored: Scored, weights: np.ndarray | None) -> np.ndarray:
    """[documents, strata]: a per-token quantity summed over each document's tokens of each stratum (each kind
    partitions the tokens, and its strata have their own columns)."""
    out = np.zeros(scored.n_rows * scored.n_strata)
    for kind in range(0 if scored.stratum_index is None else scored.stratum_index.shape[1]):
        cell = scored.row * scored.n_strata + scored.stratum_index[:, kind]
        out += np.bincount(cell, weights=weights, minlength=out.size)
    return out.reshape(scored.n_rows, scored.n_strata)


def _strata_count(scored: Scored) -> np.ndarray:
    return _by_stratum(scored, None).astype(np.int64)


def _strata_logprob(scored: Scored) -> np.ndarray:
    return _by_stratum(scored, scored.logprob.astype(np.float64))


def _strata_hits(scored: Scored) -> np.ndarray:
    """[documents, strata, strata k]: tokens of each document and stratum ranked within the top-k."""
    out = np.zeros((scored.n_rows * scored.n_strata, len(scored.strata_k)), dtype=np.int64)
    for kind in range(0 if scored.stratum_index is None else scored.stratum_index.shape[1]):
        cell = scored.row * scored.n_strata + scored.stratum_index[:, kind]
        out += hits_per_document(scored.rank, cell, len(out), list(scored.strata_k))
    return out.reshape(scored.n_rows, scored.n_strata, len(scored.strata_k))


TOKENS = DocumentStatistic("n", _count)  # scored tokens
LOGPROB_SUM = DocumentStatistic("sum_logprob", _logprob_sum)  # summed log p(target), float64
HITS = DocumentStatistic("hits", _hits)  # [documents, k grid]: tokens of rank <= k
# summed UTF-8 byte lengths of the scored targets' texts (special tokens 0): cross-entropy in bits per byte
BYTES = DocumentStatistic("sum_bytes", _bytes_sum)
# the emergence analysis: N-token windows inside all-hit stretches, and consecutive (previous, current) pairs
RUN_WINDOWS = DocumentStatistic("run_windows", _run_windows)  # [documents, N]: windows of N consecutive tokens
RUN_HITS = DocumentStatistic("run_hits", _run_hits)  # [documents, emergence k, N]: those all inside the top-k
PAIRS = DocumentStatistic("pairs", _pairs)  # consecutive scored pairs
PAIRS_PREV_HIT = DocumentStatistic("pairs_prev_hit", _pairs_prev_hit)  # [documents, emergence k]: first a hit
PAIRS_BOTH_HIT = DocumentStatistic("pairs_both_hit", _pairs_both_hit)  # [documents, emergence k]: both hits
EMERGENCE = (RUN_WINDOWS, RUN_HITS, PAIRS, PAIRS_PREV_HIT, PAIRS_BOTH_HIT)
# strata (`rankscale.strata`): per document and stratum, the tokens, their summed log-prob, their hits at each
# strata k. A stratum's totals are the whole array's statistics restricted to its tokens (`stratum_totals`), so
# every metric computes a stratum's value (and each replicate's) unchanged.
STRATA_TOKENS = DocumentStatistic("strata_n", _strata_count)  # [documents, strata]
STRATA_LOGPROB = DocumentStatistic("strata_sum_logprob", _strata_logprob)  # [documents, strata]
STRATA_HITS = DocumentStatistic("strata_hits", _strata_hits)  # [documents, strata, strata k]
STRATIFIED = {TOKENS.name: STRATA_TOKENS, LOGPROB_SUM.name: STRATA_LOGPROB, HITS.name: STRATA_HITS}
STRATA = tuple(STRATIFIED.values())


def unique(statistics: Iterable[DocumentStatistic]) -> list[DocumentStatistic]:
    """Statistics in first-seen order, each once; two different statistics under one name are refused."""
    seen: dict[str, DocumentStatistic] = {}
    for statistic in statistics:
        if seen.setdefault(statistic.name, statistic) is not statistic:
            raise ValueError(f"two different per-document statistics are named {statistic.name!r}")
    return list(seen.values())


class Totals(Mapping[str, np.ndarray]):
    """Sums over scored tokens by statistic (leading axes, if any, are replicates), indexed by a
    `DocumentStatistic` or its name; a summary's histogram statistics (error entropy, ...) sit beside them."""

    def __init__(self, values: Mapping[str, object]) -> None:
        self._values = {name: np.asarray(value) for name, value in values.items()}

    def __getitem__(self, key: str | DocumentStatistic) -> np.ndarray:  # type: ignore[override]
        name = key.name if isinstance(key, DocumentStatistic) else key
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"no statistic {name!r} in these totals; known: {sorted(self._values)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def stratum_totals(totals: Totals, stratum: int) -> Totals:
    """The totals of one stratum's tokens (point or replicates [B, ...]), under the whole array's statistic names:
    a metric reading tokens, log-probs and hits computes the stratum's value from them as it is (RBP_k at the
    strata k)."""
    return Totals({name: np.asarray(totals[stat])[..., stratum, :] if stat is STRATA_HITS
                   else np.asarray(totals[stat])[..., stratum] for name, stat in STRATIFIED.items()})  # fmt: skip


def k_grid(max_k: int, points_per_decade: int, include: Iterable[int], min_points: int = 40) -> list[int]:
    """Log-spaced integers from 1 to `max_k` (all of 1..10, then geometric), plus `include`.

    Denser spacing is used where needed so the grid has at least `min_points` values
    (or every integer up to `max_k` when that is fewer).
    """
    if max_k < 1:
        raise ValueError(f"max_k must be >= 1, got {max_k}")
    include = [int(k) for k in include if 1 <= int(k) <= max_k]
    decades = np.log10(max_k)
    per_decade = points_per_decade
    while True:
        n = max(2, int(np.ceil(decades * per_decade)) + 1)
        geometric = {int(v) for v in np.rint(10 ** np.linspace(0, decades, n))}
        values = sorted(set(range(1, min(10, max_k) + 1)) | geometric | {max_k} | set(include))
        if len(values) >= min(min_points, max_k):
            return values
        per_decade *= 2


def rank_histogram(rank: np.ndarray, vocab_size: int) -> np.ndarray:
    """counts[r] = number of tokens with rank r, for r in 0..vocab_size (counts[0] = 0)."""
    if rank.size and (int(rank.min()) < 1 or int(rank.max()) > vocab_size):
        raise ValueError(f"ranks must lie in 1..{vocab_size}, found {int(rank.min())}..{int(rank.max())}")
    return np.bincount(rank.astype(np.int64), minlength=vocab_size + 1)


def hits_per_document(rank: np.ndarray, row: np.ndarray, n_rows: int, ks: list[int]) -> np.ndarray:
    """[documents, K]: tokens of each document with rank <= k, for every k at once: one count per (document,
    smallest k that holds the rank), then a running sum over k (one pass instead of one per k)."""
    order = np.argsort(ks, kind="stable")
    grid = np.asarray(ks, dtype=np.int64)[order]
    first = np.searchsorted(grid, rank, side="left")  # len(ks): above every k
    counts = np.bincount(row * (len(ks) + 1) + first, minlength=n_rows * (len(ks) + 1))
    hits = np.cumsum(counts.reshape(n_rows, len(ks) + 1)[:, : len(ks)], axis=1)
    out = np.empty_like(hits)
    out[:, order] = hits
    return out


def segment_starts(doc: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """True where a run of consecutive scored positions begins (new document or a gap)."""
    starts = np.ones(doc.size, dtype=bool)
    if doc.size > 1:
        starts[1:] = (doc[1:] != doc[:-1]) | (pos[1:].astype(np.int64) != pos[:-1].astype(np.int64) + 1)
    return starts


def run_windows(mask: np.ndarray, starts: np.ndarray, row: np.ndarray, ns: Iterable[int], n_rows: int) -> np.ndarray:
    """Per row (document), how many windows of N consecutive scored tokens lie inside all-True
    stretches of `mask` that cross no segment start: an array [n_rows, len(ns)]."""
    ns = [int(n) for n in ns]
    out = np.zeros((n_rows, len(ns)), dtype=np.int64)
    if mask.size == 0:
        return out
    begin = mask & (starts | np.concatenate([[True], ~mask[:-1]]))
    run_id = np.cumsum(begin)
    lengths = np.bincount(run_id[mask], minlength=int(run_id[-1]) + 1)[1:]
    run_row = row[begin]
    for j, n in enumerate(ns):
        out[:, j] = np.bincount(run_row, weights=np.clip(lengths - n + 1, 0, None), minlength=n_rows)
    return out


def hit_pairs(
    mask: np.ndarray, starts: np.ndarray, row: np.ndarray, n_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: consecutive scored pairs (i-1, i), those whose first is a hit, those where both are hits."""
    follows = ~starts
    previous = np.concatenate([[False], mask[:-1]])
    count = np.bincount(row[follows], minlength=n_rows)
    prev_hit = np.bincount(row[follows & previous], minlength=n_rows)
    both = np.bincount(row[follows & previous & mask], minlength=n_rows)
    return count, prev_hit, both


def empirical_runs(
    rank: np.ndarray, doc: np.ndarray, pos: np.ndarray, ks: Iterable[int], ns: Iterable[int]
) -> list[dict[str, float]]:
    """Fraction of N consecutive scored tokens all ranked within top-k, for each (k, N): a direct count
    over the whole array, the reference the per-document statistics are tested against."""
    starts = segment_starts(doc, pos)
    row = np.zeros(rank.size, dtype=np.int64)
    ns = list(ns)
    total = run_windows(np.ones(rank.size, dtype=bool), starts, row, ns, 1)[0]
    rows = []
    for k in ks:
        hit = run_windows(rank <= k, starts, row, ns, 1)[0]
        for n, t, h in zip(ns, total, hit, strict=True):
            rows.append({"k": int(k), "N": int(n), "n_runs": int(t), "empirical": h / t if t else float("nan")})
    return rows
