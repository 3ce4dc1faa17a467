"""The size level of a law's uncertainty (rankscale.laws.random_effects): tau^2 by REML with the full document
covariance, the lack-of-fit Q, tau^2's generalized pivotal quantity (rankscale.laws.pivot), and the coverage they
give.

Each computation is checked against an independent one: the textbook REML likelihood maximised by brute force,
Q by whitening and least squares against chi^2, the pivot against its closed form under exchangeable noise (and
the OLS residual t it becomes when documents vanish), a planted tau^2 recovered exactly from its own chi^2 draw,
the mixture interval against the integral over tau^2's pivot, extrapolation.csv's interval against the textbook
OLS prediction interval and family_contrasts.csv's against the integral over the paired documents and both pivots.
Coverage with a planted size level is a Monte Carlo study: benchmarks/size_level_coverage.py (RESULTS.md)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

from rankscale.laws.form import Points
from rankscale.laws.pivot import TauPivot, equivalent_df, half_width, mixture_interval, variances
from rankscale.laws.power import OFFSET_POWER_LAW, POWER_LAW, ols
from rankscale.laws.random_effects import (
    fit_size_level,
    lack_of_fit,
    log_design,
    ols_map,
    reml_loglik,
    reml_tau2,
    replicate_covariance,
    residual_basis,
    size_matrix,
    with_size_level,
    without_rounding,
)
from rankscale.tables import lawkit
from rankscale.tables.noise import Noise
from tests.conftest import benchmark_module

SIZES = np.array([25_472, 77_568, 172_800, 473_088, 1_198_080, 3_159_552], dtype=np.float64)
X = np.stack([np.ones(6), np.log(SIZES)], axis=1)
SLOPE = np.array([0.0, 1.0])


def coverage_module():
    return benchmark_module("size_level_coverage")


def correlated_V() -> np.ndarray:
    """Correlations 0.80-0.95, SDs 0.01-0.03: the shape of the default run's document covariance."""
    return coverage_module().synthetic_covariance()


def test_reml_tau2_is_the_brute_force_maximum_of_the_textbook_likelihood() -> None:
    V, K = correlated_V(), size_matrix(range(6))
    rng = np.random.default_rng(1)
    for tau in (0.0, 0.005, 0.02, 0.08):
        y = 1.0 - 0.05 * X[:, 1] + tau * rng.standard_normal(6) + np.linalg.cholesky(V) @ rng.standard_normal(6)
        found = reml_tau2(X, y, V, K)
        upper = max(4 * found, 1e-4)
        grid = np.linspace(0.0, upper, 4001)
        loglik = np.array([reml_loglik(t, X, y, V, K) for t in grid])  # -(log|S| + log|X'S^-1X| + y'Py) / 2
        best = grid[int(np.argmax(loglik))]
        assert found == pytest.approx(best, abs=2 * upper / 4000)
        assert reml_loglik(found, X, y, V, K) >= loglik.max() - 1e-9


def test_reml_is_zero_when_the_points_lie_on_the_law_and_large_when_they_scatter() -> None:
    V, K = correlated_V(), size_matrix(range(6))
    on_law = 1.0 - 0.05 * X[:, 1]
    assert reml_tau2(X, on_law, V, K) == 0.0
    scattered = on_law + 0.1 * np.array([1, -1, 1, -1, 1, -1])
    assert reml_tau2(X, scattered, V, K) == pytest.approx(0.01, rel=0.6)


def test_lack_of_fit_equals_whitened_least_squares_and_is_chi2_under_the_law() -> None:
    V = correlated_V()
    chol = np.linalg.cholesky(V)
    rng = np.random.default_rng(2)
    y = 1.0 - 0.05 * X[:, 1] + 0.03 * rng.standard_normal(6)
    found = lack_of_fit(X, y, V)
    q, dof, p = found.q, found.df, found.p
    white = np.linalg.solve(chol, np.column_stack([X, y]))  # L^-1 [X y]: GLS is OLS of the whitened system
    beta, residual, *_ = np.linalg.lstsq(white[:, :2], white[:, 2], rcond=None)
    assert dof == 4
    assert q == pytest.approx(float(residual[0]), rel=1e-9)
    assert p == pytest.approx(stats.chi2.sf(float(residual[0]), 4), rel=1e-9)
    # with documents the only noise, Q is chi^2 on 4 degrees of freedom: its p-values are uniform
    ps = [lack_of_fit(X, 1.0 - 0.05 * X[:, 1] + chol @ rng.standard_normal(6), V).p for _ in range(2000)]
    assert stats.kstest(ps, "uniform").pvalue > 1e-3
    assert np.mean(np.array(ps) < 0.05) == pytest.approx(0.05, abs=0.015)


