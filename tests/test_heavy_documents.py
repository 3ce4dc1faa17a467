"""benchmarks/heavy_documents.py's studentized bootstrap against a brute-force reference: each resample's CR2
standard error is `rankscale.intervals.cr2_t`'s on the resample's documents written out one copy a unit, and the
interval's ends are the quantiles of those t's (a wrong leverage, a copy counted once, or swapped quantiles fail)."""

from __future__ import annotations

import numpy as np
from scipy import special

from rankscale.intervals import cr2_t
from tests.conftest import benchmark_module

heavy = benchmark_module("heavy_documents")
FLOAT64 = {"rtol": 1e-10, "atol": 0.0}  # the same float64 algebra in another order


def cr2_se_by_hand(n: np.ndarray, sums: np.ndarray, copies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ratio and CR2 SE of the documents written out, document u `copies[u]` times (cr2_t's half-width / t)."""
    units_n, units_sums = np.repeat(n, copies), np.repeat(sums, copies, axis=0)
    point = units_sums.sum(axis=0) / units_n.sum()
    low, high, df = cr2_t(units_sums / units_n[:, None], units_n / units_n.sum(), point, 0.95)
    return point, (high - low) / 2 / special.stdtrit(df, 0.975)


def population(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = rng.integers(5, 400, 9).astype(np.float64)
    n[0] = 3000.0  # one heavy document
    return n, np.stack([n * rng.uniform(2, 6, n.size), rng.binomial(n.astype(int), 0.3)], axis=1).astype(np.float64)


def test_each_resample_s_standard_error_is_cr2_of_its_copies() -> None:
    n, sums = population()
    counts = np.array([np.ones(n.size), [3, 0, 1, 2, 0, 0, 1, 1, 1], [0, 2, 2, 0, 1, 1, 0, 2, 1]], dtype=np.float64)
    theta, se = heavy.cr2_se(n, sums, counts)
    for b, c in enumerate(counts.astype(int)):
        want_theta, want_se = cr2_se_by_hand(n, sums, c)
        np.testing.assert_allclose(theta[b], want_theta, **FLOAT64)
        np.testing.assert_allclose(se[b], want_se, **FLOAT64)


def test_the_studentized_interval_takes_the_t_quantiles_the_other_way_round() -> None:
    n, sums = population()
    got = heavy.boot_t(n, sums, 299, np.random.default_rng(7))
    counts = np.random.default_rng(7).multinomial(n.size, np.full(n.size, 1.0 / n.size), size=299)
    theta, se = cr2_se_by_hand(n, sums, np.ones(n.size, dtype=int))
    t = []
    for c in counts:
        rep, rep_se = cr2_se_by_hand(n, sums, c)
        with np.errstate(divide="ignore", invalid="ignore"):
            t.append((rep - theta) / rep_se)
    t = np.array(t)
    for k in range(sums.shape[1]):
        v = t[:, k][~np.isnan(t[:, k])]
        want = [theta[k] - np.quantile(v, 0.975) * se[k], theta[k] - np.quantile(v, 0.025) * se[k]]
        np.testing.assert_allclose(got["boot-t"][:, k], want, **FLOAT64)
        q = np.quantile(np.abs(v), 0.95)
        np.testing.assert_allclose(got["boot-t sym"][:, k], [theta[k] - q * se[k], theta[k] + q * se[k]],
                                   **FLOAT64)  # fmt: skip
