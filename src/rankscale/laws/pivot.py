"""The sizes' variance tau^2 as a generalized pivotal quantity: intervals calibrated at tau^2 = 0 and away from it.

In the residual space of a law (z = L^T y ~ N(0, A + tau^2 B), A = L^T V L, B = L^T K L, m = M - p dimensions),
Q(t) = z^T (A + t B)^-1 z is chi^2_m at the true tau^2 and falls as t grows. Drawing W ~ chi^2_m and solving
Q(R) = W (R = 0 where W >= Q(0), the lack-of-fit statistic) gives R, tau^2's generalized pivotal quantity: the
quantiles of R are the Q-profile confidence limits of tau^2 (Viechtbauer 2007, Stat. Med. 26:37), and R is
its fiducial distribution (Weerahandi 1993, JASA 88:899). A linear function of the points with variance
a + b tau^2 (a: documents and seeds, b: the sizes) then has the generalized pivot estimate - Z sqrt(a + b R):
its interval is the mixture of N(0, a + b R) over R (Iyer, Wang & Mathew 2004, JASA 99:1060, for the mean of
interlaboratory trials; Friedrich & Knapp 2013 compare it with Knapp-Hartung and profile intervals).

Why not Student's t on Satterthwaite degrees of freedom, as before: its df come from tau^2's REML information at
the estimate, and both ends fail where tau^2 is small. Estimated as 0 with documents dominating, df is large and
the interval ignores every tau^2 the data cannot exclude (a default run's leave-one-out covered 77%); small but
positive, df collapses below 1 and the interval becomes Cauchy's (99.9-100% coverage). Kenward-Roger corrects
the variance of a GLS estimate for its estimated weights; the points here are OLS (the paper's estimator), so its
correction is zero and its df are Satterthwaite's. R carries every tau^2 the residuals allow, with the weight the
residuals give it, and needs no df. benchmarks/size_level_coverage.py measures it (docs/science.md,
"Uncertainty").
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

GRID = 2000  # chi^2 quantiles of the deterministic grid an analytic interval integrates over
PAIR_GRID = 200  # per pivot, where a variance has two (their grids crossed: 40,000 pairs)
NEWTON_STEPS = 30  # at most; from the tabulated start Newton's method on 1/Q takes a few steps
TABLE = 256  # points of the log grid of t that Q is tabulated on for Newton's starts


@dataclass(frozen=True)
class TauPivot:
    """Q(t) = sum_i w_i / (alpha_i + t beta_i), A and B diagonalised together: whitened by A (alpha = 1, beta the
    eigenvalues of A^-1/2 B A^-1/2) or, where A is singular (one document: no document noise), by B (alpha the
    eigenvalues of B^-1/2 A B^-1/2, beta = 1)."""

    weights: np.ndarray  # [m] squared coordinates of the whitened residuals
    alpha: np.ndarray  # [m] >= 0
    beta: np.ndarray  # [m] >= 0

    @classmethod
    def of(cls, L: np.ndarray, y: np.ndarray, V: np.ndarray, K: np.ndarray) -> TauPivot:
        """From the residual basis L [M, m], the points y, their document covariance V and the sizes' K."""
        A, B, z = L.T @ V @ L, L.T @ K @ L, L.T @ y
        by_a = _whitener(A)
        if by_a is None:
            by_b = _whitener(B)
            if by_b is not None:
                values, basis = np.linalg.eigh(by_b @ A @ by_b)
                ones = np.ones(len(z))
                return cls((basis.T @ by_b @ z) ** 2, np.clip(values, 0.0, None), ones)
            # both singular (documents exact in some residual direction, runs of one size in another): a ridge of
            # 1e-9 of their scale, which conditions A to well inside `_whitener`'s 1e-10
            scale = max(float(np.abs(A).max(initial=0.0)) * len(A), float(np.abs(B).max(initial=0.0)), 1e-300)
            by_a = _whitener(A + 1e-9 * scale * np.eye(len(A)))
            assert by_a is not None
        values, basis = np.linalg.eigh(by_a @ B @ by_a)
        return cls((basis.T @ by_a @ z) ** 2, np.ones(len(z)), np.clip(values, 0.0, None))

    @property
    def dof(self) -> int:
        return len(self.weights)

    @property
    def q(self) -> float:
        """Q(0): the lack-of-fit statistic of the residuals with documents (and seeds) as the only noise (inf
        where documents leave a residual direction without noise)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.nansum(self.weights / self.alpha))

    def solve(self, w: np.ndarray) -> np.ndarray:
        """R with Q(R) = w for every w (0 where w >= Q(0)): started from Q tabulated on a log grid of t, then
        Newton's method on 1/Q(t) - 1/w, which is concave and increasing in t (1/Q is a weighted harmonic mean of
        the affine alpha_i + beta_i t), so a step from either side lands at or below the root and the next ones
        climb to it quadratically. Where w is below what no tau^2 can explain (residual directions the sizes do
        not move, beta = 0), R is the bound reach / (w - floor) at w just above that floor: the sizes alone
        cannot explain such residuals, and no finite R can."""
        w = np.asarray(w, dtype=np.float64)
        beta_max = float(self.beta.max(initial=0.0))
        moved = self.beta > 1e-12 * max(beta_max, 1e-300)
        with np.errstate(divide="ignore", invalid="ignore"):
            floor = float(np.nansum(self.weights[~moved] / self.alpha[~moved]))
        reach = float((self.weights[moved] / self.beta[moved]).sum())  # Q(t) <= floor + reach / t
        target = np.maximum(w, floor * (1.0 + 1e-12) + 1e-300)
        upper = reach / np.maximum(target - floor, 1e-300)
        solvable = (w < self.q) & (target > floor * (1.0 + 1e-9))
        if not solvable.any():
            return np.where(w >= self.q, 0.0, upper)
        table = np.geomspace(1e-9, 1e12, TABLE) / beta_max  # t where beta_max t runs from negligible to dominant
        log_q = np.log(self._q_at(table))  # decreasing in t
        t = np.exp(np.interp(-np.log(target), -log_q, np.log(table)))  # log-log interpolation: near the root
        zero_floor = 0.0 if (self.alpha > 0).all() else 1e-300  # Q(0) infinite: stay above 0
        for _ in range(NEWTON_STEPS):
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                terms = self.alpha[None, :] + t[:, None] * self.beta[None, :]
                q = (self.weights[None, :] / terms).sum(axis=1)
                slope = (self.weights[None, :] * self.beta[None, :] / terms**2).sum(axis=1) / q**2  # d(1/Q)/dt
                step = np.where(solvable & (slope > 0), (1.0 / target - 1.0 / q) / slope, 0.0)
            t = np.clip(t + step, zero_floor, upper)
            if not np.any(np.abs(step) > 1e-12 * (t + 1.0 / beta_max)):  # 1 / beta_max: where t starts to matter
                break
        return np.where(w >= self.q, 0.0, np.where(solvable, t, upper))

    def _q_at(self, t: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return (self.weights[None, :] / (self.alpha[None, :] + t[:, None] * self.beta[None, :])).sum(axis=1)

    def draws(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n independent draws of R (the size level of n bootstrap replicates)."""
        return self.solve(rng.chisquare(self.dof, n))

    def grid(self, n: int = GRID) -> np.ndarray:
        """R at the n mid-quantiles of chi^2_m: a deterministic stand-in for its draws in analytic intervals."""
        return self.solve(_chi2_grid(self.dof, n))