def test_the_pivot_solves_q_in_closed_form_under_exchangeable_noise() -> None:
    """With V = s I + c 11^T the residuals see iid noise of variance s + tau^2: Q(t) = RSS / (s + t), so the pivot
    is R = RSS / W - s (0 where that is negative), whatever W."""
    s, K = 0.0004, size_matrix(range(6))
    V = s * np.eye(6) + 0.003 * np.ones((6, 6))
    y = 1.0 - 0.05 * X[:, 1] + np.array([0.03, -0.02, 0.01, 0.04, -0.05, 0.0])
    residual = y - X @ (ols_map(X) @ y)
    rss = float(residual @ residual)
    pivot = TauPivot.of(residual_basis(X), y, V, K)
    w = np.random.default_rng(7).chisquare(4, 500)
    np.testing.assert_allclose(pivot.solve(w), np.maximum(rss / w - s, 0.0), rtol=1e-9, atol=1e-15)
    assert pivot.q == pytest.approx(rss / s, rel=1e-9) == pytest.approx(lack_of_fit(X, y, V).q, rel=1e-9)


def test_without_documents_the_pivot_interval_is_the_ols_residual_t() -> None:
    """Documents negligible (V -> 0): R = RSS / W exactly, so the mixture of N(0, b R) is Student's t on M - p with
    the OLS residual variance: the textbook interval, and an equivalent df of 4 (to the grid's quadrature)."""
    y = 1.0 - 0.05 * X[:, 1] + np.array([0.03, -0.02, 0.01, 0.04, -0.05, 0.0])
    residual = y - X @ (ols_map(X) @ y)
    h = ols_map(X)[1]
    b, scale = float(h @ h), float(residual @ residual) / 4
    for V in (np.zeros((6, 6)), 1e-14 * np.eye(6)):
        pivot = TauPivot.of(residual_basis(X), y, V, size_matrix(range(6)))
        half = half_width(variances(float(h @ V @ h), [(b, pivot)]), 0.95)
        assert half == pytest.approx(float(stats.t.ppf(0.975, 4)) * np.sqrt(b * scale), rel=1e-4)
        assert equivalent_df(half, b * scale, 0.95) == pytest.approx(4.0, rel=1e-3)


def test_runs_of_one_size_share_one_deviation() -> None:
    K = size_matrix(["a", "a", "b", "c", "c", "c"])
    assert K.tolist()[0] == [1, 1, 0, 0, 0, 0] and K.tolist()[3] == [0, 0, 0, 1, 1, 1]
    V = correlated_V()
    rng = np.random.default_rng(3)
    honest, new = with_size_level(np.zeros(6), np.zeros((4000, 6)), K, fit_size_level(
        X, 1.0 - 0.05 * X[:, 1] + 0.05 * rng.standard_normal(6), V, K, SLOPE), rng)  # fmt: skip
    assert np.allclose(honest[:, 0], honest[:, 1]) and np.allclose(honest[:, 3], honest[:, 5])
    assert not np.allclose(honest[:, 1], honest[:, 2])
    assert new.shape == (4000,) and abs(np.corrcoef(new, honest[:, 0])[0, 1]) < 0.1


def test_one_document_leaves_the_sizes_scatter_as_the_only_noise() -> None:
    """V = 0 (one document: every replicate is the point) is singular at tau^2 = 0. REML then gives the OLS
    residual variance and the df are M - p, the textbook OLS t interval; before, the singular V raised and the
    law lost its size level."""
    y = 1.0 - 0.05 * X[:, 1] + np.array([0.01, -0.02, 0.0, 0.015, -0.005, 0.004])
    level = fit_size_level(X, y, replicate_covariance(y, np.tile(y, (50, 1))), size_matrix(range(6)), SLOPE)
    residual = y - X @ (ols_map(X) @ y)
    assert level is not None
    assert level.tau2 == pytest.approx(float(residual @ residual) / 4, rel=1e-6)
    assert level.df == pytest.approx(4.0, rel=1e-3)  # the OLS residual t (the pivot's grid quadrature: 1e-4)


