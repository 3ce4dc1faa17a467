"""RBP_k, cross-entropy and the rank histogram, computed in one pass over a rank array."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

REQUIRED_K: tuple[int, ...] = (1, 10, 50, 100, 1000, 20000, 30000)


def k_grid(
    max_k: int, points_per_decade: int = 12, include: Iterable[int] = REQUIRED_K, min_points: int = 40
) -> list[int]:
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


def rbp_from_histogram(hist: np.ndarray, ks: Iterable[int]) -> dict[int, float]:
    """RBP_k = Pr(R <= k) for each k (k beyond the vocabulary is 1 by definition)."""
    cumulative = np.cumsum(hist)
    n = cumulative[-1]
    if n == 0:
        raise ValueError("no scored tokens")
    return {int(k): float(cumulative[min(int(k), len(hist) - 1)] / n) for k in ks}


def cross_entropy(logprob: np.ndarray) -> float:
    """Mean negative log-likelihood in nats, accumulated in float64."""
    if logprob.size == 0:
        raise ValueError("no scored tokens")
    return float(-np.mean(logprob, dtype=np.float64))


def segment_starts(doc: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """True where a run of consecutive scored positions begins (new document or a gap)."""
    starts = np.ones(doc.size, dtype=bool)
    if doc.size > 1:
        starts[1:] = (doc[1:] != doc[:-1]) | (pos[1:].astype(np.int64) != pos[:-1].astype(np.int64) + 1)
    return starts


def _run_lengths(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Lengths of maximal all-True stretches of `mask` that do not cross a segment start."""
    if mask.size == 0:
        return np.zeros(0, dtype=np.int64)
    begin = mask & (starts | np.concatenate([[True], ~mask[:-1]]))
    run_id = np.cumsum(begin)
    return np.bincount(run_id[mask], minlength=int(run_id[-1]) + 1)[1:]


def windows_count(lengths: np.ndarray, n: int) -> int:
    """Number of length-`n` sub-runs inside runs of the given lengths."""
    return int(np.clip(lengths - n + 1, 0, None).sum())


def empirical_runs(
    rank: np.ndarray, doc: np.ndarray, pos: np.ndarray, ks: Iterable[int], ns: Iterable[int]
) -> list[dict[str, float]]:
    """Fraction of N consecutive scored tokens all ranked within top-k, for each (k, N)."""
    starts = segment_starts(doc, pos)
    segments = _run_lengths(np.ones(rank.size, dtype=bool), starts)
    rows = []
    for k in ks:
        runs = _run_lengths(rank <= k, starts)
        for n in ns:
            total = windows_count(segments, n)
            hit = windows_count(runs, n)
            rows.append(
                {"k": int(k), "N": int(n), "n_runs": total, "empirical": hit / total if total else float("nan")}
            )
    return rows
