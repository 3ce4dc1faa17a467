"""The discrete, truncated lognormal of the rank distribution (docs/science.md, "The lognormal conjecture").

P(R = r) = [F(r + 1/2) - F(r - 1/2)] / [F(|V| + 1/2) - F(1/2)] for r = 1..|V|, F the lognormal
CDF with parameters (mu, sigma) of log R. Fitted by maximum likelihood over the rank histogram
(at most |V| distinct values, so 10^6 tokens fit as fast as 10^3), with the analytic gradient.
`truncate=False` normalises over [1/2, inf) instead (no upper cut at |V|), as the paper
authors' `powerlaw.Fit(ranks, discrete=True, xmin=1)` did.

What a fitted distribution implies (Appendix B of the paper, for a calibrated model whose rank
distribution is the fitted one): its entropy is the cross-entropy it predicts, and -log P(R = 1)
its -log RBP_1; `appendix_b` is the paper's closed-form approximation of both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_ndtr

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class DegenerateRanks(ValueError):
    """The histogram holds one distinct rank (e.g. every rank is 1): no lognormal can be fitted."""


MU_BOUNDS = (-50.0, 50.0)  # the optimizer's box for mu ...
SIGMA_BOUNDS = (1e-3, 50.0)  # ... and for sigma (searched as log sigma)
BOUND_TOLERANCE = 1e-6  # a solution this close to a bound, in the optimizer's coordinates, is at it


def at_bounds(
    x: np.ndarray, bounds: list[tuple[float, float]], names: tuple[str, ...], tol: float = BOUND_TOLERANCE
) -> tuple[str, ...]:
    """The names of the coordinates of an optimizer's solution `x` that sit (within `tol`) on their box bound:
    such a value is where the search stopped, not an estimate."""
    return tuple(n for n, v, (lo, hi) in zip(names, x, bounds, strict=True) if v - lo <= tol or hi - v <= tol)


def bound_side(value: float, low: float, high: float) -> tuple[str, float]:
    """("lower", low) or ("upper", high): the bound a parameter at a bound sits at (the nearer one, compared in
    log space for positive boxes, where the optimizer searched)."""
    if low > 0 and value > 0:
        value, low_c, high_c = math.log(value), math.log(low), math.log(high)
    else:
        low_c, high_c = low, high
    return ("lower", low) if abs(value - low_c) <= abs(high_c - value) else ("upper", high)


@dataclass(frozen=True)
class LognormalFit:
    mu: float
    sigma: float
    nll_per_token: float
    n_tokens: int
    truncated: bool
    at_bound: tuple[str, ...] = ()  # "mu", "sigma": parameters the optimizer left on a bound (not estimates)

    @property
    def mu_over_sigma(self) -> float:
        return self.mu / self.sigma

    def bound_note(self) -> str:
        """What is at which bound, and why that makes the fit a limit rather than a result ("" if nothing)."""
        if not self.at_bound:
            return ""
        boxes = {"mu": MU_BOUNDS, "sigma": SIGMA_BOUNDS}
        where = "; ".join(
            f"{name} at its {side} bound {value:g}"
            for name in self.at_bound
            for side, value in [bound_side(getattr(self, name), *boxes[name])]
        )
        limit = (
            ": with most ranks at 1 it runs towards its power-law limit (mu -> -inf, sigma growing; docs/science.md, "
            "'When the lognormal degenerates')"
            if "mu" in self.at_bound and self.mu < 0
            else ""
        )
        return (
            f"lognormal not identified: {where} (the optimizer's box: mu in [{MU_BOUNDS[0]:g}, {MU_BOUNDS[1]:g}], "
            f"sigma in [{SIGMA_BOUNDS[0]:g}, {SIGMA_BOUNDS[1]:g}]), so the fit is where the search stopped, not an "
            f"estimate{limit}"
        )


def _log_diff_ndtr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(Phi(b) - Phi(a)) for a < b, accurate in both tails (b may be +inf)."""
    upper = a > 0  # use the survival side: Phi(b) - Phi(a) = Phi(-a) - Phi(-b)
    hi = np.where(upper, -a, b)
    lo = np.where(upper, -b, a)
    log_hi, log_lo = log_ndtr(hi), log_ndtr(lo)
    with np.errstate(invalid="ignore"):
        return log_hi + np.log1p(-np.exp(np.minimum(log_lo - log_hi, 0.0)))


