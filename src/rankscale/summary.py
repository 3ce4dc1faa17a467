"""Per model x dataset summary: everything downstream needs, computed once from a rank array.

The summary holds *totals* (sums over scored tokens on the k grid) from which every metric of
`rankscale.metrics.METRICS` is computed, the lognormal fit of the rank histogram, and the
N-token run counts of the emergence analysis.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rankscale.lognormal import fit_lognormal
from rankscale.metrics import empirical_runs, k_grid, rank_histogram
from rankscale.rankfile import RankArrays

# the `analysis:` settings a summary is computed with (the k grid, the emergence runs)
SUMMARY_SETTINGS = ("k_points_per_decade", "k_include", "emergence_k", "emergence_N")


def totals(arrays: RankArrays, hist: np.ndarray, ks: list[int]) -> dict[str, Any]:
    """Sums over every scored token: count, summed log-prob (float64), tokens with rank <= k."""
    cumulative = np.cumsum(hist)
    return {
        "n": int(arrays.rank.size),
        "sum_logprob": float(np.sum(arrays.logprob, dtype=np.float64)),
        "hits": [int(cumulative[k]) for k in ks],
    }


def summary_totals(summary: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A summary's totals as arrays, ready for `Metric.compute`."""
    return {key: np.asarray(value) for key, value in summary["totals"].items()}


def summarize(
    arrays: RankArrays, meta: Mapping[str, Any], analysis: Mapping[str, Any], family: str
) -> tuple[dict[str, Any], np.ndarray]:
    """Return (summary dict, rank histogram): totals on the k grid, lognormal fit, N-token runs."""
    vocab_size = int(meta["vocab_size"])
    if arrays.rank.size == 0:
        raise ValueError(f"{meta['model']} / {meta['dataset']}: no scored tokens")
    hist = rank_histogram(arrays.rank, vocab_size)
    ks = k_grid(vocab_size, analysis["k_points_per_decade"], analysis["k_include"])
    fit = fit_lognormal(hist)
    emergence_k = [k for k in analysis["emergence_k"] if k <= vocab_size]
    runs = empirical_runs(arrays.rank, arrays.doc, arrays.pos, emergence_k, analysis["emergence_N"])
    summary = {
        "model": meta["model"],
        "family": family,
        "dataset": meta["dataset"],
        "S": int(meta["S"]),
        "vocab_size": vocab_size,
        "n_tokens": int(arrays.rank.size),
        "k": ks,
        "totals": totals(arrays, hist, ks),
        "lognormal": {
            "mu": fit.mu,
            "sigma": fit.sigma,
            "mu_over_sigma": fit.mu_over_sigma,
            "nll_per_token": fit.nll_per_token,
        },
        "mean_log_rank": float(np.mean(np.log(arrays.rank.astype(np.float64)))),
        "runs": runs,
        "ties": meta["ties"],
        "rank_sha256": meta["sha256"],
    }
    return summary, hist
