"""Calibration and nucleus coverage: per-document sums of the rank arrays' calibration fields, and what the
metrics compute from them (docs/science.md, "Calibration and nucleus coverage").

Per scored token t the rank array holds M (`mass_above`: the probability ranked at or above the truth), the
top-1 log-probability and the entropy H (`rankscale.rankfile.Calibration`). From them, as sums over each
document's tokens, so that every metric has a point, bootstrap replicates and (for a ratio) the
cluster-robust t interval over documents like RBP_k:
- nucleus coverage C(p) = Pr(M < p) (the truth inside the top-p nucleus) on a fine grid of p;
- the randomised PIT U = M + W p_t (W uniform, a fixed seed), whose distribution function is the diagonal when
  the model is calibrated: per document the deviations sum_t ([U <= u] - u) on a grid of u, and their squares;
- top-1 confidence c and correctness y = [R = 1]: sums of c, of y, of (c - y)^2, and per equal-mass bin of c
  the deviations sum (y - c) and their squares;
- the entropy's sum, against the summed -log p (calibration in the large: a calibrated model's mean H is
  its CE).

A squared deviation's plug-in is biased upward by the noise of the deviation itself. The squared distances
here are debiased across documents: with S_d a document's summed deviation over its n_d tokens, each of mean
delta, (sum_d S_d)^2 - sum_d S_d^2 keeps only the products of different documents, whose expectation is
delta^2 (n^2 - sum_d n_d^2) when documents are independent, however a document's own tokens go together; so
delta^2 is estimated by that over n^2 - sum_d n_d^2 (Kumar, Liang & Ma 2019 debias the squared calibration error
the same way for independent tokens; a document of one token is their estimator). The squares' bootstrap
replicates weigh a document drawn c times by c^2 (`rankscale.bootstrap.replicate_totals`), so that a replicate
keeps the products of different documents alone too, and centres on the point, not on the plug-in.
An array made before the calibration fields has none of these sums, so none of these metrics.
"""

from __future__ import annotations

import numpy as np

from rankscale.statistics import DocumentStatistic, Scored, Totals

NUCLEUS_P = (0.5, 0.8, 0.9, 0.95, 0.99)  # the nucleus grid: each C(p) is a metric with its law in S
NUCLEUS_Q = 0.9  # the coverage whose calibrated nucleus p*(q) is reported
# C(p) on a fine grid too, for p*(q) and the coverage curves: 0.01..0.99, with the nucleus grid on it
P_GRID = tuple(sorted({round(j / 100, 2) for j in range(1, 100)} | set(NUCLEUS_P)))
U_GRID = tuple(round(j / 20, 2) for j in range(1, 20))  # the PIT's distribution function at 0.05..0.95
RELIABILITY_BINS = 15  # equal-mass bins of the top-1 confidence
PIT_SEED = 20251023  # W of the randomised PIT: fixed, so a summary is reproducible


def pit(scored: Scored) -> np.ndarray | None:
    """U = M + W p_t per scored token (in the array's (document, position) order), None without the fields."""
    if scored.calibration is None:
        return None
    w = np.random.default_rng(PIT_SEED).random(scored.rank.size)
    u = scored.calibration.mass_above.astype(np.float64) + w * np.exp(scored.logprob.astype(np.float64))
    return np.clip(u, 0.0, 1.0)


def top1(scored: Scored) -> tuple[np.ndarray, np.ndarray]:
    """(c, y): the top-1 probability and whether the top-1 token is the truth."""
    assert scored.calibration is not None
    return np.exp(scored.calibration.top1_logprob.astype(np.float64)), (scored.rank == 1).astype(np.float64)


def reliability_bin(confidence: np.ndarray) -> np.ndarray:
    """Each token's equal-mass bin of the top-1 confidence (the array's own quantiles; ties share a bin)."""
    inner = np.quantile(confidence, np.arange(1, RELIABILITY_BINS) / RELIABILITY_BINS) if confidence.size else []
    return np.searchsorted(np.asarray(inner), confidence, side="right")


def _by_row(scored: Scored, values: np.ndarray) -> np.ndarray:
    return np.bincount(scored.row, weights=values, minlength=scored.n_rows)


def _columns(scored: Scored, values: np.ndarray) -> np.ndarray:
    """[documents, columns]: `values` [tokens, columns] summed over each document's tokens."""
    return np.stack([_by_row(scored, values[:, j]) for j in range(values.shape[1])], axis=1)