def test_deviations_below_rounding_are_zero_and_document_effects_are_kept() -> None:
    """`without_rounding`: the last bits of a replicate (another CPU's sums) vanish; a deviation of 1e-7, the
    smallest a document makes, and a non-finite replicate stay as they are. The bound is relative to |log y|
    where that exceeds 1 (a log's own rounding grows with it): 1e-9 off 30 is rounding."""
    point = np.array([-2.0, 0.5, 30.0])
    eps = np.finfo(np.float64).eps
    reps = np.array([
        point * (1 + 4096 * eps),
        point + np.array([1e-7, -1e-7, 30e-7]),
        [np.nan, np.inf, 30.0 + 1e-9],
    ])  # fmt: skip
    cleaned = without_rounding(point, reps)
    assert (cleaned[0] == point).all()
    assert (cleaned[1] == reps[1]).all() and (cleaned[1] != point).all()
    assert np.isnan(cleaned[2, 0]) and cleaned[2, 1] == np.inf and cleaned[2, 2] == 30.0


def test_no_size_level_without_residual_degrees_of_freedom() -> None:
    V = correlated_V()[:2, :2]
    assert fit_size_level(X[:2], np.array([1.0, 0.9]), V, size_matrix(range(2)), SLOPE) is None


def test_the_replicates_percentile_interval_is_the_pivot_interval() -> None:
    """Refitting the OLS exponent on the replicates with the size level gives (to Monte Carlo error) the analytic
    interval: the Normal of variance c^T H (V + R K) H^T c mixed over tau^2's pivot R."""
    V, K = correlated_V(), size_matrix(range(6))
    rng = np.random.default_rng(4)
    y = 1.0 - 0.05 * X[:, 1] + 0.03 * rng.standard_normal(6) + np.linalg.cholesky(V) @ rng.standard_normal(6)
    reps = y + rng.standard_normal((40_000, 6)) @ np.linalg.cholesky(V).T
    V_hat = replicate_covariance(y, reps)
    level = fit_size_level(X, y, V_hat, K, SLOPE)
    assert level is not None and level.tau2 > 0 and 2 < level.df < 50
    honest, _ = with_size_level(y, reps, K, level, rng)
    low, high = np.quantile(ols(X[:, 1], honest)["slope"], [0.025, 0.975])
    H = ols_map(X)
    a, b = float(H[1] @ V_hat @ H[1]), float(H[1] @ K @ H[1])
    t_low, t_high = mixture_interval(float((H @ y)[1]), a, [(b, level.pivot)], 0.95)
    assert low == pytest.approx(t_low, abs=0.03 * (t_high - t_low))
    assert high == pytest.approx(t_high, abs=0.03 * (t_high - t_low))


def test_the_design_of_a_nonlinear_form_is_its_jacobian() -> None:
    points = Points.of(SIZES)
    power = POWER_LAW.fit(points, 2.0 * SIZES**-0.1)
    design, names = log_design(POWER_LAW, power, points)
    assert names == ["alpha", "C"]
    np.testing.assert_allclose(design[:, 0], -np.log(SIZES), rtol=1e-6)  # d log y / d alpha
    np.testing.assert_allclose(design[:, 1], 1 / power.C, rtol=1e-6)  # d log y / d C
    offset = OFFSET_POWER_LAW.fit(points, 0.3 + 2.0 * SIZES**-0.1)
    design, names = log_design(OFFSET_POWER_LAW, offset, points)
    predicted = offset.E + offset.C * SIZES**-offset.alpha
    np.testing.assert_allclose(design[:, names.index("E")], 1 / predicted, rtol=1e-5)


def _pivot_solved_by_hand(
    L: np.ndarray, y: np.ndarray, V: np.ndarray, K: np.ndarray
) -> tuple[Callable[[float], float], Callable[[float], float]]:
    """Q(t) = z^T (A + t B)^-1 z straight from its definition, and R(w) solving Q(R) = w by Brent's method (0 where
    w >= Q(0)): the generalized pivot without TauPivot's joint diagonalisation, table or Newton steps."""
    A, B, z = L.T @ V @ L, L.T @ K @ L, L.T @ y

    def q(t: float) -> float:
        return float(z @ np.linalg.solve(A + t * B, z))

    def solve(w: float) -> float:
        if w >= q(0.0):
            return 0.0
        high = 1.0
        while q(high) > w:
            high *= 10.0
        return float(optimize.brentq(lambda t: q(t) - w, 0.0, high, xtol=1e-15, rtol=1e-12))

    return q, solve


