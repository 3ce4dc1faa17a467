"""The metrics: RBP_k, cross-entropy (nats per token, and bits per byte of text) and the rank-distribution
statistics, each fitted as a law in S.

A `Metric` declares the per-document statistics it reads (`rankscale.statistics`) and computes
its value from their totals: all tokens' totals give the point estimate, each bootstrap
replicate's totals its replicate, by the same `compute`. Metrics of the rank histogram (error
entropy, the fitted lognormal's entropy, ...) read the summary's histogram statistics instead
(`rankscale.conjecture`). Every metric here appears in metrics.csv and powerlaw_fits.csv with
intervals, and any figure can plot it by name (a summary without some metric's statistics, e.g. one made
without the tokenizer's byte lengths, has no row of it). CONTRIBUTING.md, "A new metric", says how to add one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rankscale import calibration as cal
from rankscale.registry import Registry
from rankscale.statistics import (
    BYTES,
    EMERGENCE,
    HITS,
    LOGPROB_SUM,
    STRATA,
    TOKENS,
    DocumentStatistic,
    Totals,
    unique,
)


@dataclass(frozen=True)
class Metric:
    """One quantity per model x dataset (x k): how to compute it, what is fitted, how to label it."""

    name: str  # metrics.csv `metric`
    law: str  # powerlaw_fits.csv `metric`: the quantity fitted as a law in S
    per_k: bool  # one value per k of the grid (last axis of `compute`'s result)
    compute: Callable[[Totals], np.ndarray]
    to_law: Callable[[np.ndarray], np.ndarray]  # metric value -> fitted quantity
    from_law: Callable[[np.ndarray], np.ndarray]  # fitted quantity -> metric value
    law_label: str  # axis label (matplotlib mathtext) of the fitted quantity; "{k}" stands for k
    label: str  # axis label of the metric itself
    statistics: tuple[DocumentStatistic, ...] = ()  # the per-document sums `compute` reads
    # a ratio's denominator (tokens, bytes): `compute` of one document's sums is its own rate, and documents weigh by
    # their share of this (`rankscale.intervals.cr2_t`); None for a metric that is no ratio of document sums
    weight: DocumentStatistic | None = None
    bounds: tuple[float, float] = (-math.inf, math.inf)  # the values it can take, where its intervals' ends stop

    def axis_label(self, k: int | None = None, law: bool = True) -> str:
        return (self.law_label if law else self.label).replace("{k}", str(k))


def identity(y: np.ndarray) -> np.ndarray:
    return np.asarray(y, dtype=np.float64)


def neg_log(y: np.ndarray) -> np.ndarray:
    """-log y; inf where y = 0 (no token of a model, stratum or replicate within the top k), which a law leaves out."""
    with np.errstate(divide="ignore"):
        return -np.log(np.asarray(y, dtype=np.float64))


def exp_neg(y: np.ndarray) -> np.ndarray:
    return np.exp(-np.asarray(y, dtype=np.float64))


def per_token(statistic: DocumentStatistic) -> Callable[[Totals], np.ndarray]:
    """A statistic's total over the number of scored tokens (its mean per token); per k if it has a k axis."""

    def compute(totals: Totals) -> np.ndarray:
        value = np.asarray(totals[statistic], dtype=np.float64)
        n = np.asarray(totals[TOKENS], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):  # NaN: a stratum no token of a replicate falls in
            return value / (n[..., None] if value.ndim > n.ndim else n)

    return compute


def _ce(totals: Totals) -> np.ndarray:
    """Mean -log p per scored token; NaN where no token was scored (a stratum a replicate draws no token of)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -(np.asarray(totals[LOGPROB_SUM], dtype=np.float64) / np.asarray(totals[TOKENS], dtype=np.float64))


def _bpb(totals: Totals) -> np.ndarray:
    """Cross-entropy in bits per byte: the scored targets' summed -log p over ln 2 times their texts' UTF-8 bytes
    (NaN where they hold no byte)."""
    nats = -np.asarray(totals[LOGPROB_SUM], dtype=np.float64)
    n_bytes = np.asarray(totals[BYTES], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_bytes > 0, nats / (math.log(2) * n_bytes), math.nan)


def histogram_metric(name: str, label: str) -> Metric:
    """A statistic of the rank histogram that the summary computes itself (point and replicates), fitted as is."""
    return Metric(name, name, False, lambda totals: np.asarray(totals[name], dtype=np.float64), identity, identity,
                  label, label)  # fmt: skip


def nucleus_metric(p: float) -> Metric:
    """C(p), the share of tokens whose truth lies inside the top-p nucleus; its law in S is -log C(p), the
    relative law of the samplers that cut by probability mass (docs/science.md)."""
    return Metric(
        name=f"nucleus_{round(100 * p)}",
        law=f"neg_log_nucleus_{round(100 * p)}",
        per_k=False,
        compute=lambda totals: cal.coverage(totals, TOKENS, p),
        to_law=neg_log,
        from_law=exp_neg,
        law_label=f"$-\\log C({p})$",
        label=f"nucleus coverage $C({p})$",
        statistics=(TOKENS, cal.NUCLEUS_HITS),
        weight=TOKENS,
        bounds=(0.0, 1.0),
    )


def magnitude(y: np.ndarray) -> np.ndarray:
    """|y|: a signed miscalibration's size, what a law in S can fit."""
    return np.abs(np.asarray(y, dtype=np.float64))


