"""One model's intervals over its documents: a cluster-robust t interval for ratios dominated by a few documents,
BCa for statistics biased under resampling, and the Monte Carlo error of a bootstrap interval's ends
(docs/science.md, "Uncertainty"; benchmarks/model_interval_coverage.py measures them on the run's own documents).

A metric such as RBP_k or CE is a ratio, a sum over documents of hits over a sum of tokens, so a weighted mean of the
documents' own rates with weights their token shares. Where one document holds a third of the tokens, a percentile
interval (even Hesterberg's expanded one) is too narrow: it behaves as if there were many documents. Imbens & Kolesar
(2016, "Robust standard errors in small samples", Rev. Econ. Stat. 98:701) recommend for few and unequal clusters
the bias-reduced linearisation variance (CR2, Bell & McCaffrey 2002) with a t quantile on Bell and McCaffrey's
degrees of freedom, which fall with the largest documents' shares (`cr2_t`). It is exact arithmetic, so it has no
Monte Carlo error; the studentized bootstrap and BCa did no better on the run's documents. Statistics of the whole rank histogram (error entropy, CE's
decomposition, the lognormal's) are biased under resampling: their replicates can all lie on one side of the
estimate. BCa (Efron 1987) corrects the percentiles for that bias (z0) and for skew (the acceleration, from the
jackknife over documents); where the bias is too large for it (the estimate outside its central replicates), no
interval is reported, with the reason, never one stretched to reach the estimate.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
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


MC_GROUPS = 20  # groups of replicates the Monte Carlo error's jackknife deletes one at a time


@dataclass(frozen=True)
class ModelInterval:
    """An interval of one model's statistic, the Monte Carlo SE of its ends as a share of its width, and where
    there is none, why (`note`)."""

    low: float
    high: float
    mc_error: float = math.nan
    note: str = ""


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
    centred = np.eye(w.size) - w[None, :] - w[:, None] + float(w @ w)  # (I - 1 w')(I - w 1')
    m = np.sqrt(a)[:, None] * centred * np.sqrt(a)[None, :]
    return variance, float(np.trace(m) ** 2 / (m**2).sum())


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


def leave_one_out(units: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every total with one unit left out, [U, ...] (`units`: each statistic's sums per unit [U, ...]): a smooth
    statistic of the totals evaluated on them is its jackknife over documents, BCa's acceleration (`bca`)."""
    return {name: np.asarray(v, dtype=np.float64).sum(axis=0)[None] - np.asarray(v, dtype=np.float64)
            for name, v in units.items()}  # fmt: skip


def acceleration(jackknife: np.ndarray) -> float:
    """BCa's acceleration from leave-one-document-out values: sum d^3 / (6 (sum d^2)^1.5), d = mean - value
    (Efron & Tibshirani 1993, eq. 14.15); documents whose value is not finite are left out."""
    j = np.asarray(jackknife, dtype=np.float64)
    j = j[np.isfinite(j)]
    if j.size < 2:
        return 0.0
    d = j.mean() - j
    scale = float(np.abs(d).max())
    if not 0.0 < scale < math.inf:
        return 0.0
    d = d / scale  # the ratio is scale-free; unscaled, values of 1e-120 (a rate of long runs) underflow to 0 / 0
    return float((d**3).sum() / (6.0 * float((d**2).sum()) ** 1.5))


ONE_SIDED = "bootstrap replicates lie on one side of the estimate"


def bca_levels(
    replicates: np.ndarray, estimate: float, a: float, level: float, max_z0: float = math.inf
) -> tuple[float, float] | str:
    """BCa's percentile levels of the replicates, or why there are none: the estimate's share of replicates below
    it gives z0, which BCa can correct only while the estimate lies inside the central `level` of them (and, with
    `max_z0`, only while |z0| stays within it)."""
    v = replicates[np.isfinite(replicates)]
    if v.size == 0:
        return "no finite replicate"
    share = (np.count_nonzero(v < estimate) + 0.5 * np.count_nonzero(v == estimate)) / v.size
    z_end = special.ndtri(0.5 + level / 2.0)
    if not 0.0 < share < 1.0:
        return f"{ONE_SIDED} (bias beyond any correction)"
    z0 = float(special.ndtri(share))
    if abs(z0) >= z_end:
        return f"{ONE_SIDED} but {min(share, 1 - share):.1%} (bias z0 = {z0:.2f}, beyond BCa's correction)"
    if abs(z0) > max_z0:
        return (f"biased under resampling: the estimate sits at the {share:.0%} point of its replicates (z0 = "
                f"{z0:.2f}, beyond {max_z0:g}), where BCa does not cover")  # fmt: skip
    z = np.array([-z_end, z_end])
    denominator = 1.0 - a * (z0 + z)
    if np.any(denominator <= 0):
        return f"acceleration {a:.3f} too large for BCa"
    low, high = special.ndtr(z0 + (z0 + z) / denominator)
    return float(low), float(high)