def _mixture_coverage(half: float, a: float, b: float, q0: float, solve: Callable[[float], float], dof: int) -> float:
    """P(|X| <= half) for X ~ N(0, a + b R(W)), W ~ chi^2_dof, by adaptive quadrature over W (R = 0 from Q(0) on)."""

    def covered(w: float) -> float:
        return float((1.0 - 2.0 * special.ndtr(-half / np.sqrt(a + b * solve(w)))) * stats.chi2.pdf(w, dof))

    inside = integrate.quad(covered, 0.0, q0, limit=200)[0]
    return inside + (1.0 - 2.0 * special.ndtr(-half / np.sqrt(a))) * float(stats.chi2.sf(q0, dof))


def test_the_pivot_recovers_a_planted_tau2_from_its_own_chi2_draw() -> None:
    """Points drawn with a planted tau^2: W = z^T (L^T (V + tau^2 K) L)^-1 z is the chi^2_4 draw these data made,
    and the pivot at that W is tau^2 itself, to rounding. A pivot on V's diagonal alone (the documents'
    correlation between sizes dropped: 0 where tau^2 is small) or on a basis that includes a fitted direction
    returns another number."""
    V, K, L = correlated_V(), size_matrix(range(6)), residual_basis(X)
    rng = np.random.default_rng(11)
    for tau2 in (1e-5, 2e-4, 3e-3):
        documents = np.linalg.cholesky(V) @ rng.standard_normal(6)
        y = 1.0 - 0.05 * X[:, 1] + np.sqrt(tau2) * rng.standard_normal(6) + documents
        z = L.T @ y
        w = float(z @ np.linalg.solve(L.T @ (V + tau2 * K) @ L, z))
        assert TauPivot.of(L, y, V, K).solve(np.array([w]))[0] == pytest.approx(tau2, rel=1e-8)


def test_the_pivot_interval_is_the_mixtures_quantile_integrated_by_hand() -> None:
    """The exponent's 95% interval (`mixture_interval`, a grid of 2000 chi^2 quantiles) against adaptive quadrature
    of P(|N(0, a + b R(W))| <= h) over W ~ chi^2_4, R solved from Q's definition: 95% to 2e-4. The Normal at the
    REML estimate (75% wide) or documents alone (36%) would cover far less."""
    V, K, L = correlated_V(), size_matrix(range(6)), residual_basis(X)
    y = 1.0 - 0.05 * X[:, 1] + np.array([0.03, -0.02, 0.01, 0.04, -0.05, 0.0])
    H = ols_map(X)
    a, b = float(H[1] @ V @ H[1]), float(H[1] @ K @ H[1])
    low, high = mixture_interval(float((H @ y)[1]), a, [(b, TauPivot.of(L, y, V, K))], 0.95)
    q, solve = _pivot_solved_by_hand(L, y, V, K)
    assert _mixture_coverage((high - low) / 2, a, b, q(0.0), solve, 4) == pytest.approx(0.95, abs=2e-4)


def test_the_held_out_interval_without_documents_is_the_ols_prediction_interval() -> None:
    """extrapolation.csv's code (`HeldOut.check`) with one document (no document noise): the law of the five smaller
    sizes predicts the largest within the textbook OLS prediction interval, +/- t_3 s sqrt(1 + x0^T (X^T X)^-1 x0),
    to the grid's quadrature. Leaving out the new size's own deviation (the 1) gives the mean's interval; counting
    the held-out point in the df gives t_4."""
    from rankscale.laws import FORMS
    from rankscale.metrics import METRICS
    from rankscale.tables.extrapolation import HeldOut
    from rankscale.tables.noise import size_level_of

    form, n = FORMS["power_law"], 5
    log_y = 1.0 - 0.05 * X[:, 1] + np.array([0.03, -0.02, 0.01, 0.04, -0.05, 0.02])
    log_reps = np.tile(log_y, (50, 1))  # every replicate is the point
    points, groups = Points.of(SIZES), np.array([str(i) for i in range(6)])
    law = form.fit(points.take(slice(0, n)), np.exp(log_y[:n]))
    level = size_level_of(form, law, points.take(slice(0, n)), log_y[:n], log_reps[:, :n], groups[:n])
    design, _ = log_design(form, law, points)
    held = HeldOut(form, law, points, log_y, log_reps, design, n, level, size_matrix(groups[:n]), "documents+sizes")
    judged = held.check(n, 0.95, METRICS["ce"])
    fitted = X[:n]
    beta, rss, *_ = np.linalg.lstsq(fitted, log_y[:n], rcond=None)
    x0 = X[n]
    half = float(stats.t.ppf(0.975, 3)) * np.sqrt(float(rss[0]) / 3 * (1 + x0 @ np.linalg.solve(fitted.T @ fitted, x0)))
    ends = np.log([judged["predicted_ci_low"], judged["predicted_ci_high"]])
    np.testing.assert_allclose(ends, [x0 @ beta - half, x0 @ beta + half], atol=1e-4 * half)
    assert judged["df"] == pytest.approx(3.0, rel=1e-3)


