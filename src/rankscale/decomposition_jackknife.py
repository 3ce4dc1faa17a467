"""CE's decomposition (error entropy, self-alignment, confidence) bias-corrected over documents: the error entropy
by the jackknife, confidence by Chao2's estimate of the rank errors a sample missed (`rankscale.unseen_ranks`).

The plug-in statistics of a rank histogram are biased: on the run's documents the plug-in error entropy sat 0.7-2.6
of its bootstrap SDs below the truth, self-alignment and confidence 1.8-6 above, so no interval of their replicates
could be centred on them. Miller-Madow's (m - 1) / 2N counts tokens as independent draws, which the tokens of one
document are not. The jackknife over the resampling units (documents) removes the O(1/n) bias of a smooth statistic
of the summed histogram whatever the dependence inside a document (Quenouille 1956; Efron & Tibshirani 1993, ch. 10):

    T_J = m T - (m - 1) / m * sum_u T_(-u),

m the units drawn, T_(-u) the statistic with one draw of unit u left out (benchmarks/histogram_bias.py: the error
entropy's bias falls to 0.1-0.2 SDs; confidence, a sum over the ranks a corpus happens to see, keeps 0.4-3, so it
is `chao2_confidence` instead: -0.4 to +0.3).
A bootstrap replicate is corrected the same way inside itself (its draws are its units), and the replicates are
`recentred`. Leaving a unit out changes the histogram only at the ranks its tokens hold, so every T_(-u) of every
replicate is a sparse update of the replicate's sums: the cost is the (unit, rank) pairs times the replicates.

The rule that decides which interval a histogram statistic gets (`rankscale.bca.stable_choice`) reads the
jackknife's bias of the estimate it is given, from leave-one-unit-out values. For these statistics those must be the
corrected estimator's own, T_J(-u) (the jackknife over the other m - 1 units, `corrected_left_out`): the plug-in's
T_(-u) would measure the bias the correction already removed (m times the plug-in's, against T_J), not what is left
of it. The jackknife of T_J is the second-order jackknife's estimate of its residual bias (Schucany, Gray & Owen
1971), exact arithmetic, which a redraw of the replicates does not move.

Chao2's confidence is no smooth statistic: its leave-one-out values give its jackknife SE, but their jackknife bias
is no estimate of its bias (`UNSMOOTH`, `rankscale.bca.unsmooth_interval`).

Self-alignment is taken as CE - EE_J - confidence with CE the replicate's own ratio, so the decomposition still
sums to the reported cross-entropy exactly (the ratio's own O(1/n) bias is orders below its SD); it can fall
below 0, where the truth is near 0.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from scipy import sparse
from scipy.special import xlogy

from rankscale.unseen_ranks import chao2_confidence

CORRECTED = ("ee", "self_alignment", "confidence")  # the statistics this module corrects (`rankscale.conjecture`)
# those whose estimator is no smooth function of the documents' sums (Chao2's confidence, and CE less it): their
# interval is `rankscale.bca.unsmooth_interval`, not the jackknife-bias rule
UNSMOOTH = ("self_alignment", "confidence")


def unit_histograms(rank_by_row: sparse.spmatrix, logprob_by_row: sparse.spmatrix, units: np.ndarray,
                    ) -> tuple[np.ndarray, sparse.csc_matrix, sparse.csc_matrix]:  # fmt: skip
    """(present units, their rank histograms [|V| + 1, P], their log-prob sums [|V| + 1, P]) from per-document
    ones [|V| + 1, documents], `units[d]` being document d's resampling unit."""
    present, column = np.unique(np.asarray(units, dtype=np.int64), return_inverse=True)
    merge = sparse.csr_matrix((np.ones(column.size), (np.arange(column.size), column)),
                              shape=(column.size, present.size))  # fmt: skip
    return present, sparse.csc_matrix(rank_by_row @ merge), sparse.csc_matrix(logprob_by_row @ merge)