def bca(
    replicates: np.ndarray, estimate: float, jackknife: np.ndarray, level: float, max_z0: float = math.inf
) -> ModelInterval:
    """BCa interval of `estimate` from its bootstrap `replicates` and its leave-one-document-out values, with the
    Monte Carlo error of its ends (`mc_error`); no interval (and why) where it cannot contain the estimate or where
    its bias |z0| exceeds `max_z0`."""
    reps = np.asarray(replicates, dtype=np.float64).ravel()
    a = acceleration(jackknife)
    finite = reps[np.isfinite(reps)]
    if finite.size and np.all(finite == estimate):  # no spread: the statistic does not move with the documents
        return ModelInterval(estimate, estimate, 0.0)

    def ends(keep: np.ndarray) -> tuple[float, float] | str:
        v = reps[keep]
        levels = bca_levels(v, estimate, a, level, max_z0)
        if isinstance(levels, str):
            return levels
        low, high = np.quantile(v[np.isfinite(v)], levels)
        if not low < estimate < high:
            return "the bias-corrected interval does not contain the estimate"
        return float(low), float(high)

    return _with_mc_error(reps.size, ends)


def studentized(
    replicates: np.ndarray, replicate_se: np.ndarray, estimate: float, se: float, level: float
) -> ModelInterval:
    """Bootstrap-t interval: estimate - t*_(1 -/+ level / 2) se, t*_b = (replicate_b - estimate) / replicate_se_b,
    each replicate's standard error computed inside it as `se` is from the sample (the delta method's)."""
    reps = np.asarray(replicates, dtype=np.float64).ravel()
    b_se = np.asarray(replicate_se, dtype=np.float64).ravel()
    if not np.isfinite(se) or se <= 0:
        finite = reps[np.isfinite(reps)]
        if se == 0 and finite.size and np.all(finite == estimate):
            return ModelInterval(estimate, estimate, 0.0)
        return ModelInterval(math.nan, math.nan, note="no standard error of the estimate")
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (reps - estimate) / b_se  # a replicate of no spread and no move is NaN (dropped), of a move +-inf
    tail = (1.0 - level) / 2.0

    def ends(keep: np.ndarray) -> tuple[float, float] | str:
        v = t[keep]
        v = v[~np.isnan(v)]
        if v.size < 2:
            return "fewer than two studentized replicates"
        high_t, low_t = np.quantile(v, [1.0 - tail, tail])
        low, high = estimate - high_t * se, estimate - low_t * se
        if not low < estimate < high:
            return "the studentized replicates lie on one side of 0"
        return float(low), float(high)

    return _with_mc_error(reps.size, ends)


def _with_mc_error(n: int, ends: Callable[[np.ndarray], tuple[float, float] | str]) -> ModelInterval:
    """The interval from all `n` replicates, with `mc_error`: the grouped (delete-a-group) jackknife of its ends
    over MC_GROUPS groups of replicates, the larger end's SE as a share of the width.

    Deleting a group of d = n / G replicates, not one, keeps the jackknife consistent for a quantile (Shao & Wu
    1989: delete-d with d >> sqrt(n)); it reruns the whole rule (BCa's z0 too), so every Monte Carlo source of the
    ends is in it. `tests/test_intervals.py` checks it against re-drawing the replicates."""
    whole = ends(np.ones(n, dtype=bool))
    if isinstance(whole, str):
        return ModelInterval(math.nan, math.nan, note=whole)
    groups = min(MC_GROUPS, n)
    label = np.arange(n) % groups
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        partial = [ends(label != g) for g in range(groups)]
    values = np.array([p for p in partial if not isinstance(p, str)], dtype=np.float64).reshape(-1, 2)
    width = whole[1] - whole[0]
    if len(values) < groups or not width > 0:  # some group's deletion leaves no interval: its ends are unstable
        return ModelInterval(*whole, mc_error=math.inf if len(values) < groups else math.nan)
    se = np.sqrt((groups - 1) / groups * ((values - values.mean(axis=0)) ** 2).sum(axis=0))
    return ModelInterval(*whole, mc_error=float(se.max() / width))
