"""BCa over the document bootstrap for statistics of the whole rank histogram, and where it is unstable its fallback,
the jackknife t over documents (docs/science.md, "Uncertainty"; benchmarks/bca_redraw.py, model_interval_coverage.py).

Statistics of the whole rank histogram (error entropy, CE's decomposition, the lognormal's) are biased under
resampling: their replicates can all lie on one side of the estimate. BCa (Efron 1987) corrects the percentiles for
that bias (z0) and for skew (the acceleration, from the jackknife over documents); where the bias is too large for it
(the estimate outside its central replicates), no interval is reported, with the reason, never one stretched to reach
the estimate. Near its bias limit BCa is unstable (z0 has a Monte Carlo error of its own): there the jackknife t over
documents takes its place, chosen by the jackknife's bias, which no redraw of the replicates moves (`stable_choice`).
Ratios of document sums take the cluster-robust t instead (`rankscale.intervals`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
from scipy import special, stats

from rankscale.intervals import ModelInterval

MC_GROUPS = 20  # groups of replicates the Monte Carlo error's jackknife deletes one at a time


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


# z0 is itself estimated from B replicates: its Monte Carlo SE is sqrt(p (1 - p) / B) / phi(z0) (p the share below the
# estimate; 0.089 at B = 200), so a gate on z0 flips with a redraw of the replicates (issue 59: pydoc's ee_lognormal,
# |z0| up to 0.23, lost its interval in 30% of redraws; a gate |z0| + 1.96 se < 0.25 switched BCa and its fallback in
# 23-43% of them). The gate reads the jackknife's bias instead (`jackknife_bias`: (m - 1)(mean - estimate) / se, on
# z0's scale, but exact arithmetic): BCa where it is within STABLE_SHARE of the limit, the jackknife t
# (`jackknife_t`, which reads no replicate) up to BEYOND_FACTOR limits, none beyond; and none where z0 less Z0_MARGIN
# of its Monte Carlo SEs lies beyond BEYOND_FACTOR limits too (self-alignment on HumanEval: a jackknife bias of 0.48,
# its replicates all on one side), a margin that a statistic inside the limit does not cross by chance
# (benchmarks/bca_redraw.py).
Z0_MARGIN = 1.96
STABLE_SHARE = 0.5
BEYOND_FACTOR = 2.0
# BCa reads its ends at the levels Phi(z0 + (z0 + z) / (1 - a (z0 + z))); the acceleration a (and z0) push one of them
# into a tail that B replicates hardly resolve (pydoc's a = 0.12 puts the upper end at the 99.5% point: 1 of 200
# replicates beyond it), where the end is an extreme replicate and moves with every redraw. BCa only where each end
# leaves at least MIN_TAIL_REPLICATES beyond it (half the 5 of a 95% interval of 200 replicates), at the jackknife's z0.
MIN_TAIL_REPLICATES = 2.5
JACKKNIFE_T = "jackknife_t"  # `ModelInterval.method` of the fallback (`ci_method` in metrics.csv)
BOOTSTRAP_SE_T = "bootstrap_se_t"  # `ModelInterval.method` of `unsmooth_interval`


@dataclass(frozen=True)
class Bias:
    """BCa's bias correction from B replicates: the estimate's `share` of replicates below it (ties half),
    z0 = Phi^-1(share), and z0's Monte Carlo SE from the share's binomial SE (the delta method)."""

    share: float
    z0: float
    se: float
    replicates: int

    @classmethod
    def of(cls, replicates: np.ndarray, estimate: float) -> Bias:
        v = replicates[np.isfinite(replicates)]
        share = (np.count_nonzero(v < estimate) + 0.5 * np.count_nonzero(v == estimate)) / max(v.size, 1)
        if not 0.0 < share < 1.0:
            return cls(float(share), math.copysign(math.inf, share - 0.5), math.nan, int(v.size))
        z0 = float(special.ndtri(share))
        se = math.sqrt(share * (1.0 - share) / v.size) / float(stats.norm.pdf(z0))
        return cls(float(share), z0, se, int(v.size))


def bca_levels(
    replicates: np.ndarray, estimate: float, a: float, level: float, max_z0: float = math.inf
) -> tuple[float, float] | str:
    """BCa's percentile levels of the replicates, or why there are none: the estimate's share of replicates below
    it gives z0, which BCa can correct only while the estimate lies inside the central `level` of them (and, with
    `max_z0`, only while |z0| stays within it)."""
    v = replicates[np.isfinite(replicates)]
    if v.size == 0:
        return "no finite replicate"
    bias = Bias.of(v, estimate)
    share, z0 = bias.share, bias.z0
    z_end = special.ndtri(0.5 + level / 2.0)
    if not 0.0 < share < 1.0:
        return f"{ONE_SIDED} (bias beyond any correction)"
    if abs(z0) >= z_end:
        return f"{ONE_SIDED} but {min(share, 1 - share):.1%} (bias z0 = {z0:.2f}, beyond BCa's correction)"
    if abs(z0) > max_z0:
        return (f"biased under resampling: the estimate sits at the {share:.0%} point of its replicates (z0 = "
                f"{z0:.2f}, beyond {max_z0:g}), where BCa does not cover")  # fmt: skip
    levels = adjusted_levels(z0, a, level)
    if levels is None:
        return f"acceleration {a:.3f} too large for BCa"
    return levels


def adjusted_levels(z0: float, a: float, level: float) -> tuple[float, float] | None:
    """BCa's percentile levels Phi(z0 + (z0 + z) / (1 - a (z0 + z))) at z = -/+ z_(1 + level)/2, None where the
    acceleration leaves a denominator <= 0 (BCa breaks down)."""
    z_end = special.ndtri(0.5 + level / 2.0)
    s = z0 + np.array([-z_end, z_end])
    denominator = 1.0 - a * s
    if np.any(denominator <= 0):
        return None
    low, high = special.ndtr(z0 + s / denominator)
    return float(low), float(high)


def bca_level_slopes(z0: float, a: float, level: float) -> np.ndarray:
    """d(level)/d(share) of BCa's two percentile levels: how far a Monte Carlo error in the share below the estimate
    (z0's) moves the levels BCa reads its ends at (`bca_mc_error`)."""
    z_end = special.ndtri(0.5 + level / 2.0)
    s = z0 + np.array([-z_end, z_end])
    d = 1.0 - a * s
    return stats.norm.pdf(z0 + s / d) * (1.0 + 1.0 / d**2) / stats.norm.pdf(z0)


def bca_mc_error(replicates: np.ndarray, bias: Bias, levels: tuple[float, float], slopes: np.ndarray,
                 width: float) -> float:  # fmt: skip
    """The Monte Carlo SE of BCa's ends as a share of `width` (the larger end's), by the delta method on the
    replicates' empirical CDF F: an end e solves F(e) = alpha(F(estimate)), so f(e) de = alpha' dF(estimate) - dF(e),
    and with B replicates Var dF(x) = F(x)(1 - F(x)) / B, Cov(dF(x), dF(y)) = (F(min) - F(x) F(y)) / B. The first
    term is z0's own redraw error carried to the level, the second the quantile's; 1 / f(e) is the spacing of the
    replicates' quantiles at alpha -/+ one binomial SE (the order-statistic interval). Finite wherever there is an
    interval; 0 where the replicates are tied at an end."""
    v = np.sort(replicates[np.isfinite(replicates)])
    n, p = v.size, bias.share
    out = []
    for alpha, slope in zip(levels, slopes, strict=True):
        h = math.sqrt(alpha * (1.0 - alpha) / n)
        lo_q, hi_q = max(alpha - h, 0.0), min(alpha + h, 1.0)
        spacing = float(np.quantile(v, hi_q) - np.quantile(v, lo_q)) / (hi_q - lo_q) if hi_q > lo_q else 0.0
        variance = slope**2 * p * (1.0 - p) + alpha * (1.0 - alpha) - 2.0 * slope * (min(p, alpha) - p * alpha)
        out.append(spacing * math.sqrt(max(variance, 0.0) / n))
    return float(max(out) / width)


def jackknife_t(estimate: float, jackknife: np.ndarray, level: float, df: float = math.nan) -> ModelInterval:
    """BCa's fallback (`stable_choice`): estimate -/+ t_df se, se the jackknife's over documents,
    sqrt((m - 1) / m sum d^2) (d: each leave-one-out value less their mean), df Bell and McCaffrey's of the documents'
    token shares where the caller knows them (`bell_mccaffrey_df`, as a ratio's `cr2_t`: 2.1 on pydoc's documents),
    else Satterthwaite's effective number of the variance's terms less one, (sum d^2)^2 / sum d^4 - 1 (m - 1 for
    equal terms), at least 1. It reads no bootstrap replicate, so a redraw of them cannot move or remove it: its Monte
    Carlo error is 0. Centred on the estimate: a bias within the limit (half an SD) costs a symmetric interval under
    2 points of coverage."""
    j = np.asarray(jackknife, dtype=np.float64)
    j = j[np.isfinite(j)]
    m = j.size
    d2 = (j - j.mean()) ** 2 if m else j
    if m < 3 or not float(d2.sum()) > 0.0:
        return ModelInterval(math.nan, math.nan, note="fewer than three documents' jackknife values: no interval")
    se = math.sqrt((m - 1) / m * float(d2.sum()))
    if not math.isfinite(df):
        df = max(1.0, float(d2.sum()) ** 2 / float((d2**2).sum()) - 1.0)
    half = float(special.stdtrit(df, 0.5 + level / 2.0)) * se
    return ModelInterval(estimate - half, estimate + half, 0.0, method=JACKKNIFE_T,
                         note=f"jackknife t over documents (df {df:.1f})")  # fmt: skip


def jackknife_bias(estimate: float, jackknife: np.ndarray) -> float:
    """The jackknife's bias of the estimate in units of its jackknife SE, (m - 1)(mean - estimate) / se: on z0's scale
    (z0 is about -bias / SD) but exact arithmetic, NaN without three finite leave-one-out values."""
    j = np.asarray(jackknife, dtype=np.float64)
    j = j[np.isfinite(j)]
    m = j.size
    if m < 3:
        return math.nan
    se = math.sqrt((m - 1) / m * float(((j - j.mean()) ** 2).sum()))
    return (m - 1) * (float(j.mean()) - estimate) / se if se > 0 else math.nan


def stable_choice(bias: Bias, a: float, jackknife_ratio: float, level: float, max_z0: float) -> str:
    """Which interval a statistic gated at |z0| <= `max_z0` gets, decided so that a redraw of the replicates does
    not change it: "none: ..." where the bias is beyond BEYOND_FACTOR limits, by the jackknife over documents (exact
    arithmetic, `jackknife_bias`) or by z0 less Z0_MARGIN of its Monte Carlo SEs; "bca" where
    the jackknife's bias is within STABLE_SHARE of the limit and BCa's levels at the jackknife's z0 (-bias) and the
    acceleration leave MIN_TAIL_REPLICATES beyond each end; else "fallback" (`jackknife_t`). Without a jackknife (a
    table built without the documents' sums), BCa where z0 plus its margin is inside the limit, else none."""
    if not math.isfinite(max_z0):
        return "bca"
    if abs(jackknife_ratio) > BEYOND_FACTOR * max_z0:
        return (f"none: biased under resampling: the jackknife over documents puts the estimate's bias at "
                f"{abs(jackknife_ratio):.2f} of its SE (beyond {BEYOND_FACTOR * max_z0:g}), where BCa does "
                "not cover")  # fmt: skip
    if abs(bias.z0) - Z0_MARGIN * bias.se > BEYOND_FACTOR * max_z0:
        return (f"none: biased under resampling: the estimate sits at the {bias.share:.0%} point of its replicates "
                f"(z0 = {bias.z0:.2f} +- {bias.se:.2f}, beyond {BEYOND_FACTOR * max_z0:g}), where BCa does not "
                "cover")  # fmt: skip
    if math.isfinite(jackknife_ratio):
        levels = adjusted_levels(-jackknife_ratio, a, level)
        resolved = levels is not None and bias.replicates * min(levels[0], 1.0 - levels[1]) >= MIN_TAIL_REPLICATES
        return "bca" if abs(jackknife_ratio) <= STABLE_SHARE * max_z0 and resolved else "fallback"
    if abs(bias.z0) + Z0_MARGIN * bias.se < max_z0:
        return "bca"
    return (f"none: biased under resampling: z0 = {bias.z0:.2f} +- {bias.se:.2f} is not inside {max_z0:g} by "
            f"{Z0_MARGIN:g} of its Monte Carlo SEs, and there is no jackknife over documents to fall back on")  # fmt: skip


def unsmooth_interval(replicates: np.ndarray, estimate: float, jackknife: np.ndarray, level: float,
                      max_z0: float, df: float = math.nan) -> ModelInterval:  # fmt: skip
    """The interval of an estimator that is no smooth function of the documents' sums (Chao2's confidence,
    `rankscale.unseen_ranks`, and self-alignment through it): estimate -/+ t_df SD, SD its recentred replicates'
    (`ci_method = bootstrap_se_t`), df Bell and McCaffrey's as the jackknife t's (without one: Satterthwaite's from
    the leave-one-out values); none where the replicates' z0, less Z0_MARGIN of its Monte Carlo SEs, puts the bias
    beyond BEYOND_FACTOR limits. The jackknife's bias (`jackknife_bias`), which `stable_choice` reads, is no
    estimate of such an estimator's bias (on the run's documents it read -2.3 to +2.6 SEs where the bootstrap
    measured -0.4 to +0.3), and its SE overstates (the jackknife t covered 99.5-100% on HumanEval's documents, the
    replicates' SD 97.5-99%; benchmarks/histogram_bias.py). A redraw of the replicates moves the ends by the SD's
    Monte Carlo error, sqrt((kurtosis - 1) / 4B) of it (`mc_error`, a share of the width), and never removes it
    but through z0's test."""
    finite = np.asarray(replicates, dtype=np.float64).ravel()
    finite = finite[np.isfinite(finite)]
    if finite.size < 3:
        return ModelInterval(math.nan, math.nan, note="fewer than three finite replicates")
    if np.all(finite == estimate):
        return ModelInterval(estimate, estimate, 0.0)
    bias = Bias.of(finite, estimate)
    if not 0.0 < bias.share < 1.0 or abs(bias.z0) - Z0_MARGIN * bias.se > BEYOND_FACTOR * max_z0:
        return ModelInterval(math.nan, math.nan, note=(
            f"biased under resampling: the estimate sits at the {bias.share:.0%} point of its replicates (z0 = "
            f"{bias.z0:.2f} +- {bias.se:.2f}, beyond {BEYOND_FACTOR * max_z0:g})"))  # fmt: skip
    sd = float(np.std(finite, ddof=1))
    if not math.isfinite(df):
        j = np.asarray(jackknife, dtype=np.float64)
        d2 = (j[np.isfinite(j)] - np.nanmean(j)) ** 2 if np.isfinite(j).sum() >= 3 else np.zeros(0)
        df = max(1.0, float(d2.sum()) ** 2 / float((d2**2).sum()) - 1.0) if float(d2.sum()) > 0 else math.inf
    half = (
        float(special.stdtrit(df, 0.5 + level / 2.0)) if math.isfinite(df) else float(special.ndtri(0.5 + level / 2.0))
    )
    half *= sd
    kurtosis = float(np.mean((finite - finite.mean()) ** 4) / np.mean((finite - finite.mean()) ** 2) ** 2)
    mc = math.sqrt(max(kurtosis - 1.0, 0.0) / (4.0 * finite.size)) / 2.0  # each end's SE, as a share of the width
    return ModelInterval(estimate - half, estimate + half, mc, method=BOOTSTRAP_SE_T,
                         note=f"replicates' SD with t (df {df:.1f}): an estimator of the unseen rank errors")  # fmt: skip


def bca(
    replicates: np.ndarray,
    estimate: float,
    jackknife: np.ndarray,
    level: float,
    max_z0: float = math.inf,
    df: float = math.nan,
) -> ModelInterval:
    """BCa interval of `estimate` from its bootstrap `replicates` and its leave-one-document-out values, with the
    Monte Carlo error of its ends (`mc_error`, `bca_mc_error`); no interval (and why) where it cannot contain the
    estimate. With a finite `max_z0` (a statistic of the rank histogram, `BIAS_LIMIT`), BCa only where it is stable
    under a redraw of the replicates, the jackknife t where it is not, none where the bias is beyond the limit
    (`stable_choice`); `df`: the jackknife t's degrees of freedom (`jackknife_t`)."""
    reps = np.asarray(replicates, dtype=np.float64).ravel()
    a = acceleration(jackknife)
    finite = reps[np.isfinite(reps)]
    if finite.size and np.all(finite == estimate):  # no spread: the statistic does not move with the documents
        return ModelInterval(estimate, estimate, 0.0)
    if finite.size == 0:
        return ModelInterval(math.nan, math.nan, note="no finite replicate")
    bias = Bias.of(finite, estimate)
    if math.isfinite(max_z0) and 0.0 < bias.share < 1.0:
        choice = stable_choice(bias, a, jackknife_bias(estimate, jackknife), level, max_z0)
        if choice.startswith("none: "):
            return ModelInterval(math.nan, math.nan, note=choice.removeprefix("none: "))
        if choice == "fallback":
            ratio = jackknife_bias(estimate, jackknife)
            why = (f"BCa unstable here (jackknife bias {ratio:.2f} of its SE, acceleration {a:.3f}, z0 = {bias.z0:.2f} "
                   f"+- {bias.se:.2f} from {bias.replicates} replicates)")  # fmt: skip
            found = jackknife_t(estimate, jackknife, level, df)
            if math.isfinite(found.low):
                return replace(found, note=f"{found.note}: {why}")
            return ModelInterval(math.nan, math.nan, note=f"{why}, and {found.note}")
        max_z0 = math.inf  # stable: BCa as it is
    levels = bca_levels(finite, estimate, a, level, max_z0)
    if isinstance(levels, str):
        return ModelInterval(math.nan, math.nan, note=levels)
    low, high = np.quantile(finite, levels)
    if not low < estimate < high:
        return ModelInterval(math.nan, math.nan, note="the bias-corrected interval does not contain the estimate")
    slopes = bca_level_slopes(bias.z0, a, level)
    return ModelInterval(float(low), float(high), bca_mc_error(finite, bias, levels, slopes, float(high - low)))


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