@functools.cache
def _chi2_grid(dof: int, n: int) -> np.ndarray:
    """The n mid-quantiles of chi^2 on `dof` (computed once per dof and n)."""
    grid = special.chdtri(dof, 1.0 - (np.arange(n) + 0.5) / n)
    grid.setflags(write=False)
    return grid


def _whitener(matrix: np.ndarray) -> np.ndarray | None:
    """matrix^-1/2 where the symmetric matrix is well conditioned (eigenvalues above 1e-10 of the largest), else None."""
    values, vectors = np.linalg.eigh(matrix)
    if not len(values) or values.max() <= 0 or values.min() <= 1e-10 * values.max():
        return None
    return (vectors / np.sqrt(values)[None, :]) @ vectors.T


def variances(a: float, terms: Sequence[tuple[float, TauPivot]]) -> np.ndarray:
    """a + sum_j b_j R_j over the pivots' grids (crossed where there are two)."""
    if not terms:
        return np.array([a])
    if len(terms) == 1:
        b, pivot = terms[0]
        return a + b * pivot.grid()
    if len(terms) == 2:
        (b1, p1), (b2, p2) = terms
        return (a + b1 * p1.grid(PAIR_GRID)[:, None] + b2 * p2.grid(PAIR_GRID)[None, :]).ravel()
    raise ValueError("a variance with more than two estimated size levels")


def half_width(variance: np.ndarray, level: float) -> float:
    """h with the mixture of N(0, variance_g) over the grid giving P(|X| <= h) = level."""
    sd, count = np.unique(np.sqrt(np.clip(np.asarray(variance, dtype=np.float64), 0.0, None)), return_counts=True)
    weight = count / count.sum()  # R = 0 (no scatter) is often most of the grid: one term for all of it
    z = float(special.ndtri(0.5 + level / 2.0))
    low, high = z * float(sd.min()), z * float(sd.max())
    if not high > low:
        return high
    covered = lambda h: 1.0 - 2.0 * float(weight @ special.ndtr(-h / sd)) - level  # noqa: E731
    return float(optimize.brentq(covered, low, high, xtol=1e-14 * high, rtol=1e-12))


def mixture_interval(estimate: float, a: float, terms: Sequence[tuple[float, TauPivot]],
                     level: float) -> tuple[float, float]:  # fmt: skip
    """estimate -/+ the mixture's half width: the generalized pivot's interval."""
    h = half_width(variances(a, terms), level)
    return estimate - h, estimate + h


def mixture_p_value(estimate: float, a: float, terms: Sequence[tuple[float, TauPivot]]) -> float:
    """Two-sided p-value of estimate = 0 under the mixture."""
    sd = np.sqrt(np.clip(variances(a, terms), 0.0, None))
    if not sd.max() > 0:
        return float("nan")
    with np.errstate(divide="ignore"):
        return float(np.mean(2.0 * special.ndtr(-abs(estimate) / sd)))


def equivalent_df(half: float, variance: float, level: float) -> float:
    """The degrees of freedom of Student's t whose interval -/+ t sqrt(variance) is as wide as `half` (`variance`
    at the estimate of tau^2): what the tables' `df` column reports. inf where it is no wider than Normal's."""
    if not (variance > 0 and half > 0):
        return float("inf")
    ratio = half / np.sqrt(variance)
    if ratio <= special.ndtri(0.5 + level / 2.0) * (1 + 1e-12):
        return float("inf")
    return float(special.stdtridf(0.5 + level / 2.0, ratio))
