"""Two laws' size deviations correlated as REML estimates (rankscale.laws.paired), so the exponent contrast of a
form that is not log-linear carries tau_a^2 + tau_b^2 - 2 rho tau_a tau_b, not the (tau_a - tau_b)^2 that shared
draws gave. Checked against planted correlations, the draws' own correlation, and the contrast's coverage by
simulation (benchmarks/contrast_coverage.py records the full run)."""

from __future__ import annotations

import numpy as np
import pytest

from rankscale.bootstrap import interval
from rankscale.laws.form import Points
from rankscale.laws.paired import size_correlation
from rankscale.laws.power import OFFSET_POWER_LAW, OffsetPowerLaw
from rankscale.laws.random_effects import size_matrix
from rankscale.tables import lawkit
from rankscale.tables.noise import LawNoise, Noise
from tests.conftest import benchmark_module

M = 80  # sizes: enough residual directions that REML's rho is close to the planted one


def _planted(rho: float, rng: np.random.Generator, designs: tuple[np.ndarray, np.ndarray], tau: float,
             sd: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """log y of two laws (zero coefficients) with documents N(0, sd^2) correlated 0.5 between the laws and size
    deviations of SD tau correlated rho; and the documents' joint covariance."""
    V1 = sd * sd * np.eye(M)
    V = np.block([[V1, 0.5 * V1], [0.5 * V1, V1]])
    e = np.linalg.cholesky(V) @ rng.standard_normal(2 * M)
    z = rng.standard_normal((2, M))
    u = tau * np.stack([z[0], rho * z[0] + np.sqrt(1 - rho * rho) * z[1]])
    return u[0] + e[:M] + designs[0] @ np.ones(designs[0].shape[1]), u[1] + e[M:], V


@pytest.mark.parametrize("rho", [-0.5, 0.0, 0.6, 0.95])
def test_reml_recovers_a_planted_correlation(rho):
    x = np.linspace(10.0, 15.0, M)
    designs = (np.stack([np.ones(M), x], axis=1), np.stack([np.ones(M), x, x * x], axis=1))  # unlike designs
    rng = np.random.default_rng(7)
    estimates = []
    for _ in range(40):
        ya, yb, V = _planted(rho, rng, designs, tau=0.05, sd=0.02)
        estimates.append(size_correlation(designs, (ya, yb), V, np.eye(M), (0.05**2, 0.05**2)))
    assert all(-1.0 <= r <= 1.0 for r in estimates)
    assert np.mean(estimates) == pytest.approx(rho, abs=0.06)  # SE of one estimate ~0.1 at M = 80: 40 average


def test_no_scatter_no_correlation():
    designs = (np.ones((M, 1)), np.ones((M, 1)))
    ya, yb, V = _planted(0.9, np.random.default_rng(1), designs, tau=0.05, sd=0.02)
    assert size_correlation(designs, (ya, yb), V, np.eye(M), (0.0, 0.05**2)) == 0.0


def _offset_pair(rng: np.random.Generator, rho: float, tau: float):
    sizes = benchmark_module("contrast_coverage").SIZES
    laws_true = benchmark_module("contrast_coverage").LAWS
    V = benchmark_module("contrast_coverage").synthetic_covariance()
    joint = np.block([[V, 0.7 * V], [0.7 * V, V]])
    root = np.linalg.cholesky(joint)
    n = len(sizes)
    z = rng.standard_normal((2, n))
    u = tau * np.stack([z[0], rho * z[0] + np.sqrt(1 - rho * rho) * z[1]])
    e = root @ rng.standard_normal(2 * n)
    truth = [np.log(E + C * sizes**-a) for E, C, a in laws_true]
    y = (np.exp(truth[0] + u[0] + e[:n]), np.exp(truth[1] + u[1] + e[n:]))
    noise_reps = rng.standard_normal((1000, 2 * n)) @ root.T
    reps = (y[0] * np.exp(noise_reps[:, :n]), y[1] * np.exp(noise_reps[:, n:]))
    points = Points.of(sizes)
    return points, y, reps, (OffsetPowerLaw.fit(points, y[0]), OffsetPowerLaw.fit(points, y[1])), laws_true


def test_draws_correlate_as_asked_and_rho_one_is_the_shared_draw():
    points, y, reps, laws, _ = _offset_pair(np.random.default_rng(3), 0.0, 0.03)
    noise = Noise([f"m{i}" for i in range(len(points))], None, 11)
    first, second = (LawNoise.of(OFFSET_POWER_LAW, law, points, v, r, noise, ("f", "d"))
                     for law, v, r in zip(laws, y, reps, strict=True))  # fmt: skip
    assert first.draws is not None and second.draws is not None
    assert second.drawn(y[1], ("f", "d"), 1.0).draws.deviations == pytest.approx(second.draws.deviations, abs=0)

    def correlation(rho: float) -> float:
        a, b = first.draws.deviations, second.drawn(y[1], ("f", "d"), rho).draws.deviations
        scale_a, scale_b = np.sqrt(np.mean(a * a, axis=1)), np.sqrt(np.mean(b * b, axis=1))
        a, b = a / scale_a[:, None], b / scale_b[:, None]  # each replicate's own tau: the normals' correlation
        keep = (scale_a > 0) & (scale_b > 0)
        return float(np.corrcoef(a[keep].ravel(), b[keep].ravel())[0, 1])

    assert correlation(1.0) == pytest.approx(1.0, abs=1e-12)
    assert correlation(0.0) == pytest.approx(0.0, abs=0.05)
    assert correlation(0.5) == pytest.approx(0.5, abs=0.05)
    assert size_matrix(noise.groups) == pytest.approx(np.eye(len(points)))


@pytest.mark.slow
def test_offset_contrast_covers_with_independent_size_deviations():
    """Independent size deviations (rho = 0) at tau 0.03: the estimated correlation covers the contrast about as
    well as each law alone (93% at 60 simulations), where shared draws covered ~62% (the benchmark's record)."""
    rng = np.random.default_rng(2026)
    hits, sims = 0, 80
    for s in range(sims):
        points, y, reps, laws, truth = _offset_pair(rng, 0.0, 0.03)
        noise = Noise([f"m{i}" for i in range(len(points))], None, s)
        contrast = lawkit.exponent_contrast(OFFSET_POWER_LAW, points, laws, y, reps, noise, ("f", str(s)), 100)
        low, high = interval(contrast.replicates, 0.95, contrast.point)
        hits += int(low <= truth[0][2] - truth[1][2] <= high)
    assert hits / sims >= 0.85


def test_a_contrasts_p_value_agrees_with_its_interval_exactly() -> None:
    """3000 synthetic contrasts (replicates of varied centre, spread, skew and count, some with ties at 0 and an
    estimate on the other side of 0): the 95% (and 90%, 99%) interval excludes 0 exactly when p < 1 - level, and
    p is twice the interpolated share of replicates beyond the null (brute force: the level whose interval just
    reaches 0)."""
    from rankscale.laws.agreement import interval_p_value

    rng = np.random.default_rng(49)
    for i in range(3000):
        n = int(rng.integers(20, 1200))
        values = rng.normal(rng.normal(0.0, 2.0), rng.uniform(0.2, 2.0), n) ** int(rng.choice([1, 1, 3]))
        if i % 10 == 0:
            values[: n // 20] = 0.0  # ties at the null
        estimate = float(np.median(values) if i % 7 else -np.median(values))
        p = interval_p_value(values, estimate)
        assert 0.0 <= p <= 1.0
        for level in (0.90, 0.95, 0.99):
            low, high = interval(values, level, estimate)
            assert (low > 0 or high < 0) == (p < 1 - level), (i, level, p, low, high)
    values = np.array([-1.0, 1.0, 2.0, 3.0, 4.0])  # Q(q) = 0 at q = 0.125: p = 0.25
    assert interval_p_value(values, 2.0) == pytest.approx(0.25)
    assert interval_p_value(values, 0.0) == 1.0 and interval_p_value(values + 5, 7.0) == 0.0
    assert interval_p_value(-values, -2.0) == pytest.approx(0.25)
    assert interval_p_value(values + 1, 3.0, 1.0) == pytest.approx(0.25)  # a ratio against 1
