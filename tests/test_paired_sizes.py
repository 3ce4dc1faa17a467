"""Two laws' size deviations correlated as REML estimates (rankscale.laws.paired), so the exponent contrast of a
form that is not log-linear carries tau_a^2 + tau_b^2 - 2 rho tau_a tau_b, not the (tau_a - tau_b)^2 that shared
draws gave. Checked against the textbook restricted likelihood of the two laws stacked (maximised by brute force),
the draws' own correlation, and the contrast's variance against the sum its parts should give. How well rho is
recovered, and the contrast's coverage, are Monte Carlo studies: benchmarks/contrast_coverage.py (RESULTS.md)."""

from __future__ import annotations

import numpy as np
import pytest

from rankscale.bootstrap import interval
from rankscale.laws.form import Points
from rankscale.laws.paired import size_correlation
from rankscale.laws.power import OFFSET_POWER_LAW, OffsetPowerLaw
from rankscale.laws.random_effects import size_matrix
from rankscale.tables import lawkit
from rankscale.tables.noise import LawNoise, Noise, size_correlation_of
from tests.conftest import benchmark_module


def _textbook_restricted_loglik(rho: float, designs: tuple[np.ndarray, np.ndarray], points: np.ndarray,
                                V: np.ndarray, K: np.ndarray, tau2: tuple[float, float]) -> float:  # fmt: skip
    """-(log|S| + log|X^T S^-1 X| + y^T P y) / 2 of both laws stacked (Harville 1977), X block-diagonal and
    S = V + [[ta^2 K, rho ta tb K], [rho ta tb K, tb^2 K]]: REML in the data space, not the residual space."""
    (Xa, Xb), m = designs, len(designs[0])
    X = np.zeros((2 * m, Xa.shape[1] + Xb.shape[1]))
    X[:m, : Xa.shape[1]], X[m:, Xa.shape[1] :] = Xa, Xb
    ta, tb = np.sqrt(tau2)
    S = V + np.block([[ta * ta * K, rho * ta * tb * K], [rho * ta * tb * K, tb * tb * K]])
    inverse = np.linalg.inv(S)
    information = X.T @ inverse @ X
    P = inverse - inverse @ X @ np.linalg.solve(information, X.T @ inverse)
    return -0.5 * (np.linalg.slogdet(S)[1] + np.linalg.slogdet(information)[1] + float(points @ P @ points))


@pytest.mark.parametrize(("rho", "seed"), [(-0.5, 2), (0.0, 1), (0.6, 1), (0.95, 1)])
def test_reml_rho_is_the_brute_force_maximum_of_the_textbook_likelihood(rho: float, seed: int) -> None:
    """Two laws of unlike designs over six sizes of two runs each (K groups the runs), tau 0.05 and 0.03, planted
    correlation rho: `size_correlation` is the argmax over a grid of 2001 correlations of the stacked model's
    restricted likelihood (-0.33, 0.03, 0.43 and, at 0.95, the bound 1). A cross term of the wrong sign, the taus swapped,
    or the identity in place of K between the laws moves it off."""
    x = np.repeat(np.linspace(10.0, 15.0, 6), 2)
    m, runs = len(x), np.repeat(np.arange(6), 2)
    designs = (np.stack([np.ones(m), x], axis=1), np.stack([np.ones(m), x, x * x], axis=1))
    K, tau2 = size_matrix(runs), (0.05**2, 0.03**2)
    rng = np.random.default_rng(seed)
    V1 = 0.02**2 * np.eye(m)
    V = np.block([[V1, 0.5 * V1], [0.5 * V1, V1]])
    e = np.linalg.cholesky(V) @ rng.standard_normal(2 * m)
    z = rng.standard_normal((2, 6))[:, runs]  # one deviation per size, shared by its runs
    ya = designs[0] @ np.array([1.0, -0.05]) + 0.05 * z[0] + e[:m]
    yb = designs[1] @ np.array([0.5, 0.01, -0.001]) + 0.03 * (rho * z[0] + np.sqrt(1 - rho * rho) * z[1]) + e[m:]
    found = size_correlation(designs, (ya, yb), V, K, tau2)
    grid = np.linspace(-1.0, 1.0, 2001)
    loglik = np.array([_textbook_restricted_loglik(r, designs, np.concatenate([ya, yb]), V, K, tau2) for r in grid])
    assert found == pytest.approx(float(grid[int(np.argmax(loglik))]), abs=1e-3)
    assert _textbook_restricted_loglik(found, designs, np.concatenate([ya, yb]), V, K, tau2) >= loglik.max() - 1e-6


def test_no_scatter_no_correlation():
    m = 12
    designs = (np.ones((m, 1)), np.ones((m, 1)))
    pair = benchmark_module("contrast_coverage").planted_pair
    ya, yb, V = pair(0.9, np.random.default_rng(1), designs, tau=0.05, sd=0.02)
    assert size_correlation(designs, (ya, yb), V, np.eye(m), (0.0, 0.05**2)) == 0.0


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


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_the_offset_contrast_carries_both_laws_size_variances_and_their_correlation(seed: int) -> None:
    """Offset power laws with independent size deviations (tau 0.03; REML's rho -0.33, 0.98 and 0.01 on these
    seeds): the contrast's replicate variance is the documents' (the paired refits) plus
    E[R_a] h_a^T K h_a + E[R_b] h_b^T K h_b - 2 rho E[sqrt(R_a R_b)] h_a^T K h_b over the two laws' pivots (their
    grids; h each law's linearised exponent), to the Monte Carlo error of 100 refits of a heavy-tailed mixture
    (0.81-0.92 of it on these seeds). Shared draws (rho = 1 whatever the data) give 0.08-0.12 of it where rho is
    near 0, the cross term's sign flipped 0.5 or 9 times it, documents alone 0.01-0.03."""
    from rankscale.laws.random_effects import log_design, ols_map

    points, y, reps, laws, _ = _offset_pair(np.random.default_rng(seed), 0.0, 0.03)
    noise, keys = Noise([f"m{i}" for i in range(len(points))], None, 3), ("f", "d")
    contrast = lawkit.exponent_contrast(OFFSET_POWER_LAW, points, laws, y, reps, noise, keys, 100)
    each = [LawNoise.of(OFFSET_POWER_LAW, law, points, v, r, noise, keys) for law, v, r in zip(laws, y, reps, strict=True)]
    rho = size_correlation_of(OFFSET_POWER_LAW, laws, points, y, reps, (each[0], each[1]))  # REML, independently
    K = size_matrix(noise.groups)
    h, grids, documents = [], [], []
    for law, law_noise in zip(laws, each, strict=True):
        design, names = log_design(OFFSET_POWER_LAW, law, points)
        h.append(ols_map(design)[names.index("alpha")])
        assert law_noise.size_level is not None and law_noise.size_level.pivot is not None
        grids.append(law_noise.size_level.pivot.grid())
        documents.append(law_noise.refit_both(OFFSET_POWER_LAW, law, points, 100)[1]["alpha"])
    expected = (
        float(np.nanvar(documents[0] - documents[1]))
        + grids[0].mean() * float(h[0] @ K @ h[0])
        + grids[1].mean() * float(h[1] @ K @ h[1])
        - 2.0 * rho * float(np.mean(np.sqrt(grids[0] * grids[1]))) * float(h[0] @ K @ h[1])
    )
    assert 0.7 <= float(np.nanvar(contrast.replicates)) / expected <= 1.15


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
