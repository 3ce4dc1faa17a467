"""How the size deviations of two laws of the same models go together, where their contrast is not itself a law.

Two laws fitted to the same sizes (cross-entropy and RBP_1; a stratum and all tokens) each scatter around their
curve, u_a ~ N(0, tau_a^2 K) and u_b ~ N(0, tau_b^2 K), and a size that sits above one law often sits above the
other. A log-linear form needs no model of that: the contrast of two exponents is the exponent of the law of
y_a / y_b, whose own tau^2 is the scatter of u_a - u_b (`rankscale.tables.lawkit.exponent_contrast`). Another
form (the offset power law) refits each law on its own, and its contrast carries

    tau_a^2 h_a^T K h_a + tau_b^2 h_b^T K h_b - 2 rho tau_a tau_b h_a^T K h_b

(h the exponent's row of each law's linearised map): rho = 1, the deviations of one draw shared, gives about
(tau_a - tau_b)^2 and too narrow an interval where the deviations are not one. Here rho is estimated by REML in
the two laws' joint residual space, with each tau^2 held at its own REML and the documents' joint covariance of
the paired replicates (the bivariate random-effects model of multivariate meta-analysis: Jackson, Riley & White
2011, Stat. Med. 30:2481). benchmarks/contrast_coverage.py measures the contrast's coverage with it.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from rankscale.laws.random_effects import residual_basis

GRID = 41  # correlations on [-1, 1] the restricted likelihood is evaluated at before Brent's method refines


def size_correlation(
    designs: tuple[np.ndarray, np.ndarray],
    points: tuple[np.ndarray, np.ndarray],
    V: np.ndarray,
    K: np.ndarray,
    tau2: tuple[float, float],
) -> float:
    """rho in [-1, 1] maximising the restricted likelihood of two laws' points jointly: log y_a and log y_b
    (`points`, M each) with their designs X_a, X_b ([M, p] each, linearised at the fits), the documents' joint
    covariance V [2M, 2M] (a's points first) and the sizes' K [M, M]. 0 where either tau^2 is 0: a law without
    scatter has no deviation to correlate."""
    ta, tb = (float(np.sqrt(max(t, 0.0))) for t in tau2)
    if not (ta > 0 and tb > 0):
        return 0.0
    La, Lb = residual_basis(designs[0]), residual_basis(designs[1])
    ma = La.shape[1]
    L = np.zeros((La.shape[0] + Lb.shape[0], ma + Lb.shape[1]))
    L[: La.shape[0], :ma], L[La.shape[0] :, ma:] = La, Lb
    z = L.T @ np.concatenate(points)
    base = L.T @ V @ L
    base[:ma, :ma] += ta * ta * (La.T @ K @ La)
    base[ma:, ma:] += tb * tb * (Lb.T @ K @ Lb)
    cross = np.zeros_like(base)
    cross[:ma, ma:] = ta * tb * (La.T @ K @ Lb)
    cross[ma:, :ma] = cross[:ma, ma:].T

    def loglik(rho: float) -> float:
        S = base + rho * cross
        sign, logdet = np.linalg.slogdet(S)
        if sign <= 0:
            return -np.inf
        return -0.5 * (logdet + float(z @ np.linalg.solve(S, z)))

    grid = np.linspace(-1.0, 1.0, GRID)
    values = np.array([loglik(r) for r in grid])
    if not np.isfinite(values).any():
        return 0.0
    best = int(np.argmax(values))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, GRID - 1)]
    found = optimize.minimize_scalar(lambda r: -loglik(r), bounds=(low, high), method="bounded",
                                     options={"xatol": 1e-8})  # fmt: skip
    return float(found.x) if -found.fun > values[best] else float(grid[best])
