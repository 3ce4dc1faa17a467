"""CE's decomposition by the jackknife over documents (`rankscale.decomposition_jackknife`): the sparse leave-one-out
against an explicit loop, the estimator's bias against a known entropy, and the replicates centred on the point."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import sparse

from rankscale.bca import jackknife_bias
from rankscale.bootstrap import resample_counts
from rankscale.conjecture import decomposition, error_entropy
from rankscale.decomposition_jackknife import (
    CORRECTED,
    corrected_blocks,
    corrected_decomposition,
    corrected_left_out,
    unit_histograms,
)
from rankscale.unseen_ranks import chao2_confidence
from tests.tolerances import unit_roundoff

VOCAB = 60
# two float64 paths (a sparse update of the totals, a loop over whole histograms): each subtracts a unit's x log x
# from totals of N log N / N (under 10 nats here) over some 10^3 terms, so they differ by round-off times that size
SUMMED = 1e3 * 10.0 * unit_roundoff(torch.float64)


def documents(rng: np.random.Generator, n_docs: int, length: int, p: np.ndarray) -> tuple[sparse.csr_matrix, ...]:
    """Per-document rank histograms and log-prob sums [|V| + 1, documents] of iid ranks drawn from p (ranks 1..)."""
    rank = rng.choice(np.arange(1, p.size + 1), size=(n_docs, length), p=p)
    logprob = -np.log(rank) - rng.exponential(0.5, size=rank.shape)  # falls with the rank, noisy
    row = np.repeat(np.arange(n_docs), length)
    shape = (p.size + 1, n_docs)
    return (sparse.csr_matrix((np.ones(rank.size), (rank.ravel(), row)), shape=shape),
            sparse.csr_matrix((logprob.ravel(), (rank.ravel(), row)), shape=shape))  # fmt: skip


def test_miller_madow_of_a_hand_histogram() -> None:
    """counts 3, 1, 0, 2: H = -(1/2 ln 1/2 + 1/6 ln 1/6 + 1/3 ln 1/3) = 1.0114043, + (3 - 1) / 12 (Miller 1955)."""
    plug_in, mm = error_entropy(np.array([0.0, 3.0, 1.0, 0.0, 2.0]))
    assert plug_in == pytest.approx(1.0114042647, abs=1e-9)
    assert mm == pytest.approx(1.0114042647 + 2 / 12, abs=1e-9)


NAMES = (*CORRECTED, "confidence_jackknife")


def brute_force(hist: sparse.csr_matrix, logprob: sparse.csr_matrix, weights: np.ndarray) -> np.ndarray:
    """m T - (m - 1) / m sum_u w_u T(without one draw of u) of ee and confidence by an explicit loop over the drawn
    units, Chao2's confidence of the weighted documents, and self-alignment CE less ee's and it (`NAMES`)."""

    def stats(w: np.ndarray) -> np.ndarray:
        return np.array(decomposition(np.asarray(hist @ w).ravel(), np.asarray(logprob @ w).ravel()))

    m = weights.sum()
    outs = [weights[u] * stats(weights - np.eye(weights.size)[u]) for u in np.nonzero(weights)[0]]
    corrected = m * stats(weights) - (m - 1) * np.sum(outs, axis=0) / m
    ce = -float((logprob @ weights).sum() / (hist @ weights).sum())
    chao2 = float(chao2_confidence(sparse.csc_matrix(hist), sparse.csc_matrix(logprob), weights[None, :])[0])
    return np.array([corrected[0], ce - corrected[0] - chao2, chao2, corrected[2]])


def test_sparse_leave_one_out_is_the_explicit_loop() -> None:
    """Point and replicates (draws with repeats, units the model has no document of) against the loop."""
    rng = np.random.default_rng(7)
    p = 1.0 / np.arange(1, VOCAB + 1)
    hist, logprob = documents(rng, 12, 30, p / p.sum())
    units = np.arange(12) * 2 + 1  # units 0, 2, 4, ... have no document here
    draws = np.concatenate(list(resample_counts(25, 4, 3, "t")))
    point, reps = corrected_decomposition(hist, logprob, units, [draws])
    expected = brute_force(hist, logprob, np.ones(12))
    for j, name in enumerate(CORRECTED):
        assert point[name] == pytest.approx(expected[j], rel=0, abs=SUMMED)
    _, h, lp = unit_histograms(hist, logprob, units)
    raw = corrected_blocks(h, lp, [draws[:, units]])
    for b in range(len(draws)):
        want = brute_force(hist, logprob, draws[b, units].astype(np.float64))
        for j, name in enumerate(NAMES):
            assert raw[name][b] == pytest.approx(want[j], rel=0, abs=SUMMED)
            if name not in CORRECTED:
                continue
            # recentred by the sample's own correction: + (jackknife - plug-in) of the whole sample
            correction = point[name] - brute_plug_in(hist, logprob, name)
            assert reps[name][b] - raw[name][b] == pytest.approx(correction, rel=0, abs=SUMMED)


def brute_plug_in(hist: sparse.csr_matrix, logprob: sparse.csr_matrix, name: str) -> float:
    counts, sums = np.asarray(hist.sum(axis=1)).ravel(), np.asarray(logprob.sum(axis=1)).ravel()
    return float(dict(zip(CORRECTED, decomposition(counts, sums), strict=True))[name])


def test_jackknife_removes_the_plug_in_bias_of_a_known_entropy() -> None:
    """Zipf ranks over 50 values, 40 documents of 25 tokens: the plug-in falls short of H(p) by about
    (m - 1) / 2N = 0.0245 (Miller 1955); the jackknife leaves O(1/N^2): sum(1/p) / 12N^2 = 0.0005 here. Over 300
    seeded samples the plug-in's mean misses by many SEs, the jackknife's lies within 4 SEs plus that term."""
    p = 1.0 / np.arange(1, 51)
    p /= p.sum()
    truth = float(-(p @ np.log(p)))
    second_order = float((1.0 / p).sum()) / (12 * 1000**2)
    rng = np.random.default_rng(20261129)
    plug, jack = [], []
    for _ in range(300):
        hist, logprob = documents(rng, 40, 25, p)
        got = corrected_blocks(sparse.csc_matrix(hist), sparse.csc_matrix(logprob), [np.ones((1, 40))])
        plug.append(got["ee_plug_in"][0])
        jack.append(got["ee"][0])
    plug_err, jack_err = np.array(plug) - truth, np.array(jack) - truth
    se = jack_err.std(ddof=1) / math.sqrt(len(jack_err))
    assert plug_err.mean() < -8 * se  # biased: about -0.0245 against an SE of about 0.0017
    assert abs(jack_err.mean()) < 4 * se + second_order


def test_recentred_replicates_are_centred_on_the_point() -> None:
    """The jackknife's raw replicates sit about the plug-in's bias (here ~0.8 SD) below the point, since in the
    bootstrap's world the truth is the sample's plug-in; recentred by the sample's correction they scatter around
    the point (within MC noise and the jackknife's residual bias)."""
    p = 1.0 / np.arange(1, 51)
    hist, logprob = documents(np.random.default_rng(3), 40, 25, p / p.sum())
    units = np.arange(40)
    draws = list(resample_counts(40, 400, 1, "c"))
    point, reps = corrected_decomposition(hist, logprob, units, draws)
    _, h, lp = unit_histograms(hist, logprob, units)
    raw = corrected_blocks(h, lp, draws)["ee"]
    sd = raw.std(ddof=1)
    assert (raw.mean() - point["ee"]) / sd < -0.5
    assert abs(reps["ee"].mean() - point["ee"]) / sd < 0.25


def test_corrected_left_out_is_the_jackknife_over_the_other_units() -> None:
    """T(-u), unit u's documents left out (the jackknife of ee, Chao2's confidence), against the explicit loop over
    the remaining units (whose weights are all ones but u's); a unit with no document is NaN."""
    rng = np.random.default_rng(11)
    p = 1.0 / np.arange(1, VOCAB + 1)
    hist, logprob = documents(rng, 9, 30, p / p.sum())
    units = np.arange(9) * 2  # odd units have no document
    got = corrected_left_out(hist, logprob, units, 18, block=4)
    for u in range(18):
        for j, name in enumerate(CORRECTED):
            if u % 2:
                assert math.isnan(got[name][u])
            else:
                want = brute_force(hist, logprob, np.ones(9) - np.eye(9)[u // 2])[j]
                assert got[name][u] == pytest.approx(want, rel=0, abs=SUMMED)


def test_the_rules_bias_reads_the_corrected_estimators_own_jackknife() -> None:
    """On Zipf ranks (40 documents of 25 tokens) the plug-in's own jackknife bias is about -0.8 of its SE (Miller's
    (m - 1) / 2N against an SD near 0.03); the corrected estimator's, from its own leave-one-out values, is a small
    residual (< 0.25 here). Fed the plug-in's leave-one-out values instead, the rule would read m times the plug-in's
    bias against the corrected point (tens of SEs) and refuse every interval."""
    p = 1.0 / np.arange(1, 51)
    hist, logprob = documents(np.random.default_rng(5), 40, 25, p / p.sum())
    units = np.arange(40)
    point, _ = corrected_decomposition(hist, logprob, units)
    own = corrected_left_out(hist, logprob, units, 40)["ee"]
    _, h, lp = unit_histograms(hist, logprob, units)
    plug_in_out = corrected_blocks(h, lp, [1.0 - np.eye(40)])["ee_plug_in"]
    plug_in = brute_plug_in(hist, logprob, "ee")
    assert jackknife_bias(plug_in, plug_in_out) < -0.5
    assert abs(jackknife_bias(point["ee"], own)) < 0.25
    assert abs(jackknife_bias(point["ee"], plug_in_out)) > 10.0