def test_a_family_difference_mixes_the_paired_documents_and_each_familys_pivot() -> None:
    """family_contrasts.csv's interval (`families._contrast`) for two families on the same documents (correlated 0.8
    point by point), the first scattering around its law, the second exactly on its own: the document variance is
    that of the paired difference (a fifth of the two variances' sum here), and the interval covers 95% of
    N(0, paired + b R) over the first family's pivot, integrated by hand; swapped, the interval is mirrored (the
    second family's pivot is read too). Summing unpaired variances, or dropping a family's size term, fails."""
    from rankscale.tables.families import FamilyExponent, _contrast

    V, K, L = correlated_V(), size_matrix(range(6)), residual_basis(X)
    h = -ols_map(X)[1]  # alpha = -slope
    b = float(h @ K @ h)
    rng = np.random.default_rng(5)
    reps = rng.standard_normal((4000, 12)) @ np.linalg.cholesky(np.block([[V, 0.8 * V], [0.8 * V, V]])).T
    y_a = 1.0 - 0.05 * X[:, 1] + np.array([0.03, -0.02, 0.01, 0.04, -0.05, 0.0])
    y_b = 0.8 - 0.04 * X[:, 1]
    first = FamilyExponent(float(h @ y_a), reps[:, :6] @ h, b, 0.001, TauPivot.of(L, y_a, V, K), "documents+sizes")
    second = FamilyExponent(float(h @ y_b), reps[:, 6:] @ h, b, 0.0, TauPivot.of(L, y_b, V, K), "documents+sizes")
    row, swapped = _contrast(first, second, 0.95), _contrast(second, first, 0.95)
    paired = float(np.var(reps[:, :6] @ h - reps[:, 6:] @ h, ddof=1))
    assert row["sd_documents"] ** 2 == pytest.approx(paired, rel=1e-12)
    assert row["difference"] == pytest.approx(0.01 + h @ (y_a - 1.0 + 0.05 * X[:, 1]), rel=1e-9)
    q, solve = _pivot_solved_by_hand(L, y_a, V, K)
    half = (row["ci_high"] - row["ci_low"]) / 2
    assert _mixture_coverage(half, paired, b, q(0.0), solve, 4) == pytest.approx(0.95, abs=5e-4)
    assert (swapped["ci_low"], swapped["ci_high"]) == pytest.approx((-row["ci_high"], -row["ci_low"]), rel=1e-12)


def test_each_law_draws_its_own_size_level() -> None:
    """Two laws of one family and dataset (CE and -log RBP_1 with the same scatter) no longer share one draw of
    the sizes' normals: their deviations correlate about 0 over 4000 replicates, while the same law's keys give
    the same draws; `law_keys` spells k the same whether a table reads it as 1 or 1.0."""
    from rankscale.tables.noise import LawNoise, Noise, law_keys

    rng = np.random.default_rng(2)
    S = np.array([2.5e4, 7.8e4, 1.7e5, 4.7e5, 1.2e6, 3.2e6])
    points = Points.of(S)
    y = 5.0 * S**-0.02 * np.exp(rng.normal(0.0, 0.02, 6))
    reps = y[None, :] * np.exp(rng.normal(0.0, 0.003, (4000, 6)))
    law = POWER_LAW.fit(points, y)
    noise = Noise([str(s) for s in S], None, 0)
    assert law_keys("f", "d", "neg_log_rbp", 1.0) == law_keys("f", "d", "neg_log_rbp", 1) == ("f", "d", "neg_log_rbp", "1")
    first = LawNoise.of(POWER_LAW, law, points, y, reps, noise, law_keys("f", "d", "ce", float("nan")))
    second = LawNoise.of(POWER_LAW, law, points, y, reps, noise, law_keys("f", "d", "neg_log_rbp", 1))
    again = LawNoise.of(POWER_LAW, law, points, y, reps, noise, law_keys("f", "d", "ce", None))
    assert first.draws is not None and second.draws is not None and again.draws is not None
    np.testing.assert_array_equal(first.draws.deviations, again.draws.deviations)
    a, b = first.draws.deviations[:, 0], second.draws.deviations[:, 0]
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.06


