"""One model's metric intervals as metrics.csv and conjecture.csv report them: the cluster-robust t interval of a
ratio of document sums (RBP_k, CE, bits per byte) from the documents' own rates, BCa of a statistic of the rank
histogram from its replicates and its jackknife over documents (`rankscale.intervals`)."""

from __future__ import annotations

import math

import numpy as np

from rankscale.bca import BOOTSTRAP_SE_T, JACKKNIFE_T, bca, unsmooth_interval
from rankscale.decomposition_jackknife import UNSMOOTH
from rankscale.intervals import (
    BIAS_LIMIT,
    CLIPPED,
    PROBABILITY,
    ModelInterval,
    bell_mccaffrey_df,
    clipped_bound,
    cr2_intervals,
    unreliable_design,
)
from rankscale.metrics import Metric
from rankscale.statistics import TOKENS, Totals
from rankscale.summary import Summary, left_out
from rankscale.tables.base import Replicates

CR2_T = "cr2_t"  # `ci_method` of a ratio's interval (`rankscale.intervals.cr2_t`)
BCA = "bca"  # of a bootstrap interval with the jackknife's acceleration
BC = "bc"  # of one without (tables built without unit totals): bias-corrected percentiles, acceleration 0
# a histogram statistic where BCa is unstable: `rankscale.bca.JACKKNIFE_T` (`ModelInterval.method`)


def interval_method(metric: Metric, units: Totals | None) -> str:
    """How `metric_intervals` computes a metric's interval: cr2_t for a ratio where the documents' sums are
    loaded, else BCa (BC where there is no jackknife: no unit totals, or a bootstrap file written before it)."""
    if units is not None and metric.weight is not None:
        return CR2_T
    return BCA if units is not None and left_out(metric.name) in units else BC


def metric_intervals(
    summary: Summary, metric: Metric, values: np.ndarray, replicates: Replicates, level: float
) -> list[ModelInterval]:
    """One interval per value of `metric` (per k of a per-k metric) of one model on one dataset."""
    units = replicates.units.get(summary.key)
    method = interval_method(metric, units)
    if method == CR2_T:
        assert units is not None and metric.weight is not None
        return ratio_intervals(metric, units, values, level, certain(metric, summary.k, summary.vocab_size))
    reps = np.asarray(replicates.metric(summary.model, summary.dataset, metric.name), dtype=np.float64)
    reps = reps.reshape(reps.shape[0], -1)
    limit = BIAS_LIMIT if not metric.statistics else math.inf  # a statistic of the rank histogram: biased
    # of document sums: a debiased distance estimated at its bound 0 has a one-sided bound
    return [(clipped_bound(reps[:, j], float(values[j]), metric.bounds, level) if metric.statistics else None)
            or bootstrap_interval(summary, metric.name, reps[:, j], float(values[j]), replicates, level, limit)
            for j in range(len(values))]  # fmt: skip


def bootstrap_interval(summary: Summary, name: str, reps: np.ndarray, value: float, replicates: Replicates,
                       level: float, limit: float = BIAS_LIMIT) -> ModelInterval:  # fmt: skip
    """BCa of one statistic from its replicates and, where the unit totals hold it, its jackknife over documents
    (else BC); with a `limit` (a histogram statistic's bias: `rankscale.intervals.BIAS_LIMIT`), BCa only where it is
    stable, else the jackknife t on the documents' Bell-McCaffrey df, or none (`rankscale.bca.stable_choice`)."""
    units = replicates.units.get(summary.key)
    jackknife, df = np.zeros(0), math.nan
    if units is not None and left_out(name) in units:
        jackknife = np.asarray(units[left_out(name)], dtype=np.float64)
        if TOKENS.name in units:
            df = bell_mccaffrey_df(np.asarray(units[TOKENS.name], dtype=np.float64))
    if name in UNSMOOTH and math.isfinite(limit):
        return unsmooth_interval(reps, value, jackknife, level, limit, df)
    return bca(reps, value, jackknife, level, limit, df)


