"""Confidence, -log C with C = sum_e Q_e over the rank errors e a corpus sees, estimated with the ranks it missed.

C sums over the error values a sample happens to see, a species-richness-like functional: a smaller sample sees
fewer errors, so the plug-in C falls short (confidence biased 1-6 SDs up) and no smooth correction (the jackknife
over documents) removes it. The documents are the sampling units and a rank error is a "species" each document
does or does not hold, so Chao's incidence-based estimator of the unseen (Chao 1987; Chao et al. 2009, Ecology 90:
1125, "Chao2") applies with draws of documents as the units whatever the dependence inside a document:

    C_hat = sum_{e seen} Q~_e + f0 * mean(Q~_e : e in exactly one unit),
    f0 = (m - 1) / m * Q1^2 / (2 Q2)   (Q1 (Q1 - 1) / 2 where Q2 = 0),

Q1, Q2 the errors held by exactly one and two of the m units drawn (a unit drawn twice counts twice: the draws are
the units); the unseen errors are taken to weigh as the rarest seen ones. Q~_e = exp(L_e - V_e / 2) removes the
lognormal bias of exp(mean log p) (L_e = S_e / N_e a ratio of document sums, V_e its cluster-robust variance
m / (m - 1) sum_u (S_eu - L_e N_eu)^2 / N_e^2). benchmarks/histogram_bias.py measures it against the plug-in,
the jackknife over documents and Chao-Shen-style Horvitz-Thompson estimators (which over-correct).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


def chao2_confidence(hist: sparse.csc_matrix, logprob: sparse.csc_matrix, weights: np.ndarray) -> np.ndarray:
    """-log C_hat of each row of unit draw counts `weights` [b, U] over the units' rank histograms and summed
    log-probs [R, U] (integer token counts; any non-negative draw counts)."""
    w = np.asarray(weights, dtype=np.float64)
    hist, logprob = sparse.csc_matrix(hist, dtype=np.float64), sparse.csc_matrix(logprob, dtype=np.float64)
    counts, sums = np.asarray(hist @ w.T), np.asarray(logprob @ w.T)  # [R, b]
    incidence = np.asarray((hist > 0).astype(np.float64) @ w.T)
    m = w.sum(axis=1)
    seen = counts > 0
    safe = np.where(seen, counts, 1.0)
    mean_log = np.where(seen, sums / safe, 0.0)
    squares = np.asarray(logprob.multiply(logprob) @ w.T)
    cross = np.asarray(logprob.multiply(hist) @ w.T)
    count_squares = np.asarray(hist.multiply(hist) @ w.T)
    spread = squares - 2.0 * mean_log * cross + mean_log**2 * count_squares
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = np.where(seen, np.maximum(spread, 0.0) / safe**2, 0.0) * (m / np.maximum(m - 1.0, 1.0))
    q = np.where(seen, np.exp(mean_log - variance / 2.0), 0.0)
    one, two = np.isclose(incidence, 1.0), np.isclose(incidence, 2.0)
    q1, q2 = one.sum(axis=0).astype(np.float64), two.sum(axis=0).astype(np.float64)
    f0 = np.where(q2 > 0, q1**2 / (2.0 * np.maximum(q2, 1.0)), q1 * (q1 - 1.0) / 2.0) * (m - 1.0) / m
    unseen = f0 * (q * one).sum(axis=0) / np.maximum(q1, 1.0)
    return -np.log(q.sum(axis=0) + unseen)