def _bounds(ranks: np.ndarray, mu: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    r = np.asarray(ranks, dtype=np.float64)
    return (np.log(r - 0.5) - mu) / sigma, (np.log(r + 0.5) - mu) / sigma


def _norm_bounds(mu: float, sigma: float, vocab_size: int, truncate: bool) -> tuple[float, float]:
    return (math.log(0.5) - mu) / sigma, ((math.log(vocab_size + 0.5) - mu) / sigma) if truncate else math.inf


def log_pmf(ranks: np.ndarray, mu: float, sigma: float, vocab_size: int, truncate: bool) -> np.ndarray:
    """log P(R = r) of the discrete lognormal on 1..vocab_size (or 1..inf without truncation)."""
    a, b = _bounds(ranks, mu, sigma)
    low, high = _norm_bounds(mu, sigma, vocab_size, truncate)
    norm = _log_diff_ndtr(np.array([low]), np.array([high]))[0]
    return _log_diff_ndtr(a, b) - norm


def _log_phi(x: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(x), -0.5 * np.square(x) - LOG_SQRT_2PI, -np.inf)


def log_pmf_and_score(
    ranks: np.ndarray, mu: float, sigma: float, vocab_size: int, truncate: bool
) -> tuple[np.ndarray, np.ndarray]:
    """log P(R = r) and its gradient in (mu, log sigma), shape [n, 2], for each rank.

    d log(Phi(b) - Phi(a)) / d mu = (phi(a) - phi(b)) / (sigma D); / d log sigma = (a phi(a) - b phi(b)) / D.
    """
    a, b = _bounds(ranks, mu, sigma)
    log_d = _log_diff_ndtr(a, b)
    low, high = _norm_bounds(mu, sigma, vocab_size, truncate)
    log_z = float(_log_diff_ndtr(np.array([low]), np.array([high]))[0])
    pa, pb = np.exp(_log_phi(a) - log_d), np.exp(_log_phi(b) - log_d)
    z_low = math.exp(float(_log_phi(np.array([low]))[0]) - log_z)
    z_high = math.exp(float(_log_phi(np.array([high]))[0]) - log_z)
    d_mu = ((pa - pb) - (z_low - z_high)) / sigma
    a_pa = np.where(np.isfinite(a), a * pa, 0.0)
    b_pb = np.where(np.isfinite(b), b * pb, 0.0)
    edge = (low * z_low if math.isfinite(low) else 0.0) - (high * z_high if math.isfinite(high) else 0.0)
    return log_d - log_z, np.stack([d_mu, (a_pa - b_pb) - edge], axis=1)


def _nll_and_gradient(
    theta: np.ndarray, r: np.ndarray, c: np.ndarray, vocab_size: int, truncate: bool
) -> tuple[float, np.ndarray]:
    """Mean negative log-likelihood over the histogram (r, counts c), and its gradient in (mu, log sigma)."""
    log_p, score = log_pmf_and_score(r, float(theta[0]), float(np.exp(theta[1])), vocab_size, truncate)
    n = c.sum()
    return float(-(c @ log_p) / n), -(c @ score) / n


def fit_lognormal(hist: np.ndarray, truncate: bool, start: tuple[float, float] | None = None) -> LognormalFit:
    """Maximum-likelihood (mu, sigma) from counts[r], r = 0..|V| (counts[0] must be 0).

    `start`: where to begin (e.g. the full-data fit, when refitting a bootstrap replicate);
    otherwise the moments of log R and two wider guesses, keeping the best.
    """
    vocab_size = len(hist) - 1
    if hist[0] != 0:
        raise ValueError("histogram has counts at rank 0; ranks start at 1")
    r = np.nonzero(hist)[0]
    c = np.asarray(hist[r], dtype=np.float64)
    n = c.sum()
    if n == 0:
        raise ValueError("empty rank histogram")
    if len(r) < 2:
        raise DegenerateRanks(f"every scored token has rank {int(r[0])}: a lognormal cannot be fitted to one value")
    logs = np.log(r)
    mean = float((c * logs).sum() / n)
    sd = float(np.sqrt(max((c * (logs - mean) ** 2).sum() / n, 1e-4)))
    # the moments of log R start well; wider guesses only if that start does not converge
    starts = [(start[0], math.log(start[1]))] if start is not None else [(mean, math.log(sd))]
    starts += [(mean - sd, math.log(2 * sd)), (0.0, 0.0)]
    best = None
    box = [MU_BOUNDS, (math.log(SIGMA_BOUNDS[0]), math.log(SIGMA_BOUNDS[1]))]
    for guess in starts:
        res = minimize(
            _nll_and_gradient, np.array(guess), args=(r, c, vocab_size, truncate), jac=True, method="L-BFGS-B",
            bounds=box, options={"ftol": 1e-13, "gtol": 1e-9, "maxiter": 500},
        )  # fmt: skip
        if best is None or res.fun < best.fun:
            best = res
        if res.success:
            break
    assert best is not None
    return LognormalFit(
        float(best.x[0]),
        float(np.exp(best.x[1])),
        float(best.fun),
        int(n),
        truncate,
        at_bounds(best.x, box, ("mu", "sigma")),
    )


def pmf(mu: float, sigma: float, vocab_size: int, truncate: bool) -> np.ndarray:
    """P(R = r) for r = 1..|V| (renormalised over 1..|V| if the fit was not truncated)."""
    p = np.exp(log_pmf(np.arange(1, vocab_size + 1), mu, sigma, vocab_size, truncate))
    return p / p.sum() if not truncate else p


def entropy(p: np.ndarray) -> float:
    """-sum p log p (nats) over the nonzero entries."""
    p = np.asarray(p, dtype=np.float64)
    p = p[p > 0]
    return float(-(p @ np.log(p)))


@dataclass(frozen=True)
class Implied:
    """What a fitted rank distribution implies for a calibrated model (paper, Appendix B)."""

    entropy: float  # the cross-entropy it predicts
    neg_log_p1: float  # the -log RBP_1 it predicts
    neg_log_rbp: dict[int, float]  # -log P(R <= k) for the asked k


def implied(mu: float, sigma: float, vocab_size: int, ks: list[int], truncate: bool) -> Implied:
    p = pmf(mu, sigma, vocab_size, truncate)
    cumulative = np.cumsum(p)
    with np.errstate(divide="ignore"):
        return Implied(
            entropy=entropy(p),
            neg_log_p1=float(-np.log(p[0])),
            neg_log_rbp={k: float(-np.log(min(cumulative[k - 1], 1.0))) for k in ks if k <= vocab_size},
        )


def appendix_b(mu: float, sigma: float) -> tuple[float, float]:
    """(-log P(R = 1), CE): the paper's closed-form approximation (Appendix B, eq. 21).

    It takes P(R = r) proportional to the lognormal density f at the integers r >= 1 (no upper
    cut) and replaces every sum over r by the integral from 1 plus half the r = 1 term
    (trapezoid rule). With m = mu / sigma, P = Phi(m), phi = phi(m) and the normaliser
    c = P + phi / (2 sigma):
        -log p_1 = log(sqrt(2 pi) sigma c) + m^2 / 2
        CE       = -log p_1 + [P (mu + 1/2 - m^2 / 2) + phi (sigma - m / 2)] / c
    The approximation is good when f varies slowly between integers (sigma not small).
    Computed in log space: a replicate far in the tail (mu = -157: P and phi both underflow) keeps its
    finite values instead of taking the log of 0.
    """
    m = mu / sigma
    log_p = float(log_ndtr(m))
    log_phi = -0.5 * m * m - LOG_SQRT_2PI
    log_c = float(np.logaddexp(log_p, log_phi - math.log(2 * sigma)))
    neg_log_p1 = LOG_SQRT_2PI + math.log(sigma) + log_c + 0.5 * m * m
    ce = neg_log_p1 + math.exp(log_p - log_c) * (mu + 0.5 - 0.5 * m * m) + math.exp(log_phi - log_c) * (sigma - 0.5 * m)
    return neg_log_p1, ce


def sample_discrete_lognormal(mu: float, sigma: float, vocab_size: int, n: int, seed: int) -> np.ndarray:
    """Draws from the discrete truncated lognormal: round continuous draws, reject outside."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    have = 0
    while have < n:
        draw = np.rint(rng.lognormal(mu, sigma, size=2 * (n - have) + 16))
        draw = draw[(draw >= 1) & (draw <= vocab_size)].astype(np.int64)
        out.append(draw)
        have += draw.size
    return np.concatenate(out)[:n]
