"""The joint law in (S, D): least squares in log space, every replicate refitted at once, and its scatter in two
variance components (a run's, shared by its checkpoints, and each checkpoint's own)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import least_squares

from rankscale.laws import FORMS, JointLaw, Points, fit_joint_law
from rankscale.laws.components import fit_components, multivariate_satterthwaite, reml_components
from rankscale.laws.joint import refit_rows
from rankscale.laws.random_effects import (
    SizeDraws,
    fit_size_level,
    ols_map,
    reml_information,
    reml_loglik,
    size_matrix,
)

SIZES = np.array([25_472, 100_096, 335_712, 793_344, 1_779_840, 3_159_552], dtype=np.float64)
TOKENS = np.array([30_720, 100_352, 300_032], dtype=np.float64)
S, D = np.repeat(SIZES, 3), np.tile(TOKENS, 6)
POINTS = Points.joint(S, D)
RUNS = size_matrix([str(s) for s in S])


def one_by_one(law: JointLaw, row: np.ndarray) -> tuple[np.ndarray, float]:
    """Reference: scipy's bounded trust-region least squares on one row, from the same start, in (E, A, alpha, B,
    beta) itself: the parameters and the squared error."""

    def residual(theta: np.ndarray) -> np.ndarray:
        return np.log(row) - np.log(JointLaw(*theta, n=0).at(S, D))

    fit = least_squares(residual, [law.E, law.A, law.alpha, law.B, law.beta], method="trf",
                        bounds=([0, 1e-12, 0, 1e-12, 0], [np.inf, np.inf, 5, np.inf, 5]),
                        xtol=1e-15, ftol=1e-15, gtol=1e-15, x_scale="jac")  # fmt: skip
    return fit.x, 2.0 * fit.cost


@pytest.mark.parametrize("floor", [0.5, 0.0])
def test_every_replicate_refitted_at_once_is_its_own_least_squares_fit(floor: float) -> None:
    """The vectorised refits reach the squared error a one-by-one bounded optimiser reaches on each replicate (a
    solver stopping early, or holding a bound it should leave, has a larger one), with a floor inside its domain
    and a floor at its bound 0."""
    rng = np.random.default_rng(5)
    truth = JointLaw(E=floor, A=3.0, alpha=0.1, B=8.0, beta=0.4, n=18)
    y = truth.at(S, D) * np.exp(0.01 * rng.standard_normal(len(S)))
    law = fit_joint_law(S, D, y)
    rows = y[None, :] * np.exp(0.02 * rng.standard_normal((40, len(S))))
    ours = refit_rows(POINTS, rows, law)
    for b, row in enumerate(rows):
        reference, reference_ssr = one_by_one(law, row)
        mine = JointLaw(*(ours[c][b] for c in ("E", "A", "alpha", "B", "beta")), n=0)
        ssr = float(np.sum((np.log(row) - np.log(mine.at(S, D))) ** 2))
        assert ssr <= reference_ssr * (1 + 1e-9) + 1e-15, (b, ssr, reference_ssr)
        if reference[0] > 1e-3 and mine.E > 1e-3:  # both inside the domain: one minimum, the same parameters
            np.testing.assert_allclose([mine.alpha, mine.beta], reference[[2, 4]], rtol=1e-4)


def test_the_fit_of_noise_free_points_is_the_planted_law() -> None:
    truth = JointLaw(E=1.0, A=6.0, alpha=0.15, B=60.0, beta=0.4, n=18)
    law = fit_joint_law(S, D, truth.at(S, D))
    assert [law.E, law.A, law.alpha, law.B, law.beta] == pytest.approx([1.0, 6.0, 0.15, 60.0, 0.4], rel=1e-6)
    assert FORMS["joint"].batch_refits


def design_and_covariance() -> tuple[np.ndarray, np.ndarray]:
    X = FORMS["joint"].log_jacobian(JointLaw(E=1.0, A=6.0, alpha=0.15, B=60.0, beta=0.4, n=18), POINTS)
    i = np.arange(len(S))
    V = 1e-4 * np.where(i[:, None] // 3 == i[None, :] // 3, 0.9, 0.8)
    np.fill_diagonal(V, 1e-4)
    return X, V


def test_two_components_are_the_maximum_of_the_restricted_likelihood() -> None:
    """REML over (tau_run^2, tau_point^2) reaches at least the best value of a fine grid of both, computed by the
    one-component likelihood at V + tau_run^2 K_run (an independent formula)."""
    X, V = design_and_covariance()
    rng = np.random.default_rng(11)
    y = np.repeat(0.02 * rng.standard_normal(6), 3) + 0.015 * rng.standard_normal(len(S))
    y = y + np.linalg.cholesky(V) @ rng.standard_normal(len(S))
    taus = reml_components(X, y, V, (RUNS, np.eye(len(S))))
    ours = reml_loglik(taus[1], X, y, V + taus[0] * RUNS, np.eye(len(S)))
    grid = np.concatenate([[0.0], np.geomspace(1e-7, 1e-1, 120)])
    best = max(reml_loglik(t2, X, y, V + t1 * RUNS, np.eye(len(S))) for t1 in grid[::4] for t2 in grid[::4])
    assert ours >= best - 1e-9
    assert taus.min() >= 0.0


def test_one_component_gives_the_one_component_answer() -> None:
    """With K = I alone the components' REML, information and degrees of freedom are the single-component code's."""
    X, V = design_and_covariance()
    rng = np.random.default_rng(3)
    y = 0.02 * rng.standard_normal(len(S)) + np.linalg.cholesky(V) @ rng.standard_normal(len(S))
    contrast = np.eye(X.shape[1])[2]
    single = fit_size_level(X, y, V, np.eye(len(S)), contrast)
    several = fit_components(X, y, V, (np.eye(len(S)),), contrast)
    assert single is not None and several is not None
    assert several.tau2 == pytest.approx(single.tau2, rel=1e-6)
    info = reml_information(single.tau2, X, V, np.eye(len(S)))
    hc = ols_map(X).T @ contrast  # the one-component Satterthwaite df: 2 (a + b tau^2)^2 information / b^2
    a, b = float(hc @ V @ hc), float(hc @ hc)
    assert several.df == pytest.approx(2 * (a + b * single.tau2) ** 2 * info / b**2, rel=1e-5)
    assert multivariate_satterthwaite(2.0, np.array([1.0]), np.array([[2.0]])) == pytest.approx(2 * 4 * 2 / 1)


def test_component_draws_have_the_components_covariance() -> None:
    """Deviations drawn for two components have covariance tau_run^2 K_run + tau_point^2 I (sampling error of
    200k draws: 4 standard errors), and a new point's deviation the sum of the variances."""
    X, V = design_and_covariance()
    level = fit_components(X, np.zeros(len(S)), V, (RUNS, np.eye(len(S))), np.eye(5)[2])
    assert level is not None
    level = type(level)(**{**level.__dict__, "parts": (4e-4, 1e-4), "df": float("inf")})
    draws = SizeDraws.of(level, RUNS, 200_000, np.random.default_rng(0))
    target = 4e-4 * RUNS + 1e-4 * np.eye(len(S))
    cov = np.cov(draws.deviations, rowvar=False)
    se = np.sqrt((target**2 + np.outer(np.diag(target), np.diag(target))) / 200_000)
    assert np.all(np.abs(cov - target) <= 4 * se + 1e-12)
    assert np.var(draws.new) == pytest.approx(5e-4, rel=0.02)


