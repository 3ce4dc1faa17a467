"""Statistics of the rank distribution: error entropy, the CE decomposition, and the lognormal's laws.

- Error entropy (arXiv 2510.04067): EE = -sum_r P(R = r) log P(R = r) of the empirical rank
  distribution; Miller-Madow corrects its plug-in bias by + (m - 1) / (2n), m non-empty ranks.
- The companion paper's decomposition of cross-entropy, exact on the stored (rank, log-prob)
  pairs: with e = R - 1, p_e the share of tokens of rank error e, Q_e = exp(mean log p(t) over
  them), C = sum_e Q_e and q_e = Q_e / C,
      CE = H(p) + KL(p || q) - log C   (error entropy + self-alignment + confidence).
- What the fitted discrete lognormal implies (`rankscale.lognormal.implied`, `appendix_b`).
All of it is computed from a weighted rank histogram, so a bootstrap replicate is the same
computation on the replicate's histogram.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rankscale.lognormal import DegenerateRanks, appendix_b, entropy, fit_lognormal, implied


def rank_sums(rank: np.ndarray, logprob: np.ndarray, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per rank r = 0..|V|: how many tokens, and their summed log-prob (float64)."""
    r = rank.astype(np.int64)
    return (
        np.bincount(r, minlength=vocab_size + 1).astype(np.float64),
        np.bincount(r, weights=logprob.astype(np.float64), minlength=vocab_size + 1),
    )


def error_entropy(counts: np.ndarray) -> tuple[float, float]:
    """(plug-in EE, Miller-Madow corrected EE) of a (possibly weighted) rank histogram."""
    n = float(counts.sum())
    nonzero = counts[counts > 0]
    ee = entropy(nonzero / n)
    return ee, ee + (nonzero.size - 1) / (2 * n)


def decomposition(counts: np.ndarray, logprob_sums: np.ndarray) -> tuple[float, float, float]:
    """(error entropy, self-alignment KL(p || q), confidence -log C); they sum to CE."""
    seen = counts > 0
    n = float(counts.sum())
    p = counts[seen] / n
    log_q_raw = logprob_sums[seen] / counts[seen]  # log Q_e: mean log-prob of the tokens of rank error e
    log_c = float(np.logaddexp.reduce(log_q_raw))
    log_q = log_q_raw - log_c
    return float(-(p @ np.log(p))), float(p @ (np.log(p) - log_q)), -log_c


def distribution_statistics(
    counts: np.ndarray,
    logprob_sums: np.ndarray,
    ks: Sequence[int],
    truncate: bool,
    start: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Everything conjecture.csv reports for one rank histogram (counts[r], r = 0..|V|)."""
    vocab_size = len(counts) - 1
    ee, ee_mm = error_entropy(counts)
    _, self_alignment, confidence = decomposition(counts, logprob_sums)
    out: dict[str, Any] = {
        "ee": ee,
        "ee_mm": ee_mm,
        "self_alignment": self_alignment,
        "confidence": confidence,
        "ranks_seen": int((counts > 0).sum()),
    }
    try:
        fit = fit_lognormal(counts, truncate=truncate, start=start)
    except DegenerateRanks as exc:
        nan = math.nan
        return {**out, "mu": nan, "sigma": nan, "ee_lognormal": nan, "neg_log_p1_lognormal": nan,
                **{f"neg_log_rbp{k}_lognormal": nan for k in ks}, "ce_appendix_b": nan,
                "neg_log_p1_appendix_b": nan, "note": str(exc)}  # fmt: skip
    derived = implied(fit.mu, fit.sigma, vocab_size, list(ks), truncate)
    neg_log_p1_b, ce_b = appendix_b(fit.mu, fit.sigma)
    return {
        **out,
        "mu": fit.mu,
        "sigma": fit.sigma,
        "ee_lognormal": derived.entropy,
        "neg_log_p1_lognormal": derived.neg_log_p1,
        **{f"neg_log_rbp{k}_lognormal": derived.neg_log_rbp.get(k, math.nan) for k in ks},
        "ce_appendix_b": ce_b,
        "neg_log_p1_appendix_b": neg_log_p1_b,
        "note": "",
    }


def markov_run_rate(rbp: np.ndarray, prev_hit: np.ndarray, both_hit: np.ndarray, n: int) -> np.ndarray:
    """Rate of N-runs all inside the top-k under a first-order Markov chain of hits:
    pi * P(hit | previous hit)^(N - 1), pi = RBP_k, P(hit | hit) from consecutive scored pairs."""
    with np.errstate(invalid="ignore", divide="ignore"):
        stay = np.asarray(both_hit, dtype=np.float64) / np.asarray(prev_hit, dtype=np.float64)
    return np.asarray(rbp, dtype=np.float64) * stay ** (n - 1)
