"""The rank distribution: lognormal fits, the conjecture's quantities, the lognormal against
alternative families, and the lognormal's parameters as trends in log S."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import ols
from rankscale.metrics import METRICS
from rankscale.statistics import TOKENS
from rankscale.summary import Summary
from rankscale.tables.base import Replicates, Table, with_intervals

LOGNORMAL = "lognormal"  # the rank test entry of the lognormal itself (the others are its alternatives)


def by_size(summaries: Iterable[Summary]) -> list[Summary]:
    """Summaries ordered as the per-model tables list them: family, dataset, then S."""
    return sorted(summaries, key=lambda s: (s.family, s.dataset, s.S))


def lognormal_table(summaries: Iterable[Summary]) -> pd.DataFrame:
    rows = [
        {
            **s.columns(),
            "mu": s.distribution.mu,
            "sigma": s.distribution.sigma,
            "mu_over_sigma": s.distribution.mu / s.distribution.sigma,
            "truncated": s.truncated,
            "loglik_per_token": s.rank_tests[LOGNORMAL].loglik,
            "mean_log_rank": s.mean_log_rank,
            "note": s.distribution.note,
        }
        for s in summaries
    ]
    return pd.DataFrame(rows).sort_values(["family", "dataset", "S"], kind="stable").reset_index(drop=True)


def conjecture_table(summaries: Iterable[Summary], replicates: Replicates, level: float) -> pd.DataFrame:
    """Per model x dataset: measured CE, the error entropy and CE's decomposition, the fitted lognormal and
    what it implies (the paper's Appendix B: exact, and its closed-form approximation), each with its
    document-bootstrap interval."""
    rows = []
    for s in summaries:
        totals = replicates.totals[s.key]
        row: dict[str, Any] = s.columns()
        ce = float(METRICS["ce"].compute(s.totals()))
        row.update(with_intervals(ce, replicates.at(s.model, s.dataset, "ce"), level, "ce"))
        for name, value in s.distribution.values().items():
            row.update(with_intervals(value, totals[name], level, name))
        rows.append(
            {**row, "replicates": s.distribution_replicates, "truncated": s.truncated, "note": s.distribution.note}
        )
    return pd.DataFrame(rows).sort_values(["family", "dataset", "S"], kind="stable").reset_index(drop=True)


def rank_tests_table(summaries: Iterable[Summary], replicates: Replicates, level: float) -> pd.DataFrame:
    """The lognormal against each alternative family, per model x dataset: log-likelihoods per token,
    Vuong's z and p, and the document-bootstrap interval of the mean log-likelihood ratio."""
    rows = []
    for s in summaries:
        totals = replicates.totals[s.key]
        for name, test in s.rank_tests.items():
            if name == LOGNORMAL:
                continue
            samples = totals[f"llr_{name}"] / totals[TOKENS]
            verdict = "inconclusive"
            if test.p_value < 1 - level:
                verdict = LOGNORMAL if test.z > 0 else name
            rows.append(
                {
                    **s.columns(),
                    "alternative": name,
                    "loglik_lognormal": s.rank_tests[LOGNORMAL].loglik,
                    "loglik_alternative": test.loglik,
                    "alternative_params": " ".join(f"{v:.6g}" for v in test.params),
                    **with_intervals(test.mean_llr, samples, level, "mean_llr"),
                    "z": test.z,
                    "p_value": test.p_value,
                    "better": verdict,
                }
            )
    return (
        pd.DataFrame(rows).sort_values(["family", "dataset", "S", "alternative"], kind="stable").reset_index(drop=True)
    )


TREND_QUANTITIES = ("mu", "sigma", "mu_over_sigma")


def _trend_value(mu: Any, sigma: Any, quantity: str) -> Any:
    """mu, sigma or mu / sigma (of a point fit, or of every replicate at once)."""
    return mu / sigma if quantity == "mu_over_sigma" else mu if quantity == "mu" else sigma


def lognormal_trends_table(summaries: Sequence[Summary], replicates: Replicates, level: float) -> pd.DataFrame:
    """Hypothesis 2 of the paper: mu, sigma and mu/sigma of the fitted lognormal, linear in log S,
    per family x dataset, with slope, intercept and R^2 refitted on every replicate."""
    rows = []
    groups: dict[tuple[str, str], list[Summary]] = {}
    for s in summaries:
        groups.setdefault((s.family, s.dataset), []).append(s)
    for (family, dataset), group in sorted(groups.items()):
        group = sorted(group, key=lambda s: s.S)
        x = np.log(np.array([s.S for s in group], dtype=np.float64))
        for quantity in TREND_QUANTITIES:
            y = np.array([_trend_value(s.distribution.mu, s.distribution.sigma, quantity) for s in group])
            samples = np.stack(
                [_trend_value(replicates.totals[s.key]["mu"], replicates.totals[s.key]["sigma"], quantity)
                 for s in group], axis=1,
            )  # fmt: skip
            row: dict[str, Any] = {"family": family, "dataset": dataset, "quantity": quantity, "n_models": len(group)}
            if len(np.unique(x)) < 2 or not np.all(np.isfinite(y)):
                rows.append({**row, "note": "needs two sizes with a fitted lognormal"})
                continue
            fit, reps = ols(x, y[None, :].astype(np.float64)), ols(x, samples)
            for p in ("slope", "intercept", "r2"):
                row.update(with_intervals(float(fit[p][0]), reps[p], level, p))
            rows.append({**row, "note": ""})
    return pd.DataFrame(rows)


def finals_of(summaries: Iterable[Summary]) -> list[Summary]:
    return [s for s in summaries if s.final]


TABLES = [
    Table(
        name="lognormal_fits",
        build=lambda inputs: lognormal_table(inputs.summaries),
        caption=(
            "Discrete truncated lognormal fits of the rank distribution, per model and dataset, by "
            "maximum likelihood over the rank histogram: P(R = r) is proportional to F(r + 1/2) - F(r - 1/2) "
            "on r = 1..|V|, F the lognormal CDF with parameters mu, sigma of log R (``truncated = False``: "
            "normalised over r = 1..inf instead, ``analysis.lognormal.truncate``). Intervals: conjecture.csv."
        ),
    ),
    Table(
        name="conjecture",
        build=lambda inputs: conjecture_table(inputs.summaries, inputs.needed(), inputs.level),
        resampled=True,
        settings=("level",),
        caption=(
            "The lognormal conjecture, per model and dataset: measured cross-entropy ``ce``; the error entropy "
            "``ee`` of the empirical rank distribution (``ee_mm``: Miller-Madow corrected) and CE's exact "
            "decomposition ce = ee + self_alignment + confidence (arXiv 2510.04067); the fitted lognormal "
            "``mu``, ``sigma`` and what it implies for a calibrated model (the paper's Appendix B): its entropy "
            "``ee_lognormal`` (the CE it predicts), ``neg_log_p1_lognormal`` (the -log RBP_1 it predicts), "
            "-log RBP_k at the ``analysis.law_k``, and the paper's closed-form approximation "
            "``ce_appendix_b`` / ``neg_log_p1_appendix_b``. Intervals: document bootstrap with ``replicates`` "
            "replicates (``analysis.lognormal.replicates``: every one refits the lognormal)."
        ),
    ),
    Table(
        name="rank_distribution_tests",
        build=lambda inputs: rank_tests_table(inputs.summaries, inputs.needed(), inputs.level),
        resampled=True,
        settings=("level",),
        caption=(
            "Is the rank distribution lognormal? Per model and dataset, maximum-likelihood fits on 1..|V| of "
            "the discrete truncated lognormal and of each alternative (a truncated discrete power law "
            "``zipf``, a discrete stretched exponential ``stretched_exp``, a discrete truncated "
            "``loglogistic``): log-likelihood per token, Vuong's normalised log-likelihood-ratio test (``z`` > 0 "
            "favours the lognormal; two-sided ``p_value``), and, since tokens of one document are not "
            "independent, the document-bootstrap interval of the mean log-likelihood ratio. ``better``: which "
            "one the test prefers at the interval level, or inconclusive."
        ),
    ),
    Table(
        name="lognormal_trends",
        build=lambda inputs: lognormal_trends_table(finals_of(inputs.summaries), inputs.needed(), inputs.level),
        resampled=True,
        settings=("level",),
        caption=(
            "Hypothesis 2 of the paper: mu, sigma and mu/sigma of the fitted lognormal against log S, per family "
            "and dataset: slope, intercept and R² of the least-squares line, with intervals from refitting "
            "on every bootstrap replicate."
        ),
    ),
]
