"""Is the rank distribution lognormal? Maximum-likelihood fits of alternatives on 1..|V| and Vuong's test.

Each family is a two-parameter discrete distribution on r = 1..|V|, fitted by maximum
likelihood over the rank histogram:
- lognormal: bins [r - 1/2, r + 1/2] of a lognormal (rankscale.lognormal);
- zipf: the truncated discrete power law P(R = r) ∝ r^(-a);
- stretched_exp: bins of a Weibull, F(x) = 1 - exp(-(x / lam)^beta) (a stretched exponential);
- loglogistic: bins of a log-logistic, F(x) = 1 / (1 + (x / s)^(-b)).
Vuong's normalised log-likelihood ratio (Clauset, Shalizi & Newman 2009, eq. 5.4) compares two
non-nested fits: z = sqrt(n) mean(l) / sd(l), l the pointwise log-likelihood ratio; |z| small
means the data cannot tell them apart. That z counts tokens as independent, and tokens of a document are not:
the tables test by documents instead (`rankscale.intervals.ratio_test` on the documents' summed l, the interval's
cluster-robust variance; `rankscale.tables.distribution`), and read only mean(l) from here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import log_ndtr, logsumexp

from rankscale.lognormal import BOUND_TOLERANCE, MU_BOUNDS, SIGMA_BOUNDS, bound_side, fit_lognormal, log_pmf


def _log_bins(log_sf_hi: np.ndarray, log_sf_lo: np.ndarray) -> np.ndarray:
    """log(S(r - 1/2) - S(r + 1/2)) from log survival functions at the bin edges."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return log_sf_lo + np.log1p(-np.exp(np.minimum(log_sf_hi - log_sf_lo, 0.0)))


def _weibull_log_pmf(r: np.ndarray, theta: np.ndarray, vocab_size: int) -> np.ndarray:
    """theta = (log lam, log beta); log S(x) = -(x / lam)^beta."""
    lam, beta = math.exp(theta[0]), math.exp(theta[1])
    edges = np.asarray(r, dtype=np.float64)
    log_bins = _log_bins(-(((edges + 0.5) / lam) ** beta), -(((edges - 0.5) / lam) ** beta))
    log_z = _log_bins(np.array([-(((vocab_size + 0.5) / lam) ** beta)]), np.array([-((0.5 / lam) ** beta)]))[0]
    return log_bins - log_z


def _loglogistic_log_pmf(r: np.ndarray, theta: np.ndarray, vocab_size: int) -> np.ndarray:
    """theta = (log s, log b); log S(x) = -log(1 + (x / s)^b)."""
    s, b = math.exp(theta[0]), math.exp(theta[1])

    def log_sf(x: np.ndarray) -> np.ndarray:
        return -np.logaddexp(0.0, b * (np.log(x) - math.log(s)))

    edges = np.asarray(r, dtype=np.float64)
    log_z = _log_bins(log_sf(np.array([vocab_size + 0.5])), log_sf(np.array([0.5])))[0]
    return _log_bins(log_sf(edges + 0.5), log_sf(edges - 0.5)) - log_z


@cache
def _log_ranks(vocab_size: int) -> np.ndarray:
    return np.log(np.arange(1, vocab_size + 1, dtype=np.float64))


def _zipf_log_pmf(r: np.ndarray, theta: np.ndarray, vocab_size: int) -> np.ndarray:
    """theta = (a,); P(R = r) = r^-a / sum_{j <= |V|} j^-a."""
    a = float(theta[0])
    return -a * np.log(np.asarray(r, dtype=np.float64)) - float(logsumexp(-a * _log_ranks(vocab_size)))


@dataclass(frozen=True)
class Family:
    name: str
    params: tuple[str, ...]
    log_pmf: Callable[[np.ndarray, np.ndarray, int], np.ndarray]  # (ranks, theta, |V|)
    start: Callable[[np.ndarray, np.ndarray], list[np.ndarray]]  # (ranks, counts) -> starting thetas
    bounds: tuple[tuple[float, float], ...]  # the optimizer's box for theta, wide but finite
    to_params: Callable[[np.ndarray], tuple[float, ...]] = lambda theta: tuple(float(math.exp(t)) for t in theta)

    def param_bounds(self) -> dict[str, tuple[float, float]]:
        """The box of each parameter in its own units (the optimizer searches theta, e.g. log-parameters)."""
        lows = self.to_params(np.array([lo for lo, _ in self.bounds]))
        highs = self.to_params(np.array([hi for _, hi in self.bounds]))
        return {name: (lo, hi) for name, lo, hi in zip(self.params, lows, highs, strict=True)}


def _moment_starts(r: np.ndarray, c: np.ndarray) -> list[np.ndarray]:
    logs = np.log(r)
    mean = float((c * logs).sum() / c.sum())
    sd = float(np.sqrt(max((c * (logs - mean) ** 2).sum() / c.sum(), 1e-4)))
    return [np.array([mean, math.log(1.0 / sd)]), np.array([0.0, math.log(0.5)])]