def test_tau_zero_bound_counts_coverage_and_its_frontier_lies_between_documents_and_the_pivot() -> None:
    """benchmarks/tau_zero_bound.py on the synthetic V: with no floor the program picks documents alone, which cover
    95% of Normal errors at tau = 0 (a wrong variance a or error c would not); with only that width no rule keeps
    95% at every tau (infeasible: NaN); with the ladder of widths the optimum is above 95% and below the pivot's
    99.2%, and the rule holds about 95% on fresh draws at every tau."""
    bound = benchmark_module("tau_zero_bound")
    V = correlated_V()
    design = next(d for d in bound.designs(V, np.log(SIZES)) if d.name == "extrapolation")
    taus = np.concatenate([[0.0], np.sqrt(design.a / design.b) * np.geomspace(0.1, 10.0, 6)])
    free = bound.bound(design, V, taus, 40_000, 4, 12, 0.0, 0)
    assert free.tau0 == pytest.approx(0.95, abs=0.004) and free.checked_tau0 == pytest.approx(0.95, abs=0.004)
    assert np.isnan(bound.bound(design, V, taus, 40_000, 4, 1, 0.95, 0).tau0)
    held = bound.bound(design, V, taus, 40_000, 4, 12, 0.95, 0)
    assert 0.96 < held.tau0 < 0.992 and held.checked_min > 0.94
    score = bound.score_rule(design, V, taus, 40_000, 0.0, 0.0, 1)  # c = 0: documents alone
    assert score[0] == pytest.approx(0.95, abs=0.004) and score[-1] < 0.5


def test_points_exactly_on_the_law_without_document_noise_have_tau2_zero() -> None:
    """The law of a ratio that is 1 at every size and in every replicate (emergence_laws' contrast at N = 1, where
    the run rate is RBP_k itself): every point is log 1 = 0 and V = 0. tau^2 is exactly 0; the search used to run
    on a floor of 1e-300 and return a subnormal 5.7e-311, whose REML information was NaN (here) or inf (on other
    CPUs: `RuntimeWarning: invalid value encountered in matmul`, once per such row of a default run)."""
    y = np.zeros(6)
    V = replicate_covariance(y, np.zeros((50, 6)))
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        level = fit_size_level(X, y, V, size_matrix(range(6)), SLOPE)
    assert level is not None and level.tau2 == 0.0 and level.information == math.inf
    assert (level.q, level.q_df, level.q_p, level.df) == (0.0, 4, 1.0, math.inf)


def test_a_law_contrasted_with_itself_is_zero_without_a_warning() -> None:
    """How emergence_laws reaches it: the exponent contrast of the N = 1 run law against the RBP_k law, the same
    numbers twice. The difference, its interval and the ratio law's tau^2 are 0, and nothing warns."""
    rng = np.random.default_rng(5)
    points = Points.of(SIZES)
    y = 2.0 * SIZES**-0.05 * np.exp(0.01 * rng.standard_normal(6))
    reps = y[None, :] * np.exp(0.02 * rng.standard_normal((200, 6)))
    law = POWER_LAW.fit(points, y)
    noise = Noise([f"m{i}" for i in range(6)], None, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        contrast = lawkit.exponent_contrast(POWER_LAW, points, (law, law), (y, y), (reps, reps), noise, ("f", "d"), 10)
    row = contrast.row(0.95)
    assert row["difference"] == 0.0 and row["ci_low"] == 0.0 and row["ci_high"] == 0.0 and row["tau2"] == 0.0