def ratio_intervals(metric: Metric, units: Totals, values: np.ndarray, level: float,
                    fixed: np.ndarray | None = None) -> list[ModelInterval]:  # fmt: skip
    """`rankscale.intervals.cr2_intervals` of a ratio metric from its units' own rates (`Metric.compute` of each
    unit's sums): exact arithmetic (no Monte Carlo error); a share at 0 or 1 in every document gets a one-sided
    bound (`rankscale.intervals.boundary_bound`), except where `fixed` (per value, `certain`) says it holds by
    construction: there the point is its interval."""
    assert metric.weight is not None
    weight = np.asarray(units[metric.weight], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.asarray(metric.compute(units), dtype=np.float64).reshape(len(weight), -1)
    return cr2_intervals(rates, weight, values, level, metric.bounds, fixed)


def certain(metric: Metric, ks: list[int], vocab_size: int) -> np.ndarray:
    """Which values of a per-k share of tokens ranked within k (RBP_k) hold by construction: k >= |V|, since no
    rank exceeds the vocabulary (RBP_|V| = 1 in every document is no observation)."""
    share = metric.per_k and tuple(metric.bounds) == PROBABILITY
    return np.array([share and k >= vocab_size for k in ks], dtype=bool)


def design_columns(summary: Summary) -> dict[str, object]:
    """`ci_reliable` and `ci_note` of a row of one model's cluster-robust t intervals beside metrics.csv (strata,
    emergence, the rank tests): False, with why, where its documents are too few or too uneven for them to hold
    their level (`rankscale.intervals.unreliable_design`), as metrics.csv says of its own."""
    why = unreliable_design(summary.n_eff_documents, summary.n_documents)
    return {"ci_reliable": not why, "ci_note": why}


def one_model_interval(replicates: Replicates, model: str, dataset: str, metric: Metric, k: int | None,
                       level: float) -> ModelInterval | None:  # fmt: skip
    """One model's interval of a ratio metric (at k) as metrics.csv gives it (`ratio_intervals`), where its
    documents' sums are loaded; None otherwise."""
    units = replicates.units.get((model, dataset))
    if units is None or metric.weight is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.atleast_1d(metric.compute(Totals({n: np.asarray(v).sum(axis=0) for n, v in units.items()})))
    found = ratio_intervals(metric, units, values, level)
    return found[replicates.column(model, dataset, k) if k is not None else 0]


# why a rank-histogram statistic's BCa interval is never marked reliable (benchmarks/RESULTS.md)
BCA_SHORT = ("BCa of a rank-histogram statistic covered 52-96% on the run's own documents (the lognormal's entropy "
             "91-93% on HumanEval's, the error entropy 96% at n_eff 133 but 83-86% at 22-41): read it as a lower "
             "bound on the uncertainty")  # fmt: skip
# why the bootstrap interval of a statistic of document sums that is no ratio (a debiased distance, a quantile) is not
SUMS_SHORT = ("the bootstrap's bias-corrected percentiles of a debiased distance or an interpolated quantile of "
              "document sums covered 76-98% on the run's own documents (calibration_error 94.8-97.9% on HumanEval's "
              "where it has an interval, 80-98% on pydoc's; nucleus_star 91.6-94.8% on HumanEval's, 76-90% on "
              "pydoc's)")  # fmt: skip
# the one place that names a bootstrap interval of document sums whose coverage held 94-97.5% in every design of at
# least 20 effective documents (benchmarks/RESULTS.md, "Calibration metrics: coverage on the run's own documents":
# pit_distance 95.0-96.7% on HumanEval's, two models): reliable where a ratio's cr2_t is, by the documents' design
MEASURED_SUMS = ("pit_distance",)
# ratios whose cluster-robust t fell short of 94% at 20 effective documents or more (the same section): a share so near
# 1 leaves each document a handful of misses, too few for the t interval; never reliable, whatever the design
UNDERCOVERED_RATIOS = {
    "nucleus_99": "the cluster-robust t of C(0.99) covered 88.0-94.0% on HumanEval's documents at n_eff 22-136",
    "nucleus_95": "the cluster-robust t of C(0.95) covered 93.2-94.8% on HumanEval's documents at n_eff 22-136",
}
JACKKNIFE_SHORT = ("the jackknife t of a rank-histogram statistic where BCa is unstable: its coverage on the run's own "
                   "documents is not measured")  # fmt: skip
# why the one-sided bound of a debiased distance estimated at 0 (`rankscale.intervals.clipped_bound`) is not
CLIPPED_SHORT = ("a one-sided bound of a distance estimated at 0 covered 0-87% of the truths where it arose on "
                 "HumanEval's documents (in up to 19% of corpora at n_eff 22, 8% at 42), all of pydoc's: read it as "
                 "the scale of the noise, not as a bound")  # fmt: skip
UNSEEN_SHORT = ("Chao2's confidence (and self-alignment through it) with the replicates' SD and t covered 97.5-100% on "
                "the run's own documents (conservative), self-alignment 94% at HumanEval n_eff 22")  # fmt: skip


def reliability(found: ModelInterval, n_eff: float, n_documents: int, method: str,
                histogram: bool = True, metric_name: str = "") -> tuple[bool, str]:  # fmt: skip
    """(reliable, note): an interval holds its level where it exists, is a ratio's cluster-robust t and its
    documents are not too few or too uneven (`rankscale.intervals.unreliable_design`); the note says why not (why
    there is none, if there is none). `histogram`: a statistic of the rank histogram, not of document sums; `metric_name`:
    the metric's, a bootstrap interval of document sums of `MEASURED_SUMS` taking the documents' design alone."""
    exists = bool(np.isfinite(found.low) and np.isfinite(found.high))
    if not exists:
        return False, found.note
    if found.low == found.high:  # no spread: the point is its interval, exactly (RBP_|V| = 1)
        return True, found.note
    short = {JACKKNIFE_T: JACKKNIFE_SHORT, BOOTSTRAP_SE_T: UNSEEN_SHORT, CLIPPED: CLIPPED_SHORT}.get(
        found.method, BCA_SHORT if histogram else SUMS_SHORT)
    measured = method == CR2_T or (method == BC and not histogram and metric_name in MEASURED_SUMS and not found.method)
    why = unreliable_design(n_eff, n_documents) or ("" if measured else short) or UNDERCOVERED_RATIOS.get(metric_name, "")
    return not why, "; ".join(filter(None, [why, found.note]))  # a one-sided bound says so