def _plug_in(counts: np.ndarray, sums: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per column of counts [R, b]: (N, sum c log c, the shift of log Q, sum exp(log Q - shift), summed log-prob)."""
    n = counts.sum(axis=0)
    seen = counts > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_q = np.where(seen, sums / np.where(seen, counts, 1.0), -np.inf)
    shift = log_q.max(axis=0)
    z = np.exp(log_q - shift).sum(axis=0)
    return n, xlogy(counts, counts).sum(axis=0), shift, z, sums.sum(axis=0)


def corrected_blocks(hist: sparse.csc_matrix, logprob: sparse.csc_matrix, weight_blocks: Iterable[np.ndarray],
                     ) -> dict[str, np.ndarray]:  # fmt: skip
    """The corrected ee (jackknife), confidence (`chao2_confidence`) and self_alignment (CE less both), their
    plug-ins (`*_plug_in`), and the jackknives of Miller-Madow's entropy and of the plug-in confidence
    (`ee_miller_madow`, `confidence_jackknife`: candidates benchmarks/histogram_bias.py measures beside them) of each
    row of each block of unit draw counts [b, P] over the units of `unit_histograms` (a row of ones: the sample)."""
    coo = sparse.coo_matrix(hist)
    rank, unit, h = coo.row, coo.col, coo.data.astype(np.float64)
    lp = np.asarray(logprob.tocsc()[rank, unit]).ravel()  # the same (rank, unit) pairs' summed log-prob
    n_units = hist.shape[1]
    by_unit = sparse.csr_matrix((np.ones(unit.size), (unit, np.arange(unit.size))), shape=(n_units, unit.size))
    unit_tokens = np.asarray(hist.sum(axis=0)).ravel()
    parts: dict[str, list[np.ndarray]] = {}
    for weights in weight_blocks:
        w = np.asarray(weights, dtype=np.float64)  # [b, P]
        counts = np.asarray(hist @ w.T)
        sums = np.asarray(logprob @ w.T)
        n, flogf, shift, z, total = _plug_in(counts, sums)
        ee = np.log(n) - flogf / n
        conf = -(shift + np.log(z))
        ce = -total / n
        # one draw of unit u left out, at the (rank, unit) pairs it holds: [pairs, b]
        c, s = counts[rank], sums[rank]
        c_out = np.maximum(c - h[:, None], 0.0)  # < 0 only where the replicate does not draw u (weight 0 below)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d_flogf = xlogy(c, c) - xlogy(c_out, c_out)
            old = np.exp(s / c - shift)
            new = np.where(c_out > 0, np.exp((s - lp[:, None]) / np.where(c_out > 0, c_out, 1.0) - shift), 0.0)
            n_out = n[None, :] - unit_tokens[:, None]  # [P, b]
            ee_out = np.log(n_out) - (flogf[None, :] - by_unit @ d_flogf) / n_out
            seen = (counts > 0).sum(axis=0)
            seen_out = seen[None, :] - by_unit @ ((c_out == 0) & (c > 0)).astype(np.float64)
            mm, mm_out = ee + (seen - 1) / (2 * n), ee_out + (seen_out - 1) / (2 * n_out)
            conf_out = -(shift[None, :] + np.log(z[None, :] - by_unit @ (old - new)))
        drawn = w.T > 0  # [P, b]
        m = w.sum(axis=1)
        got = {}
        for name, full, out in (("ee", ee, ee_out), ("ee_miller_madow", mm, mm_out),
                                ("confidence_jackknife", conf, conf_out)):  # fmt: skip
            mean_out = np.where(drawn, w.T * np.where(drawn, out, 0.0), 0.0).sum(axis=0) / m
            got[name] = m * full - (m - 1.0) * mean_out
        got["confidence"] = chao2_confidence(hist, logprob, w)
        got.update(ee_plug_in=ee, confidence_plug_in=conf)
        got["self_alignment"] = ce - got["ee"] - got["confidence"]
        got["self_alignment_plug_in"] = ce - ee - conf
        for name, value in got.items():
            parts.setdefault(name, []).append(value)
    return {name: np.concatenate(v) for name, v in parts.items()}


def recentred(point: dict[str, np.ndarray], reps: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each corrected statistic's replicates moved by the sample's own correction, T_J + (T_J* - T): in the
    bootstrap's world the documents are the population and their plug-in value T is the truth, so T_J* - T is the
    bootstrap's copy of the estimator's error T_J - truth. The replicates then scatter around the point as the
    estimator around its truth, and an interval of them (BCa's z0: its residual bias) is centred on the point.
    Unshifted they would sit the whole correction (the plug-in's bias, 1-4 SDs) away from it."""
    return {name: float(point[name][0]) + reps[name] - float(point[f"{name}_plug_in"][0]) for name in CORRECTED}


def corrected_left_out(rank_by_row: sparse.spmatrix, logprob_by_row: sparse.spmatrix, units: np.ndarray,
                       size: int, block: int = 64) -> dict[str, np.ndarray]:  # fmt: skip
    """The corrected ee, self_alignment and confidence with one resampling unit left out, T_J(-u), each the
    estimator over the other units [size] over units 0..size - 1 (NaN for a unit with no scored document), as
    `rankscale.summary.compute.leave_one_out` gives the plug-in's: what BCa's acceleration, the jackknife t and the
    rule's bias read for the estimator the tables report."""
    present, hist, logprob = unit_histograms(rank_by_row, logprob_by_row, units)
    out = {name: np.full(size, np.nan) for name in CORRECTED}
    if present.size < 2:
        return out
    rows = [1.0 - np.eye(present.size)[start : start + block] for start in range(0, present.size, block)]
    with np.errstate(divide="ignore", invalid="ignore"):
        got = corrected_blocks(hist, logprob, rows)
    for name in CORRECTED:
        out[name][present] = got[name]
    return out


def corrected_decomposition(rank_by_row: sparse.spmatrix, logprob_by_row: sparse.spmatrix, units: np.ndarray,
                            draw_blocks: Iterable[np.ndarray] = ()) -> tuple[dict[str, float], dict[str, np.ndarray]]:  # fmt: skip
    """(point, replicates) of the corrected ee, self_alignment and confidence: the point over the sample's
    own units, the replicates over each block of draw counts [b, n_units] (`rankscale.bootstrap.Resampling.draws`:
    indexed by unit, so units this model has no document of draw nothing), `recentred`."""
    present, hist, logprob = unit_histograms(rank_by_row, logprob_by_row, units)
    point = corrected_blocks(hist, logprob, [np.ones((1, present.size))])
    blocks = [np.asarray(b)[:, present] for b in draw_blocks]
    reps = corrected_blocks(hist, logprob, blocks) if blocks else {name: np.zeros(0) for name in CORRECTED}
    return {name: float(point[name][0]) for name in CORRECTED}, recentred(point, reps)