def _by_bin(scored: Scored, values: np.ndarray, bins: np.ndarray) -> np.ndarray:
    cell = scored.row * RELIABILITY_BINS + bins
    return np.bincount(cell, weights=values, minlength=scored.n_rows * RELIABILITY_BINS).reshape(scored.n_rows, -1)


def _nucleus(scored: Scored) -> np.ndarray | None:
    if scored.calibration is None:
        return None
    m = scored.calibration.mass_above
    return _columns(scored, (m[:, None] < np.asarray(P_GRID, dtype=np.float32)[None, :]).astype(np.float64))


def _pit_deviation(scored: Scored) -> np.ndarray | None:
    u = pit(scored)
    if u is None:
        return None
    grid = np.asarray(U_GRID)
    return _columns(scored, (u[:, None] <= grid[None, :]) - grid[None, :])


def _pit_deviation_squared(scored: Scored) -> np.ndarray | None:
    deviation = _pit_deviation(scored)
    return None if deviation is None else deviation**2


def _tokens_squared(scored: Scored) -> np.ndarray | None:
    return None if scored.calibration is None else np.bincount(scored.row, minlength=scored.n_rows).astype(np.float64) ** 2


def _entropy(scored: Scored) -> np.ndarray | None:
    return None if scored.calibration is None else _by_row(scored, scored.calibration.entropy.astype(np.float64))


def _confidence(scored: Scored) -> np.ndarray | None:
    return None if scored.calibration is None else _by_row(scored, top1(scored)[0])


def _top1_hits(scored: Scored) -> np.ndarray | None:
    return None if scored.calibration is None else _by_row(scored, top1(scored)[1])


def _brier(scored: Scored) -> np.ndarray | None:
    if scored.calibration is None:
        return None
    c, y = top1(scored)
    return _by_row(scored, (c - y) ** 2)


def _bins(scored: Scored, what: str) -> np.ndarray | None:
    if scored.calibration is None:
        return None
    c, y = top1(scored)
    bins = reliability_bin(c)
    if what in ("n", "n_squared"):
        count = _by_bin(scored, np.ones_like(c), bins)
        return count if what == "n" else count**2
    if what == "confidence":
        return _by_bin(scored, c, bins)
    deviation = _by_bin(scored, y - c, bins)
    return deviation if what == "deviation" else deviation**2


NUCLEUS_HITS = DocumentStatistic("nucleus_hits", _nucleus)  # [documents, P_GRID]: tokens with M < p
PIT_DEVIATION = DocumentStatistic("pit_deviation", _pit_deviation)  # [documents, U_GRID]: sum([U <= u] - u)
PIT_DEVIATION_SQUARED = DocumentStatistic("pit_deviation_squared", _pit_deviation_squared)  # its square
ENTROPY_SUM = DocumentStatistic("sum_entropy", _entropy)  # summed entropy (nats)
CONFIDENCE_SUM = DocumentStatistic("sum_top1_prob", _confidence)  # summed top-1 probability
TOP1_HITS = DocumentStatistic("top1_hits", _top1_hits)  # tokens ranked first
BRIER_SUM = DocumentStatistic("sum_top1_brier", _brier)  # summed (c - y)^2
TOKENS_SQUARED = DocumentStatistic("tokens_squared", _tokens_squared)  # n_d^2: the debiased squares' normaliser
BIN_TOKENS = DocumentStatistic("reliability_n", lambda s: _bins(s, "n"))  # [documents, bins]
BIN_TOKENS_SQUARED = DocumentStatistic("reliability_n_squared", lambda s: _bins(s, "n_squared"))  # n_db^2
BIN_CONFIDENCE = DocumentStatistic("reliability_confidence", lambda s: _bins(s, "confidence"))  # sum c per bin
BIN_DEVIATION = DocumentStatistic("reliability_deviation", lambda s: _bins(s, "deviation"))  # sum (y - c) per bin
BIN_DEVIATION_SQUARED = DocumentStatistic("reliability_deviation_squared", lambda s: _bins(s, "squared"))


def _f(totals: Totals, statistic: DocumentStatistic) -> np.ndarray:
    return np.asarray(totals[statistic], dtype=np.float64)