# Two-parameter families search (log scale, log shape) inside a wide, finite box: left unbounded, a fit whose
# likelihood keeps improving towards a limit (ranks mostly at 1: the power-law limit, docs/science.md) drifted to
# log-parameters of -700 and came out as 1e-303. The shape box holds every moment start (1 / sd <= 100).
SCALE_BOUNDS = (-20.0, 20.0)  # log lam, log s
SHAPE_BOUNDS = (math.log(1e-3), math.log(1e3))  # log beta, log b
ZIPF_BOUNDS = (1e-3, 20.0)  # a
FLAT_TOLERANCE = 1e-9  # nats per token: a bound that fits this nearly as well is where the fit ran to

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "zipf",
            ("a",),
            _zipf_log_pmf,
            lambda r, c: [np.array([1.0]), np.array([1.5])],
            (ZIPF_BOUNDS,),
            lambda t: (float(t[0]),),
        ),
        Family("stretched_exp", ("lam", "beta"), _weibull_log_pmf, _moment_starts, (SCALE_BOUNDS, SHAPE_BOUNDS)),
        Family("loglogistic", ("s", "b"), _loglogistic_log_pmf, _moment_starts, (SCALE_BOUNDS, SHAPE_BOUNDS)),
    )
}


@dataclass(frozen=True)
class DistributionFit:
    family: str
    params: tuple[float, ...]
    loglik_per_token: float
    log_pmf: np.ndarray  # log P(R = r) for r = 1..|V|
    at_bound: tuple[str, ...] = ()  # parameters at (or indistinguishable from) a bound: limits, not estimates


def _at_bound(family: Family, theta: np.ndarray, value: float, nll: Callable[[np.ndarray], float]) -> tuple[str, ...]:
    """The parameters of a fit at a bound of its box: on it (within the tolerance), or with the nearer bound
    fitting as well (within FLAT_TOLERANCE): a likelihood flat all the way to the bound, where the search
    stopped anywhere (the log-logistic's s -> 0 leaves the pmf unchanged once s << 1/2)."""
    out = []
    for i, (name, (lo, hi)) in enumerate(zip(family.params, family.bounds, strict=True)):
        nearer = lo if theta[i] - lo <= hi - theta[i] else hi
        if abs(theta[i] - nearer) <= BOUND_TOLERANCE:
            out.append(name)
            continue
        moved = np.array(theta, dtype=np.float64)
        moved[i] = nearer
        if nll(moved) <= value + FLAT_TOLERANCE:
            out.append(name)
    return tuple(out)


def fit_family(name: str, hist: np.ndarray, truncate: bool) -> DistributionFit:
    """Maximum-likelihood fit of family `name` ("lognormal" or one of FAMILIES) to counts[r], r = 0..|V|."""
    vocab_size = len(hist) - 1
    r = np.nonzero(hist)[0]
    c = np.asarray(hist[r], dtype=np.float64)
    grid = np.arange(1, vocab_size + 1)
    if name == "lognormal":
        fit = fit_lognormal(hist, truncate=truncate)
        table = log_pmf(grid, fit.mu, fit.sigma, vocab_size, truncate)
        return DistributionFit("lognormal", (fit.mu, fit.sigma), float(c @ table[r - 1] / c.sum()), table, fit.at_bound)
    family = FAMILIES[name]

    def nll(theta: np.ndarray) -> float:
        value = -float(c @ family.log_pmf(r, theta, vocab_size)) / c.sum()
        return value if math.isfinite(value) else 1e300

    if len(family.params) == 1:  # one parameter: a bounded scalar search
        one = minimize_scalar(
            lambda a: nll(np.array([a])), bounds=family.bounds[0], method="bounded", options={"xatol": 1e-8}
        )
        theta, value = np.array([one.x]), float(one.fun)
    else:  # Nelder-Mead in the box: it only clips points outside it, so an interior fit takes the unbounded path
        best = None
        for start in family.start(r, c):
            res = minimize(nll, start, method="Nelder-Mead", bounds=family.bounds,
                           options={"xatol": 1e-6, "fatol": 1e-10, "maxiter": 2000})  # fmt: skip
            if best is None or res.fun < best.fun:
                best = res
        assert best is not None
        theta, value = best.x, float(best.fun)
    return DistributionFit(
        name,
        family.to_params(theta),
        -value,
        family.log_pmf(grid, theta, vocab_size),
        _at_bound(family, theta, value, nll),
    )


def bound_note(name: str, params: Sequence[float], at_bound: Sequence[str]) -> str:
    """Says which parameter of fit `name` sits at which bound ("<family> <parameter> at its lower bound <value>",
    comma-separated; "" if none), for the notes of the tables."""
    if name == "lognormal":
        boxes = {"mu": MU_BOUNDS, "sigma": SIGMA_BOUNDS}
        names: tuple[str, ...] = ("mu", "sigma")
    else:
        boxes, names = FAMILIES[name].param_bounds(), FAMILIES[name].params
    values = dict(zip(names, params, strict=True))
    return ", ".join(
        f"{name} {p} at its {side} bound {bound:.3g}"
        for p in at_bound
        for side, bound in [bound_side(values[p], *boxes[p])]
    )


@dataclass(frozen=True)
class Vuong:
    mean_llr: float  # mean log-likelihood ratio per token (positive: the first fits better)
    z: float
    p_value: float  # two-sided


def vuong(first: DistributionFit, second: DistributionFit, hist: np.ndarray) -> Vuong:
    """Vuong's normalised log-likelihood-ratio test of two fits on the same tokens (histogram counts)."""
    r = np.nonzero(hist)[0]
    c = np.asarray(hist[r], dtype=np.float64)
    n = c.sum()
    llr = first.log_pmf[r - 1] - second.log_pmf[r - 1]
    mean = float(c @ llr / n)
    sd = float(np.sqrt(max(c @ (llr - mean) ** 2 / n, 0.0)))
    if sd == 0.0:
        return Vuong(mean, 0.0 if mean == 0.0 else math.copysign(math.inf, mean), 1.0 if mean == 0.0 else 0.0)
    z = math.sqrt(n) * mean / sd
    return Vuong(mean, z, float(min(1.0, 2.0 * math.exp(float(log_ndtr(-abs(z)))))))
