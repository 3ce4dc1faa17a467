"""Power-law and discrete truncated lognormal fits on synthetic data with known parameters."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from rankscale.laws import fit_power_law
from rankscale.lognormal import fit_lognormal, log_pmf, sample_discrete_lognormal
from rankscale.statistics import rank_histogram

SIZES = np.array([1.9e7, 8.5e7, 3.0e8, 8.1e8, 1.2e9, 2.5e9, 6.4e9, 1.1e10])

# --- power law -----------------------------------------------------------------------------


@pytest.mark.parametrize(("alpha", "C"), [(0.05, 2.0), (0.2, 30.0), (0.076, 0.9), (1.3, 1e4), (-0.1, 0.5)])
def test_power_law_recovers_noise_free_parameters(alpha: float, C: float) -> None:
    y = C * SIZES ** (-alpha)
    fit = fit_power_law(SIZES, y)
    assert fit.alpha == pytest.approx(alpha, abs=1e-6)
    assert fit.C == pytest.approx(C, rel=1e-6)
    assert fit.r2 == pytest.approx(1.0, abs=1e-9)
    assert fit.n == SIZES.size
    np.testing.assert_allclose(fit.at(SIZES), y, rtol=1e-6)
    assert float(fit.at(1e9)) == pytest.approx(C * 1e9 ** (-alpha), rel=1e-6)


def test_power_law_two_points_and_lists() -> None:
    fit = fit_power_law([1e6, 1e8], [2.0, 1.0])  # type: ignore[arg-type]
    assert fit.alpha == pytest.approx(np.log(2) / np.log(100), abs=1e-12)
    assert fit.r2 == pytest.approx(1.0, abs=1e-12)


def test_power_law_with_noise() -> None:
    rng = np.random.default_rng(0)
    y = 3.0 * SIZES ** (-0.2) * np.exp(rng.normal(0, 0.05, SIZES.size))
    fit = fit_power_law(SIZES, y)
    assert fit.r2 < 1.0 - 1e-6
    assert fit.r2 > 0.8
    assert fit.alpha == pytest.approx(0.2, abs=0.05)
    # R^2 is computed in log space: compare with the textbook formula on (log S, log y)
    x, ly = np.log(SIZES), np.log(y)
    slope, intercept = np.polyfit(x, ly, 1)
    expected = 1 - np.sum((ly - intercept - slope * x) ** 2) / np.sum((ly - ly.mean()) ** 2)
    assert fit.r2 == pytest.approx(expected, abs=1e-12)
    assert fit.r2 == pytest.approx(np.corrcoef(x, ly)[0, 1] ** 2, abs=1e-12)


def test_power_law_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="2 distinct"):
        fit_power_law(np.array([1e8, 1e8, 1e8]), np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError):
        fit_power_law(np.array([1e8, 1e9]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError):
        fit_power_law(np.array([1e8, 1e9]), np.array([1.0, -0.5]))
    with pytest.raises(ValueError):
        fit_power_law(np.array([1e8, 1e9]), np.array([1.0, np.nan]))
    with pytest.raises(ValueError):
        fit_power_law(np.array([0.0, 1e9]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        fit_power_law(np.array([1e8, 1e9, 1e10]), np.array([1.0, 2.0]))


# --- discrete truncated lognormal ----------------------------------------------------------


@pytest.mark.parametrize(
    ("mu", "sigma", "vocab"),
    [(1.0, 1.0, 4096), (3.0, 2.0, 50277), (0.5, 0.5, 1000), (2.0, 3.0, 300), (6.0, 2.5, 4096)],
)
def test_fit_lognormal_recovers_parameters(mu: float, sigma: float, vocab: int) -> None:
    ranks = sample_discrete_lognormal(mu, sigma, vocab, 200_000, seed=1)
    assert ranks.min() >= 1 and ranks.max() <= vocab
    hist = rank_histogram(ranks, vocab)
    fit = fit_lognormal(hist, truncate=True)
    assert fit.mu == pytest.approx(mu, abs=0.05)
    assert fit.sigma == pytest.approx(sigma, abs=0.05)
    assert fit.n_tokens == 200_000
    assert fit.mu_over_sigma == pytest.approx(fit.mu / fit.sigma)
    # it is the maximum: no worse than the true parameters on this sample
    true_nll = -(hist[1:] * log_pmf(np.arange(1, vocab + 1), mu, sigma, vocab, True)).sum() / hist.sum()
    assert fit.nll_per_token <= true_nll + 1e-9


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log1p:RuntimeWarning")  # optimiser probes
def test_continuous_lognormal_fit_is_wrong_when_truncation_matters() -> None:
    """Why the discrete truncated fit exists: scipy's continuous fit ignores the cut at |V|."""
    mu, sigma, vocab = 6.0, 2.5, 4096
    ranks = sample_discrete_lognormal(mu, sigma, vocab, 200_000, seed=2)
    ours = fit_lognormal(rank_histogram(ranks, vocab), truncate=True)
    shape, _, scale = scipy.stats.lognorm.fit(ranks.astype(np.float64), floc=0)
    theirs_mu, theirs_sigma = np.log(scale), shape
    our_error = max(abs(ours.mu - mu), abs(ours.sigma - sigma))
    their_error = max(abs(theirs_mu - mu), abs(theirs_sigma - sigma))
    assert our_error < 0.05
    assert their_error > 0.3  # about 0.6 in sigma and 0.75 in mu
    assert their_error > 5 * our_error


