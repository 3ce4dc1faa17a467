"""Several variance components in a law's scatter: a training run's deviation shared by its checkpoints, and each
checkpoint's own.

The joint law in (S, D) is fitted to every checkpoint of every run. The points of one run are not independent sizes:
they share the run's deviation from the law (its initialisation, its data order), so one variance component groups
them (K_run = Z Z^T). Yet a run's checkpoints also scatter around the law one by one (the law's shape in D is not
exact: the default ladder's within-run residuals are twice its between-run ones), so a second component is each
point's own (K = I). With the run's component alone REML reads the within-run misfit as run-to-run scatter and the
exponent in S loses all precision; with the point's alone (the old K = I) the checkpoints count as independent
sizes and the S-exponent's interval is too narrow. So

    log y = X beta + u_run + u_point + e,   u_run ~ N(0, tau_run^2 K_run),  u_point ~ N(0, tau_point^2 I)

with e ~ N(0, V) the documents as in `rankscale.laws.random_effects`. Both tau^2 by REML (a grid over both, then
L-BFGS-B from its best); the degrees of freedom of a contrast's variance a + sum_i b_i tau_i^2 by the multivariate
Satterthwaite rule, 2 var^2 / (b^T I^-1 b) with I the REML information matrix (Giesbrecht and Burns 1985; the rule
Kenward and Roger's df reduces to for a variance linear in the components).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize

from rankscale.laws.random_effects import (
    MAX_DF,
    MIN_DF,
    SizeLevel,
    lack_of_fit,
    leaves_residual,
    ols_map,
    residual_basis,
)

GRID = 24  # log-spaced values per component besides 0


def _curve(taus: np.ndarray, L: np.ndarray, y: np.ndarray, V: np.ndarray, Ks: Sequence[np.ndarray]) -> np.ndarray:
    """REML log-likelihood (up to a constant) at every row of taus [g, c] at once, in the residual space."""
    z = L.T @ y
    A = (L.T @ V @ L)[None] + np.einsum("gc,cij->gij", taus, np.stack([L.T @ K @ L for K in Ks]))
    sign, logdet = np.linalg.slogdet(A)
    ok = sign > 0
    out = np.full(len(taus), -np.inf)
    solved = np.linalg.solve(A[ok], np.broadcast_to(z, (int(ok.sum()), len(z)))[..., None])[..., 0]
    out[ok] = -0.5 * (logdet[ok] + np.einsum("i,gi->g", z, solved))
    return out


def reml_components(X: np.ndarray, y: np.ndarray, V: np.ndarray, Ks: Sequence[np.ndarray]) -> np.ndarray:
    """tau^2 >= 0 of each component maximising the restricted likelihood: the best point of a grid over all
    components (0 and a log grid from far below the document noise to far above the points' scatter), polished by
    L-BFGS-B within the domain."""
    L = residual_basis(X)
    z = L.T @ y
    scale = max(float(np.mean(np.diag(L.T @ V @ L))), float(z @ z) / len(z), 1e-300)
    axis = np.concatenate([[0.0], scale * np.geomspace(1e-6, 1e3, GRID)])
    grid = np.stack(np.meshgrid(*([axis] * len(Ks)), indexing="ij"), axis=-1).reshape(-1, len(Ks))
    values = _curve(grid, L, y, V, Ks)
    best = grid[int(np.argmax(values))]
    found = optimize.minimize(
        lambda t: -float(_curve(scale * t[None, :], L, y, V, Ks)[0]),
        best / scale,
        method="L-BFGS-B",
        bounds=[(0.0, 1e3)] * len(Ks),
        options={"ftol": 1e-14, "gtol": 1e-12},
    )
    polished = scale * np.maximum(found.x, 0.0)
    return polished if -found.fun > values.max() else best


def components_information(taus: np.ndarray, X: np.ndarray, V: np.ndarray, Ks: Sequence[np.ndarray]) -> np.ndarray:
    """The expected REML information matrix of the components: I_ij = tr(P K_i P K_j) / 2."""
    L = residual_basis(X)
    sigma = L.T @ V @ L + sum(t * (L.T @ K @ L) for t, K in zip(taus, Ks, strict=True))
    M = [np.linalg.solve(sigma, L.T @ K @ L) for K in Ks]
    return 0.5 * np.array([[float(np.trace(a @ b)) for b in M] for a in M])


def multivariate_satterthwaite(variance: float, b: np.ndarray, information: np.ndarray) -> float:
    """Degrees of freedom of a + b^T tau^2: 2 var^2 / (b^T I^-1 b), in [MIN_DF, inf)."""
    if variance <= 0 or not np.any(b > 0):
        return float("inf")
    spread = float(b @ np.linalg.pinv(information) @ b)
    if spread <= 0:
        return float("inf")
    df = 2.0 * variance**2 / spread
    return max(float(df), MIN_DF) if df < MAX_DF else float("inf")


def fit_components(
    X: np.ndarray,
    y: np.ndarray,
    V: np.ndarray,
    Ks: Sequence[np.ndarray],
    contrast: np.ndarray,
    documents_df: float = math.inf,
) -> SizeLevel | None:
    """The components' tau^2 (`SizeLevel.parts`; `tau2` is the first), Q and the df of `contrast`^T beta's OLS
    variance; None where the points leave no residual degrees of freedom. `documents_df`: V's (`lack_of_fit`)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if not leaves_residual(X, y):
        return None
    taus = reml_components(X, y, V, Ks)
    information = components_information(taus, X, V, Ks)
    lof = lack_of_fit(X, y, V, documents_df)
    hc = ols_map(X).T @ np.asarray(contrast, dtype=np.float64)
    b = np.array([float(hc @ K @ hc) for K in Ks])
    variance = float(hc @ V @ hc) + float(b @ taus)
    df = multivariate_satterthwaite(variance, b, information)
    return SizeLevel(tau2=float(taus[0]), q=lof.q, q_df=lof.df, q_p=lof.p, df=df, information=float(information[0, 0]),
                     parts=tuple(float(t) for t in taus), kinds=tuple(Ks), q_n_eff=lof.n_eff)  # fmt: skip
