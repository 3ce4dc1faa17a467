"""Discrete, truncated lognormal fit of the rank distribution (docs/science.md).

P(R = r) = [F(r + 1/2) - F(r - 1/2)] / [F(|V| + 1/2) - F(1/2)] for r = 1..|V|, F the
lognormal CDF with parameters (mu, sigma) of log R. Fitted by maximum likelihood over the
rank histogram (at most |V| distinct values), so 10^6 tokens fit as fast as 10^3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_ndtr


@dataclass(frozen=True)
class LognormalFit:
    mu: float
    sigma: float
    nll_per_token: float
    n_tokens: int

    @property
    def mu_over_sigma(self) -> float:
        return self.mu / self.sigma


def _log_diff_ndtr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(Phi(b) - Phi(a)) for a < b, accurate in both tails."""
    upper = a > 0  # use the survival side: Phi(b) - Phi(a) = Phi(-a) - Phi(-b)
    hi = np.where(upper, -a, b)
    lo = np.where(upper, -b, a)
    log_hi, log_lo = log_ndtr(hi), log_ndtr(lo)
    return log_hi + np.log1p(-np.exp(np.minimum(log_lo - log_hi, 0.0)))


def log_pmf(ranks: np.ndarray, mu: float, sigma: float, vocab_size: int) -> np.ndarray:
    """log P(R = r) of the discrete lognormal truncated to 1..vocab_size."""
    r = np.asarray(ranks, dtype=np.float64)
    lower = (np.log(r - 0.5) - mu) / sigma
    upper = (np.log(r + 0.5) - mu) / sigma
    norm = _log_diff_ndtr(np.array([(np.log(0.5) - mu) / sigma]), np.array([(np.log(vocab_size + 0.5) - mu) / sigma]))
    return _log_diff_ndtr(lower, upper) - norm[0]


def fit_lognormal(hist: np.ndarray) -> LognormalFit:
    """Maximum-likelihood (mu, sigma) from counts[r], r = 0..|V| (counts[0] must be 0)."""
    vocab_size = len(hist) - 1
    if hist[0] != 0:
        raise ValueError("histogram has counts at rank 0; ranks start at 1")
    r = np.nonzero(hist)[0]
    c = hist[r].astype(np.float64)
    n = c.sum()
    if n == 0:
        raise ValueError("empty rank histogram")
    logs = np.log(r)
    mean = float((c * logs).sum() / n)
    sd = float(np.sqrt(max((c * (logs - mean) ** 2).sum() / n, 1e-4)))

    def nll(theta: np.ndarray) -> float:
        return float(-(c * log_pmf(r, theta[0], np.exp(theta[1]), vocab_size)).sum() / n)

    best = None
    for start in ([mean, np.log(sd)], [mean - sd, np.log(2 * sd)], [0.0, 0.0]):
        res = minimize(
            nll, np.array(start), method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 4000}
        )
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    return LognormalFit(
        mu=float(best.x[0]), sigma=float(np.exp(best.x[1])), nll_per_token=float(best.fun), n_tokens=int(n)
    )


def sample_discrete_lognormal(mu: float, sigma: float, vocab_size: int, n: int, seed: int = 0) -> np.ndarray:
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
