"""A p-value that agrees with its percentile interval: p < 1 - level exactly when the interval excludes the null.

A contrast's interval is the percentile interval of its replicates, stretched to hold its estimate
(`rankscale.bootstrap.interval`); a p-value counted from the same replicates another way ((1 + m) / (1 + B), twice
the smaller tail) can disagree with it near 0.05 (the README's whitespace-minus-word contrast: 0.048 [0.002,
0.095] with p = 0.052). So p is the interval inverted: with the replicates' quantile function Q(q) (linear
interpolation between order statistics, numpy's default, as the interval takes it) and an estimate above the
null, the interval at level 1 - 2t excludes the null exactly when Q(t) > null, i.e. when t > q0 = sup{q : Q(q) <=
null}; so p = 2 q0 (an estimate below the null: the mirror image; at the null: 1). Every replicate beyond the
null gives p = 0: no level the replicates can state includes it.
"""

from __future__ import annotations

import numpy as np


def interval_p_value(values: np.ndarray, estimate: float, null: float = 0.0) -> float:
    """Two-sided p of `estimate` = `null` from replicates `values` (NaN left out): the smallest 1 - level at
    which the percentile interval containing `estimate` (`rankscale.bootstrap.interval`) excludes `null`."""
    v = np.sort(np.asarray(values, dtype=np.float64).ravel())
    v = v[np.isfinite(v)]
    if v.size == 0 or not np.isfinite(estimate):
        return float("nan")
    if estimate == null:
        return 1.0
    if estimate < null:  # mirror: Q_{-v}(q) = -Q_v(1 - q)
        v, estimate, null = -v[::-1], -estimate, -null
    return float(min(1.0, 2.0 * _share_at_or_below(v, null)))


def _share_at_or_below(v: np.ndarray, null: float) -> float:
    """q0 = sup{q in [0, 1] : Q(q) <= null} of sorted v, Q the linear interpolation of v at (n - 1) q (0 where
    even the smallest replicate is above the null)."""
    n = v.size
    if v[0] > null:
        return 0.0
    if v[-1] <= null or n == 1:
        return 1.0
    i = int(np.searchsorted(v, null, side="right")) - 1  # v[i] <= null < v[i + 1]
    return (i + (null - v[i]) / (v[i + 1] - v[i])) / (n - 1)