def test_log_pmf_matches_scipy_cdf() -> None:
    mu, sigma, vocab = 2.0, 1.3, 500
    r = np.arange(1, vocab + 1)
    dist = scipy.stats.lognorm(s=sigma, scale=np.exp(mu))
    expected = (dist.cdf(r + 0.5) - dist.cdf(r - 0.5)) / (dist.cdf(vocab + 0.5) - dist.cdf(0.5))
    np.testing.assert_allclose(np.exp(log_pmf(r, mu, sigma, vocab, True)), expected, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize(
    ("mu", "sigma"),
    [(1.0, 1.0), (-5.0, 0.1), (-30.0, 3.0), (20.0, 0.5), (50.0, 5.0), (3.0, 10.0), (0.0, 0.01), (8.0, 0.05)],
)
@pytest.mark.parametrize("vocab", [1, 2, 4096, 151665])
def test_log_pmf_sums_to_one(mu: float, sigma: float, vocab: int) -> None:
    lp = log_pmf(np.arange(1, vocab + 1), mu, sigma, vocab, True)
    assert np.all(np.isfinite(lp) | (lp == -np.inf))
    assert np.all(lp <= 1e-12)
    assert np.exp(lp).sum() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize(
    ("mu", "sigma", "vocab", "ranks"),
    [
        (20.0, 0.5, 4096, [1, 100, 4000, 4096]),  # mass far above |V|: the deep left tail
        (-30.0, 3.0, 4096, [1, 2, 3, 100]),  # mass far below rank 1: the deep right tail
        (50.0, 5.0, 151665, [1, 1000, 151665]),
        (8.0, 0.05, 4096, [2000, 2981, 4096]),
    ],
)
def test_log_pmf_extreme_tails_against_high_precision(mu: float, sigma: float, vocab: int, ranks: list[int]) -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60

    def cdf(x: float) -> object:
        return mpmath.ncdf((mpmath.log(x) - mu) / sigma)

    norm = cdf(vocab + 0.5) - cdf(0.5)
    expected = [float(mpmath.log((cdf(r + 0.5) - cdf(r - 0.5)) / norm)) for r in ranks]
    np.testing.assert_allclose(log_pmf(np.array(ranks), mu, sigma, vocab, True), expected, rtol=1e-10, atol=1e-9)


def test_sample_discrete_lognormal_is_seeded_and_matches_pmf() -> None:
    a = sample_discrete_lognormal(1.5, 1.0, 200, 50_000, seed=3)
    b = sample_discrete_lognormal(1.5, 1.0, 200, 50_000, seed=3)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, sample_discrete_lognormal(1.5, 1.0, 200, 50_000, seed=4))
    observed = np.bincount(a, minlength=201)[1:11] / a.size
    expected = np.exp(log_pmf(np.arange(1, 11), 1.5, 1.0, 200, True))
    np.testing.assert_allclose(observed, expected, atol=0.006)


def test_fit_lognormal_bad_histograms() -> None:
    with pytest.raises(ValueError):
        fit_lognormal(np.array([3, 1, 2]), truncate=True)
    with pytest.raises(ValueError):
        fit_lognormal(np.zeros(10, dtype=np.int64), truncate=True)