def coverage(totals: Totals, tokens: DocumentStatistic, p: float) -> np.ndarray:
    """C(p): the share of tokens with M < p (p on P_GRID)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _f(totals, NUCLEUS_HITS)[..., P_GRID.index(p)] / _f(totals, tokens)


def calibrated_nucleus(totals: Totals, tokens: DocumentStatistic, q: float = NUCLEUS_Q) -> np.ndarray:
    """p*(q): the smallest p whose coverage reaches q, linear between the points of P_GRID (NaN past 0.99)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        curve = _f(totals, NUCLEUS_HITS) / _f(totals, tokens)[..., None]
    grid = np.asarray(P_GRID)
    flat = curve.reshape(-1, grid.size)
    out = np.full(flat.shape[0], np.nan)
    for i, c in enumerate(flat):
        above = np.flatnonzero(c >= q)
        if above.size == 0 or not np.isfinite(c).all():
            continue
        j = int(above[0])
        if j == 0:
            out[i] = grid[0] if c[0] == q else np.nan  # reached below the grid: no interpolation to make
            continue
        lo, hi = c[j - 1], c[j]
        out[i] = grid[j - 1] + (q - lo) / (hi - lo) * (grid[j] - grid[j - 1])
    return out.reshape(curve.shape[:-1])


def debiased_square(deviation: np.ndarray, squared: np.ndarray, n: np.ndarray, n_squared: np.ndarray) -> np.ndarray:
    """delta^2, the squared mean deviation per token: the cross-document products of the deviations' sums over
    those of the token counts, ((sum S)^2 - sum S^2) / (n^2 - sum n_d^2) (module docstring); NaN where every token
    lies in one document (no two documents to compare)."""
    denominator = n**2 - n_squared
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (deviation**2 - squared) / denominator, np.nan)


def pit_distance(totals: Totals, tokens: DocumentStatistic) -> np.ndarray:
    """RMS over U_GRID of F(u) - u, the PIT's distribution function off the diagonal, debiased (0 if calibrated;
    an unbiased square below 0, noise around a calibrated model, reads 0)."""
    n, n_squared = _f(totals, tokens)[..., None], _f(totals, TOKENS_SQUARED)[..., None]
    square = debiased_square(_f(totals, PIT_DEVIATION), _f(totals, PIT_DEVIATION_SQUARED), n, n_squared)
    return np.sqrt(np.clip(square.mean(axis=-1), 0.0, None))


def calibration_error(totals: Totals, tokens: DocumentStatistic) -> np.ndarray:
    """The top-1 calibration error over equal-mass bins, root mean square and debiased: sqrt of
    sum_b (n_b / n) (accuracy_b - confidence_b)^2, each square debiased across documents."""
    n_b = _f(totals, BIN_TOKENS)
    square = debiased_square(_f(totals, BIN_DEVIATION), _f(totals, BIN_DEVIATION_SQUARED), n_b,
                             _f(totals, BIN_TOKENS_SQUARED))  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        weighted = (n_b * square).sum(axis=-1) / _f(totals, tokens)  # sum_b (n_b / n) delta_b^2
        return np.sqrt(np.clip(weighted, 0.0, None))


def overconfidence(totals: Totals, tokens: DocumentStatistic) -> np.ndarray:
    """Mean top-1 confidence less top-1 accuracy: above 0 overconfident, below 0 underconfident."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (_f(totals, CONFIDENCE_SUM) - _f(totals, TOP1_HITS)) / _f(totals, tokens)


def brier(totals: Totals, tokens: DocumentStatistic) -> np.ndarray:
    """The top-label Brier score, mean (c - y)^2."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _f(totals, BRIER_SUM) / _f(totals, tokens)


def entropy_gap(totals: Totals, tokens: DocumentStatistic, logprob: DocumentStatistic) -> np.ndarray:
    """CE - mean H: above 0 the model is more surprised than it expects (overconfident), 0 when calibrated."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -(_f(totals, logprob) + _f(totals, ENTROPY_SUM)) / _f(totals, tokens)


CALIBRATION = (NUCLEUS_HITS, PIT_DEVIATION, PIT_DEVIATION_SQUARED, TOKENS_SQUARED, ENTROPY_SUM, CONFIDENCE_SUM,
               TOP1_HITS, BRIER_SUM, BIN_TOKENS, BIN_TOKENS_SQUARED, BIN_CONFIDENCE, BIN_DEVIATION,
               BIN_DEVIATION_SQUARED)  # fmt: skip
# squares of a document's sums: their bootstrap replicates weigh a document drawn c times by c^2 (module docstring)
SQUARED = tuple(s.name for s in (PIT_DEVIATION_SQUARED, TOKENS_SQUARED, BIN_TOKENS_SQUARED, BIN_DEVIATION_SQUARED))