def calibration_metric(name: str, compute: Callable[[Totals], np.ndarray], label: str,
                       statistics: tuple[DocumentStatistic, ...], ratio: bool,
                       bounds: tuple[float, float] = (-math.inf, math.inf), signed: bool = False) -> Metric:  # fmt: skip
    """A calibration metric fitted as is, or (`signed`) by its size as `abs_<name>`; `ratio`: a ratio of document
    sums (the cluster-robust t interval), else a debiased square's root or an interpolated quantile (the
    bootstrap's interval)."""
    law, to_law = (f"abs_{name}", magnitude) if signed else (name, identity)
    law_label = f"|{label}|" if signed else label
    return Metric(name, law, False, compute, to_law, identity, law_label, label, (TOKENS, *statistics),
                  TOKENS if ratio else None, bounds)  # fmt: skip


CALIBRATION_METRICS = (
    *(nucleus_metric(p) for p in cal.NUCLEUS_P),
    calibration_metric("calibration_error", lambda t: cal.calibration_error(t, TOKENS),
                       "top-1 calibration error (RMS, debiased)",
                       (cal.BIN_TOKENS, cal.BIN_TOKENS_SQUARED, cal.BIN_DEVIATION, cal.BIN_DEVIATION_SQUARED),
                       ratio=False, bounds=(0.0, 1.0)),
    calibration_metric("overconfidence", lambda t: cal.overconfidence(t, TOKENS),
                       "top-1 confidence $-$ accuracy", (cal.CONFIDENCE_SUM, cal.TOP1_HITS), ratio=True,
                       bounds=(-1.0, 1.0), signed=True),
    calibration_metric("brier", lambda t: cal.brier(t, TOKENS), "top-1 Brier score", (cal.BRIER_SUM,),
                       ratio=True, bounds=(0.0, 1.0)),
    calibration_metric("entropy_gap", lambda t: cal.entropy_gap(t, TOKENS, LOGPROB_SUM),
                       "CE $-$ mean entropy (nats)", (LOGPROB_SUM, cal.ENTROPY_SUM), ratio=True, signed=True),
    calibration_metric("pit_distance", lambda t: cal.pit_distance(t, TOKENS),
                       "PIT distance from uniform (RMS, debiased)",
                       (cal.PIT_DEVIATION, cal.PIT_DEVIATION_SQUARED, cal.TOKENS_SQUARED),
                       ratio=False, bounds=(0.0, 1.0)),
    calibration_metric("nucleus_star", lambda t: cal.calibrated_nucleus(t, TOKENS),
                       f"calibrated nucleus $p^*({cal.NUCLEUS_Q})$", (cal.NUCLEUS_HITS,), ratio=False,
                       bounds=(0.0, 1.0)),
)


METRICS: Registry[Metric] = Registry(
    "metric",
    (
        Metric(
            name="rbp",
            law="neg_log_rbp",
            per_k=True,
            compute=per_token(HITS),
            to_law=neg_log,
            from_law=exp_neg,
            law_label="$-\\log \\mathrm{RBP}_{{k}}$",
            label="$\\mathrm{RBP}_{{k}}$",
            statistics=(TOKENS, HITS),
            weight=TOKENS,
            bounds=(0.0, 1.0),
        ),
        Metric(
            name="ce",
            law="ce",
            per_k=False,
            compute=_ce,
            to_law=identity,
            from_law=identity,
            law_label="cross-entropy (nats)",
            label="cross-entropy (nats)",
            statistics=(TOKENS, LOGPROB_SUM),
            weight=TOKENS,
        ),
        # CE per byte of text, so that families with different tokenizers compare (docs/science.md)
        Metric(
            name="bpb",
            law="bpb",
            per_k=False,
            compute=_bpb,
            to_law=identity,
            from_law=identity,
            law_label="cross-entropy (bits per byte)",
            label="cross-entropy (bits per byte)",
            statistics=(LOGPROB_SUM, BYTES),
            weight=BYTES,
        ),
        # the decomposition CE = error entropy + self-alignment + confidence (docs/science.md)
        histogram_metric("ee", "error entropy (nats)"),
        histogram_metric("self_alignment", "self-alignment KL(p || q) (nats)"),
        histogram_metric("confidence", "confidence $-\\log C$ (nats)"),
        # what the fitted discrete lognormal implies (the paper's Appendix B)
        histogram_metric("ee_lognormal", "entropy of the fitted lognormal (nats)"),
        histogram_metric("neg_log_p1_lognormal", "$-\\log P(R = 1)$ of the fitted lognormal"),
        # calibration and nucleus coverage (rankscale.calibration): arrays made before the fields have none
        *CALIBRATION_METRICS,
    )
)


def document_statistics() -> list[DocumentStatistic]:
    """Every per-document statistic a summary computes: those the metrics read, the emergence analysis's, the
    strata's (the metrics' own statistics per stratum) and the calibration curves' (calibration.csv)."""
    return unique([s for metric in METRICS.values() for s in metric.statistics] + list(EMERGENCE) + list(STRATA)
                  + list(cal.CALIBRATION))  # fmt: skip


def metric_for_law(law: str) -> Metric:
    """The metric whose fitted quantity is `law` (e.g. 'neg_log_rbp' -> rbp)."""
    for metric in METRICS.values():
        if metric.law == law:
            return metric
    raise KeyError(f"no metric fits {law!r}; known: {[m.law for m in METRICS.values()]}")
