"""The metrics: RBP_k, cross-entropy and the rank statistics they are computed from.

Each metric in `METRICS` is computed from *totals*: sums over scored tokens (`n`,
`sum_logprob`, `hits[k]` = tokens with rank <= k). Totals of all tokens give the point
estimate; document-weighted totals give bootstrap replicates, by the same `compute`.

To add a metric: add a `Metric` to `METRICS` (its `compute` from totals, the quantity fitted
as C S^-alpha, and axis labels). If it needs a statistic the totals lack, add it in
`rankscale.summary.totals`. It then appears in metrics.csv and powerlaw_fits.csv, and any
figure can plot it by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

Totals = Mapping[str, np.ndarray]  # sums over scored tokens; leading axes (if any) are replicates


@dataclass(frozen=True)
class Metric:
    """One quantity per model x dataset (x k): how to compute it, what is fitted, how to label it."""

    name: str  # metrics.csv `metric`
    law: str  # powerlaw_fits.csv `metric`: the quantity fitted as C S^-alpha
    per_k: bool  # one value per k of the grid (last axis of `compute`'s result)
    compute: Callable[[Totals], np.ndarray]
    to_law: Callable[[np.ndarray], np.ndarray]  # metric value -> fitted quantity
    from_law: Callable[[np.ndarray], np.ndarray]  # fitted quantity -> metric value
    law_label: str  # axis label (matplotlib mathtext) of the fitted quantity; "{k}" stands for k
    label: str  # axis label of the metric itself

    def axis_label(self, k: int | None = None, law: bool = True) -> str:
        return (self.law_label if law else self.label).replace("{k}", str(k))


def _rbp(totals: Totals) -> np.ndarray:
    return np.asarray(totals["hits"], dtype=np.float64) / np.asarray(totals["n"], dtype=np.float64)[..., None]


def _ce(totals: Totals) -> np.ndarray:
    return -(np.asarray(totals["sum_logprob"], dtype=np.float64) / np.asarray(totals["n"], dtype=np.float64))


def _identity(y: np.ndarray) -> np.ndarray:
    return np.asarray(y, dtype=np.float64)


def _neg_log(y: np.ndarray) -> np.ndarray:
    return -np.log(np.asarray(y, dtype=np.float64))


def _exp_neg(y: np.ndarray) -> np.ndarray:
    return np.exp(-np.asarray(y, dtype=np.float64))


def _statistic(name: str) -> Callable[[Totals], np.ndarray]:
    """A statistic of the rank histogram that the summary computes itself (point and replicates)."""

    def compute(totals: Totals) -> np.ndarray:
        return np.asarray(totals[name], dtype=np.float64)

    return compute


def _histogram_metric(name: str, label: str) -> Metric:
    return Metric(name, name, False, _statistic(name), _identity, _identity, label, label)


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            name="rbp",
            law="neg_log_rbp",
            per_k=True,
            compute=_rbp,
            to_law=_neg_log,
            from_law=_exp_neg,
            law_label="$-\\log \\mathrm{RBP}_{{k}}$",
            label="$\\mathrm{RBP}_{{k}}$",
        ),
        Metric(
            name="ce",
            law="ce",
            per_k=False,
            compute=_ce,
            to_law=_identity,
            from_law=_identity,
            law_label="cross-entropy (nats)",
            label="cross-entropy (nats)",
        ),
        # the decomposition CE = error entropy + self-alignment + confidence (docs/science.md)
        _histogram_metric("ee", "error entropy (nats)"),
        _histogram_metric("self_alignment", "self-alignment KL(p || q) (nats)"),
        _histogram_metric("confidence", "confidence $-\\log C$ (nats)"),
        # what the fitted discrete lognormal implies (the paper's Appendix B)
        _histogram_metric("ee_lognormal", "entropy of the fitted lognormal (nats)"),
        _histogram_metric("neg_log_p1_lognormal", "$-\\log P(R = 1)$ of the fitted lognormal"),
    )
}


def metric_for_law(law: str) -> Metric:
    """The metric whose fitted quantity is `law` (e.g. 'neg_log_rbp' -> rbp)."""
    for metric in METRICS.values():
        if metric.law == law:
            return metric
    raise KeyError(f"no metric fits {law!r}; known: {[m.law for m in METRICS.values()]}")


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
    """Fraction of N consecutive scored tokens all ranked within top-k, for each (k, N)."""
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