def test_at_bound_names_every_end_and_a_domain_wide_interval_is_not_identified() -> None:
    """Refits of alpha with 3% at 0 and 40% at 5 (an interval [0, 5]): `at_bound` names both ends with their
    shares, and alpha is not identified; beta with 10% at 5 only: its upper end alone; E at its one finite bound
    (0) in 2% of refits: inside 2.5%, not named."""
    from rankscale.laws.joint import JOINT

    rng = np.random.default_rng(0)
    alpha = np.concatenate([np.zeros(30), np.full(400, 5.0), rng.uniform(0.1, 4.9, 570)])
    beta = np.concatenate([np.full(100, 5.0), rng.uniform(0.2, 0.4, 900)])
    E = np.concatenate([np.zeros(20), rng.uniform(0.5, 1.0, 980)])
    refits = {"alpha": alpha, "beta": beta, "E": E, "A": np.ones(1000), "B": np.ones(1000)}
    ends = JOINT.bounded_ends(refits, 0.95, 1.0)
    assert ends["alpha"] == "alpha's interval ends at its bounds 0 (3% of refits there) and 5 (40% of refits there)"
    assert ends["beta"] == "beta's interval ends at its bound 5 (10% of refits there)"
    assert set(ends) == {"alpha", "beta"}
    assert JOINT.spanning(refits, 0.95, 1.0) == {
        "alpha": "alpha's interval spans its whole domain [0, 5]: not identified"
    }
