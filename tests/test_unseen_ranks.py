"""Confidence with the rank errors a sample missed (`rankscale.unseen_ranks`): a hand-computed example of Chao2 with
lognormal-corrected Q, and its bias against a population whose C is known exactly, far below the plug-in's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import sparse

from rankscale.unseen_ranks import chao2_confidence


def test_chao2_confidence_by_hand() -> None:
    """Three units: errors 0 (in all three), 1 (in two), 2 and 3 (one each): Q1 = 2, Q2 = 1, f0 = (2/3) 2^2 / 2."""
    # (rank, unit, log-prob) of each token
    tokens = [(0, 0, -0.1), (0, 0, -0.1), (1, 0, -1.0), (0, 1, -0.3), (2, 1, -2.0), (0, 2, -0.2), (1, 2, -1.4),
              (3, 2, -3.0)]  # fmt: skip
    rank, unit, lp = (np.array(c) for c in zip(*tokens, strict=True))
    hist = sparse.csc_matrix((np.ones(rank.size), (rank, unit)), shape=(5, 3))
    logprob = sparse.csc_matrix((lp, (rank, unit)), shape=(5, 3))
    # error 0: L = -0.7 / 4; residuals of the unit sums -0.2, -0.3, -0.2 against 2L, L, L
    v0 = 1.5 * (0.15**2 + 0.125**2 + 0.025**2) / 16
    v1 = 1.5 * (0.2**2 + 0.2**2) / 4  # error 1: L = -1.2, residuals +-0.2
    seen = math.exp(-0.175 - v0 / 2) + math.exp(-1.2 - v1 / 2) + math.exp(-2.0) + math.exp(-3.0)
    unseen = (2 / 3) * 2**2 / 2 * (math.exp(-2.0) + math.exp(-3.0)) / 2
    got = chao2_confidence(hist, logprob, np.ones((1, 3)))
    assert got[0] == pytest.approx(-math.log(seen + unseen), rel=1e-12)
    # a unit drawn twice is two units: its own errors held twice are no longer Q1
    twice = chao2_confidence(hist, logprob, np.array([[0.0, 2.0, 0.0]]))
    # errors 0 and 2, each in both draws: Q1 = 0, Q2 = 2; no spread between identical draws
    assert twice[0] == pytest.approx(-math.log(math.exp(-0.3) + math.exp(-2.0)), rel=1e-12)


def population(seed: int = 5, documents: int = 150) -> tuple[sparse.csc_matrix, sparse.csc_matrix, float]:
    """Documents whose tokens' rank errors follow a heavy tail over 3000 errors, each error's log-prob fixed (so
    Q_e is known exactly and the lognormal correction has nothing to remove), and the population's C."""
    rng = np.random.default_rng(seed)
    errors = np.arange(3000)
    weight = 1.0 / (errors + 1.0) ** 1.3
    log_q = -0.5 - 1.2 * np.log1p(errors)
    lengths = rng.integers(40, 400, documents)
    doc = np.repeat(np.arange(documents), lengths)
    # each document leans to its own errors (tokens of one document go together)
    tilt = rng.gamma(0.5, 2.0, (documents, errors.size))
    rank = np.concatenate([rng.choice(errors.size, n, p=(weight * tilt[d]) / (weight * tilt[d]).sum())
                           for d, n in enumerate(lengths)])  # fmt: skip
    hist = sparse.csc_matrix((np.ones(rank.size), (rank, doc)), shape=(errors.size, documents))
    logprob = sparse.csc_matrix((log_q[rank], (rank, doc)), shape=(errors.size, documents))
    in_population = np.asarray(hist.sum(axis=1)).ravel() > 0
    return hist, logprob, float(np.exp(log_q[in_population]).sum())


def test_chao2_bias_is_far_below_the_plug_ins() -> None:
    """Samples of 30 of the population's 150 documents (with replacement): the plug-in, -log of the sum over the
    errors a sample sees, misses the rare ones; Chao2's mean error over 300 samples is under a fifth of the
    plug-in's, and under a third of its own SD (a wrong f0, or none, keeps the plug-in's bias of several SDs)."""
    hist, logprob, c = population()
    truth = -math.log(c)
    rng = np.random.default_rng(11)
    draws = np.stack([np.bincount(rng.integers(0, 150, 30), minlength=150) for _ in range(300)]).astype(np.float64)
    got = chao2_confidence(hist, logprob, draws)
    counts, sums = np.asarray(hist @ draws.T), np.asarray(logprob @ draws.T)
    seen = counts > 0
    plug = -np.log(np.where(seen, np.exp(sums / np.where(seen, counts, 1.0)), 0.0).sum(axis=0))
    plug_bias, bias = plug.mean() - truth, got.mean() - truth
    assert plug_bias > 3 * plug.std()  # the test's population does have unseen errors that matter
    assert abs(bias) < 0.2 * plug_bias
    assert abs(bias) < got.std() / 3
