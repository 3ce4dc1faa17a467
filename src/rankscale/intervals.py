"""One model's intervals over its documents: a cluster-robust t interval for ratios dominated by a few documents,
and a one-sided bound where a share is 0 or 1 in every document (docs/science.md, "Uncertainty";
benchmarks/model_interval_coverage.py measures them on the run's own documents). Statistics of the whole rank
histogram, biased under resampling, take BCa or its jackknife t fallback instead (`rankscale.bca`).

A metric such as RBP_k or CE is a ratio, a sum over documents of hits over a sum of tokens, so a weighted mean of the
documents' own rates with weights their token shares. Where one document holds a third of the tokens, a percentile
interval (even Hesterberg's expanded one) is too narrow: it behaves as if there were many documents. Imbens & Kolesar
(2016, "Robust standard errors in small samples", Rev. Econ. Stat. 98:701) recommend for few and unequal clusters
the bias-reduced linearisation variance (CR2, Bell & McCaffrey 2002) with a t quantile on Bell and McCaffrey's
degrees of freedom, which fall with the largest documents' shares (`cr2_t`). It is exact arithmetic, so it has no
Monte Carlo error; the studentized bootstrap and BCa did no better on the run's documents.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from rankscale.bootstrap import kish_documents
from rankscale.limits import BIAS_LIMIT, RELIABLE_DESIGN_EFFECT, RELIABLE_DOCUMENTS  # noqa: F401  (re-exported)


def unreliable_design(n_eff: float, n_documents: int) -> str:
    """Why one model's interval over these documents does not hold its level (`RELIABLE_DOCUMENTS`,
    `RELIABLE_DESIGN_EFFECT`), or "" where it does."""
    if not n_eff >= RELIABLE_DOCUMENTS:
        return (f"{n_eff:.1f} effective documents (< {RELIABLE_DOCUMENTS:g}): below the 93% coverage an interval "
                "needs on the run's own documents")  # fmt: skip
    if n_documents / n_eff > RELIABLE_DESIGN_EFFECT:
        return (f"uneven documents: {n_documents} of them worth {n_eff:.1f} (design effect "
                f"{n_documents / n_eff:.1f} > {RELIABLE_DESIGN_EFFECT:g}), where intervals covered under 93% on "
                "the run's own documents")  # fmt: skip
    return ""




@dataclass(frozen=True)
class ModelInterval:
    """An interval of one model's statistic, the Monte Carlo SE of its ends as a share of its width, and where
    there is none, why (`note`)."""

    low: float
    high: float
    mc_error: float = math.nan
    note: str = ""
    method: str = ""  # how, where it differs from its table's default (`JACKKNIFE_T`: BCa's fallback)


def cr2_variance(rates: np.ndarray, weights: np.ndarray, estimate: np.ndarray) -> tuple[np.ndarray, float]:
    """(variance, df) of a ratio estimate = sum_u w_u r_u over documents u with token shares w_u (summing to 1) and
    own rates r_u ([U] or [U, K]): the CR2 variance sum_u w_u^2 (r_u - estimate)^2 / (1 - w_u), w_u being document u's
    leverage, and Bell and McCaffrey's df = (tr M)^2 / tr(M^2), M = (I - 1 w')' A (I - 1 w'), A = diag(w^2 / (1 - w))
    (a homoscedastic working model). Documents of no weight drop out; with one document there is neither (NaN).
    The one variance both the interval (`cr2_t`) and the test (`ratio_test`) read."""
    w = np.asarray(weights, dtype=np.float64)
    keep = w > 0
    w = w[keep] / w[keep].sum()
    r = np.asarray(rates, dtype=np.float64)[keep]
    point = np.asarray(estimate, dtype=np.float64)
    if w.size < 2 or np.any(w >= 1.0):
        return np.full(point.shape, np.nan), math.nan
    a = w**2 / (1.0 - w)
    variance = np.einsum("u,u...->...", a, (r - point) ** 2)
    return variance, _bell_mccaffrey(w)


def cr2_t(rates: np.ndarray, weights: np.ndarray, estimate: np.ndarray, level: float) -> tuple[np.ndarray, ...]:
    """(low, high, df) of a ratio estimate = sum_u w_u r_u (`cr2_variance`'s): estimate -+ t_df sqrt(variance).
    With one document there is no interval."""
    variance, df = cr2_variance(rates, weights, estimate)
    point = np.asarray(estimate, dtype=np.float64)
    if not np.isfinite(df):
        nan = np.full(point.shape, np.nan)
        return nan, nan, math.nan
    half = special.stdtrit(df, 0.5 + level / 2.0) * np.sqrt(variance)
    return point - half, point + half, df


def bell_mccaffrey_df(weights: np.ndarray) -> float:
    """Bell and McCaffrey's degrees of freedom of a weighted mean over documents of token shares `weights` (`cr2_t`),
    (tr M)^2 / tr(M^2); documents of no weight drop out; NaN with fewer than two left."""
    w = np.asarray(weights, dtype=np.float64)
    w = w[w > 0] / w[w > 0].sum() if np.any(w > 0) else w[:0]
    if w.size < 2 or np.any(w >= 1.0):
        return math.nan
    return _bell_mccaffrey(w)


def _bell_mccaffrey(w: np.ndarray) -> float:
    """`bell_mccaffrey_df` of shares already normalised (all > 0, summing to 1, each < 1)."""
    a = w**2 / (1.0 - w)
    centred = np.eye(w.size) - w[None, :] - w[:, None] + float(w @ w)  # (I - 1 w')(I - w 1')
    m = np.sqrt(a)[:, None] * centred * np.sqrt(a)[None, :]
    return float(np.trace(m) ** 2 / (m**2).sum())


UNBOUNDED = (-math.inf, math.inf)
PROBABILITY = (0.0, 1.0)  # a share of tokens or windows
DIFFERENCE = (-1.0, 1.0)  # a difference of two shares of the same tokens (token_churn's net)


def cr2_intervals(rates: np.ndarray, weights: np.ndarray, estimate: np.ndarray, level: float,
                  bounds: tuple[float, float] = UNBOUNDED, certain: np.ndarray | None = None) -> list[ModelInterval]:  # fmt: skip
    """`cr2_t` as one `ModelInterval` per column of `rates` [U, K] (exact: Monte Carlo error 0); documents of no
    weight drop out, and with fewer than two left there is no interval, said so. The ends are clipped to `bounds`,
    the range the population value can take (RBP_k near 1 would otherwise reach past 1): the value lies inside
    it, so the clipped interval holds it exactly when the unclipped one does. A share (`bounds` PROBABILITY) whose
    every document sits at 0 (or 1), or a difference of shares (DIFFERENCE) at 0 in every document, has no CR2
    variance: it gets `boundary_bound`'s instead, unless `certain` (per column) says the value holds by
    construction (RBP_|V| = 1), where the point is its interval."""
    w = np.asarray(weights, dtype=np.float64)
    r = np.where(w[:, None] > 0, np.asarray(rates, dtype=np.float64).reshape(len(w), -1), 0.0)
    point = np.asarray(estimate, dtype=np.float64).ravel()
    low, high, df = cr2_t(r, w / w.sum() if w.sum() > 0 else w, point, level)
    low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    exact = bool(np.isfinite(df))
    note = "" if exact else "fewer than two documents with tokens: no interval"
    out = [ModelInterval(float(lo), float(hi), 0.0 if exact else math.nan, note)
           for lo, hi in zip(np.ravel(low), np.ravel(high), strict=True)]  # fmt: skip
    edges = {PROBABILITY: PROBABILITY, DIFFERENCE: (0.0,)}.get(tuple(bounds), ())  # where a zero variance is no proof
    if not edges or not np.any(w > 0):
        return out
    fixed = np.zeros(len(out), dtype=bool) if certain is None else np.asarray(certain, dtype=bool).ravel()
    for j, value in enumerate(point):
        if value in edges and not fixed[j] and np.all(r[w > 0, j] == value):
            out[j] = boundary_bound(float(value), w, level, tuple(bounds) == DIFFERENCE)
    return out


def boundary_bound(observed: float, weights: np.ndarray, level: float, difference: bool = False) -> ModelInterval:
    """The interval of a share observed as exactly 0 (or 1) in every document (`weights`: each document's trials,
    tokens or windows): [0, upper] ([lower, 1]), the one-sided Clopper-Pearson bound at 1 - (1 - level) / 2 (the
    two-sided interval's end, the other end being the bound itself) with Kish's effective number of documents as
    its trials. A `difference` of two shares at 0 in every document gets [-upper, upper]: a document's difference
    Y lies in [-1, 1], so it is 0 with probability at most 1 - |E Y|, as a share is 0 with at most 1 - E share.

    Why documents, not tokens: without a hit nothing measures how strongly the tokens (overlapping windows) of one
    document go together, so the bound must hold for every intra-document correlation. At the worst, correlation 1,
    each document is one Bernoulli trial of the share, and no hit anywhere has probability (1 - p)^U over its U
    documents; any weaker correlation makes a zero rarer (E (1 - p_u)^d <= 1 - E p_u: (1 - p)^d is convex), so
    Clopper-Pearson on U trials holds its level for every distribution of the documents' own rates. Kish's
    n_eff = (sum w)^2 / sum w^2 <= U is the binomial sample size with the weighted share's variance at that
    correlation (Korn & Graubard 1998's effective sample size, whose design effect a zero cannot estimate); it is
    exact for equal documents and wider than U's bound otherwise, which keeps it honest where the long documents
    have the higher rates. Wilson's bound is not exact at 0 and the beta-binomial's would need the correlation a
    zero does not show. The price: tokens count for nothing, so 0 hits in 35,535 windows of HumanEval's 164
    documents bound the rate by 2.8%, not by the 0.01% independent windows would (benchmarks/zero_bound_coverage.py
    measures it)."""
    w = np.asarray(weights, dtype=np.float64)
    w = w[w > 0]
    n_eff = kish_documents(w)
    tail = (1.0 - level) / 2.0
    end = float(stats.beta.ppf(1.0 - tail, 1.0, n_eff))  # Clopper-Pearson's upper end at 0 successes of n_eff
    how = (f"{1 - tail:.1%} Clopper-Pearson bound on the {n_eff:.1f} effective documents as trials (of {w.size}: "
           "a document's tokens may all go together)")  # fmt: skip
    if difference:
        return ModelInterval(-end, end, 0.0, f"observed 0 in every document: both ends the one-sided {how}")
    if observed == 0.0:
        return ModelInterval(0.0, end, 0.0, f"observed 0 in every document: one-sided upper {how}")
    return ModelInterval(1.0 - end, 1.0, 0.0, f"observed 1 in every document: one-sided lower {how}")


CLIPPED = "bc_bound"  # `ci_method` of a bootstrap statistic estimated at its bound (`clipped_bound`)


def clipped_bound(replicates: np.ndarray, estimate: float, bounds: tuple[float, float],
                  level: float) -> ModelInterval | None:  # fmt: skip
    """The interval of a statistic of document sums whose estimate sits at its bound: a debiased distance clipped at
    0 (its debiased square at or below 0, `rankscale.calibration`). Percentiles commute with the clip, so the
    square's percentile interval becomes [0, the replicates' 1 - (1 - level) / 2 quantile] (its mirror at an upper
    bound): the two-sided interval's end, the other end being the bound itself, as `boundary_bound` gives a share.
    BC has none there (its lower end cannot lie below the estimate). None where the estimate is not at a bound or
    the replicates do not move."""
    reps = np.asarray(replicates, dtype=np.float64).ravel()
    reps = reps[np.isfinite(reps)]
    low, high = bounds
    if estimate not in (low, high) or not math.isfinite(estimate) or reps.size < 2 or np.all(reps == estimate):
        return None
    tail = (1.0 - level) / 2.0
    q = 1.0 - tail if estimate == low else tail
    se = math.sqrt(q * (1.0 - q) / reps.size)  # the order-statistic interval of a quantile (`interval_mc_error`)
    end, below, above = np.quantile(reps, [q, max(q - se, 0.0), min(q + se, 1.0)])
    width = abs(float(end) - estimate)
    mc = float(above - below) / 2.0 / width if width > 0 else math.nan
    side = "upper" if estimate == low else "lower"
    note = (f"estimated at its bound {estimate:g} (the debiased square at or below 0): one-sided {side} bound, the "
            f"replicates' {q:.1%} quantile")  # fmt: skip
    ends = (estimate, float(end)) if estimate == low else (float(end), estimate)
    return ModelInterval(*ends, mc, note, CLIPPED)


def _unit_rates(numerators: np.ndarray, denominators: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(rates n_u / d_u (0 where d_u = 0), weights d_u, estimate sum n / sum d) of one ratio of sums over units."""
    weight = np.asarray(denominators, dtype=np.float64)
    total = weight.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.where(weight > 0, np.asarray(numerators, dtype=np.float64) / weight, 0.0)
        return rates, weight, float(np.asarray(numerators, dtype=np.float64).sum() / total) if total > 0 else math.nan


def ratio_of_sums(numerators: np.ndarray, denominators: np.ndarray, level: float,
                  bounds: tuple[float, float] = UNBOUNDED) -> list[ModelInterval]:  # fmt: skip
    """The interval of sum_u n_u / sum_u d_u over resampling units u ([U] or [U, K] each; d_u >= 0): a share of
    tokens, a rate per window. It is the d-weighted mean of the units' own rates n_u / d_u, so `cr2_t`'s, as every
    ratio of metrics.csv (the tokens' tables, emergence's run rates, the rank tests' mean log-likelihood ratio)."""
    n = np.asarray(numerators, dtype=np.float64)
    d = np.broadcast_to(np.asarray(denominators, dtype=np.float64), n.shape)
    n, d = n.reshape(len(n), -1), d.reshape(len(d), -1)
    out = []
    for j in range(n.shape[1]):
        rates, weight, estimate = _unit_rates(n[:, j], d[:, j])
        if not weight.sum() > 0:
            out.append(ModelInterval(math.nan, math.nan, note="no tokens: no ratio"))
            continue
        out += cr2_intervals(rates[:, None], weight, np.array([estimate]), level, bounds)
    return out


@dataclass(frozen=True)
class RatioTest:
    """A ratio of sums over units, its interval (`ratio_of_sums`) and the test of ratio = 0 from the same CR2
    variance on the same df: t = estimate / se, two-sided p = 2 P(T_df > |t|). So p < 1 - level exactly when the
    interval leaves out 0 (up to rounding at the boundary)."""

    estimate: float
    interval: ModelInterval
    t: float
    df: float
    p_value: float


def ratio_test(numerators: np.ndarray, denominators: np.ndarray, level: float) -> RatioTest:
    """`RatioTest` of sum_u n_u / sum_u d_u ([U] each) against 0: NaN t and p (and interval) where there are
    fewer than two units with a denominator; a ratio every unit shares exactly (variance 0) is 0 with p 1, else
    certain (p 0)."""
    rates, weight, estimate = _unit_rates(numerators, denominators)
    interval = ratio_of_sums(np.asarray(numerators, dtype=np.float64), weight, level)[0]
    if not weight.sum() > 0:
        return RatioTest(estimate, interval, math.nan, math.nan, math.nan)
    variance, df = cr2_variance(rates, weight / weight.sum(), np.array(estimate))
    se = math.sqrt(float(variance))
    if not np.isfinite(df):
        return RatioTest(estimate, interval, math.nan, math.nan, math.nan)
    if se == 0.0:
        return RatioTest(estimate, interval, 0.0 if estimate == 0 else math.copysign(math.inf, estimate), df,
                         1.0 if estimate == 0 else 0.0)  # fmt: skip
    t = estimate / se
    return RatioTest(estimate, interval, t, df, float(2.0 * special.stdtr(df, -abs(t))))
