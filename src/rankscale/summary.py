"""Per model x dataset summary: everything downstream needs, computed once from a rank array."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rankscale.lognormal import fit_lognormal
from rankscale.metrics import REQUIRED_K, cross_entropy, empirical_runs, k_grid, rank_histogram, rbp_from_histogram
from rankscale.rankfile import RankArrays


def summarize(
    arrays: RankArrays, meta: Mapping[str, Any], analysis: Mapping[str, Any], family: str
) -> tuple[dict[str, Any], np.ndarray]:
    """Return (summary dict, rank histogram). RBP_k on the k grid, CE, lognormal, runs."""
    vocab_size = int(meta["vocab_size"])
    hist = rank_histogram(arrays.rank, vocab_size)
    ks = k_grid(vocab_size, analysis.get("k_points_per_decade", 12), analysis.get("k_include", REQUIRED_K))
    rbp = rbp_from_histogram(hist, ks)
    fit = fit_lognormal(hist)
    emergence_k = [k for k in analysis.get("emergence_k", [1, 10, 100]) if k <= vocab_size]
    runs = empirical_runs(
        arrays.rank, arrays.doc, arrays.pos, emergence_k, analysis.get("emergence_N", [1, 2, 5, 10, 20, 50])
    )
    for row in runs:
        row["predicted"] = rbp_from_histogram(hist, [row["k"]])[row["k"]] ** row["N"]
    summary = {
        "model": meta["model"],
        "family": family,
        "dataset": meta["dataset"],
        "S": int(meta["S"]),
        "vocab_size": vocab_size,
        "n_tokens": int(arrays.rank.size),
        "ce": cross_entropy(arrays.logprob),
        "rbp": {str(k): v for k, v in rbp.items()},
        "lognormal": {
            "mu": fit.mu,
            "sigma": fit.sigma,
            "mu_over_sigma": fit.mu_over_sigma,
            "nll_per_token": fit.nll_per_token,
        },
        "mean_log_rank": float(np.mean(np.log(arrays.rank.astype(np.float64)))) if arrays.rank.size else float("nan"),
        "runs": runs,
        "ties": meta["ties"],
        "rank_sha256": meta["sha256"],
    }
    return summary, hist
