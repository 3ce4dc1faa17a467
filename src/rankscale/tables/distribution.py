"""The rank distribution: lognormal fits, the conjecture's quantities, the lognormal against
alternative families, and the lognormal's parameters as trends in log S."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale import sections
from rankscale.bootstrap import interval_mc_error
from rankscale.intervals import BIAS_LIMIT, bca, ratio_test
from rankscale.laws import ols
from rankscale.metrics import METRICS
from rankscale.rankdist import FAMILIES, bound_note
from rankscale.statistics import TOKENS
from rankscale.summary import RankTest, Summary
from rankscale.tables.base import Replicates, Table, largest, optional_columns, with_intervals
from rankscale.tables.model_intervals import bootstrap_interval, design_columns, metric_intervals
from rankscale.tables.noise import covariance_df, line_with_sizes, size_level_columns
from rankscale.tables.selection import finals_of

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
        ce = np.atleast_1d(METRICS["ce"].compute(s.totals()))
        found = {"ce": metric_intervals(s, METRICS["ce"], ce, replicates, level)[0]}
        row.update({"ce": float(ce[0])})
        for name, value in s.distribution.values().items():
            found[name] = bootstrap_interval(s, name, np.asarray(totals[name], dtype=np.float64), value, replicates,
                                             level)  # fmt: skip
            row[name] = value
        for name, got in found.items():
            row.update({f"{name}_ci_low": got.low, f"{name}_ci_high": got.high})
        notes = "; ".join(f"{name}: {got.note}" for name, got in found.items() if got.note and not s.distribution.note)
        rows.append({**row, "replicates": s.distribution_replicates,
                     "ci_mc_error": largest([got.mc_error for got in found.values()]), "truncated": s.truncated,
                     "note": s.distribution.note, "ci_note": notes})  # fmt: skip
    return pd.DataFrame(rows).sort_values(["family", "dataset", "S"], kind="stable").reset_index(drop=True)


NOT_IDENTIFIED = "not identified"  # the `better` of a comparison where a fit ran to a bound: no winner
UNDECIDED = "undecided"  # the `better` of a comparison whose interval of the mean log-likelihood ratio holds 0


def rank_test_note(lognormal: RankTest, name: str, test: RankTest) -> str:
    """Which fit of a comparison has which parameter at which bound ("" if neither): then the log-likelihoods
    and the test compare the limits the fits ran to, and no family wins."""
    if lognormal.note or test.note:
        return lognormal.note or test.note
    parts = [
        bound_note(family, fit.params, fit.at_bound)
        for family, fit in ((LOGNORMAL, lognormal), (name, test))
        if fit.at_bound
    ]
    if not parts:
        return ""
    return (
        "; ".join(parts) + ": not identified, so this compares the limits the fits ran to (where the search "
        "stopped), not fitted distributions"
    )


def _llr_test(s: Summary, name: str, value: float, samples: np.ndarray, replicates: Replicates,
              level: float) -> dict[str, float]:  # fmt: skip
    """Vuong's test by documents: the mean log-likelihood ratio per token is a ratio of document sums (the fits held
    fixed), so its interval is the cluster-robust t over the documents' own means (`rankscale.intervals.ratio_test`,
    exact: Monte Carlo error 0), as metrics.csv's ratios, and its t and p come from that same variance and df; tokens
    of one document are not independent, so a token-level variance (Vuong's own) would claim certainty the
    documents do not give. Without the documents' sums: BCa without acceleration of the replicates, and no t or p."""
    units = replicates.units.get(s.key)
    t = df = p = math.nan
    if units is not None and f"llr_{name}" in units:
        test = ratio_test(units[f"llr_{name}"], units[TOKENS], level)
        found, t, df, p = test.interval, test.t, test.df, test.p_value
    else:
        found = bca(samples, value, np.zeros(0), level)
    return {"mean_llr": value, "mean_llr_ci_low": found.low, "mean_llr_ci_high": found.high,
            "mean_llr_ci_mc_error": found.mc_error, "t": t, "df": df, "p_value": p}  # fmt: skip


def interval_verdict(low: float, high: float, name: str) -> str:
    """Which family the interval of the mean log-likelihood ratio (lognormal - `name`) favours: the lognormal where
    it lies above 0, `name` where below, `UNDECIDED` where it holds 0 (or there is none)."""
    if low > 0:
        return LOGNORMAL
    if high < 0:
        return name
    return UNDECIDED


def rank_tests_table(summaries: Iterable[Summary], replicates: Replicates, level: float) -> pd.DataFrame:
    """The lognormal against each alternative family, per model x dataset: log-likelihoods per token, the
    mean log-likelihood ratio with its interval over documents and Vuong's test by documents (t, df, p from the
    same variance), and the family the interval favours; a fit with a parameter at a bound shows no value for it,
    claims no winner and says so in `note`."""
    rows = []
    for s in summaries:
        totals = replicates.totals[s.key]
        lognormal = s.rank_tests[LOGNORMAL]
        for name, test in s.rank_tests.items():
            if name == LOGNORMAL:
                continue
            samples = totals[f"llr_{name}"] / totals[TOKENS]
            note = rank_test_note(lognormal, name, test)
            found = _llr_test(s, name, test.mean_llr, samples, replicates, level)
            verdict = NOT_IDENTIFIED if note else interval_verdict(found["mean_llr_ci_low"],
                                                                   found["mean_llr_ci_high"], name)  # fmt: skip
            params = [
                math.nan if p in test.at_bound else v for p, v in zip(FAMILIES[name].params, test.params, strict=True)
            ]
            rows.append(
                {
                    **s.columns(),
                    "alternative": name,
                    "loglik_lognormal": lognormal.loglik,
                    "loglik_alternative": test.loglik,
                    "alternative_params": " ".join(f"{v:.6g}" for v in params),
                    **found,
                    **design_columns(s),
                    "better": verdict,
                    "note": note,
                }
            )
    table = pd.DataFrame(rows).sort_values(["family", "dataset", "S", "alternative"], kind="stable")
    return optional_columns(table.reset_index(drop=True), "note")  # a `note` column where some fit is at a bound


TREND_QUANTITIES = ("mu", "sigma", "mu_over_sigma")


def _trend_value(mu: Any, sigma: Any, quantity: str) -> Any:
    """mu, sigma or mu / sigma (of a point fit, or of every replicate at once)."""
    return mu / sigma if quantity == "mu_over_sigma" else mu if quantity == "mu" else sigma


def lognormal_trends_table(
    summaries: Sequence[Summary], replicates: Replicates, level: float, seed: int | None
) -> pd.DataFrame:
    """Hypothesis 2 of the paper: mu, sigma and mu/sigma of the fitted lognormal, linear in log S,
    per family x dataset, with slope, intercept and R^2 refitted on every replicate (the sizes' scatter around
    the line included: `rankscale.tables.noise.line_with_sizes`)."""
    rows = []
    groups: dict[tuple[str, str], list[Summary]] = {}
    for s in summaries:
        groups.setdefault((s.family, s.dataset), []).append(s)
    for (family, dataset), everyone in sorted(groups.items()):
        # a model whose lognormal ran to a bound (or could not be fitted) has no (mu, sigma) to put on the line
        group = sorted((s for s in everyone if _has_lognormal(s)), key=lambda s: s.S)
        left_out = sorted((s for s in everyone if not _has_lognormal(s)), key=lambda s: s.S)
        said = (
            "left out, no identified lognormal (a parameter at a bound, or none fitted; see lognormal_fits.csv): "
            + ", ".join(s.model for s in left_out)
            if left_out
            else ""
        )
        x = np.log(np.array([s.S for s in group], dtype=np.float64))
        for quantity in TREND_QUANTITIES:
            row: dict[str, Any] = {"family": family, "dataset": dataset, "quantity": quantity, "n_models": len(group)}
            if len(np.unique(x)) < 2:
                rows.append({**row, "note": "; ".join(filter(None, ["needs two sizes with a fitted lognormal", said]))})
                continue
            y = np.array([_trend_value(s.distribution.mu, s.distribution.sigma, quantity) for s in group])
            samples = np.stack(
                [_trend_value(replicates.totals[s.key]["mu"], replicates.totals[s.key]["sigma"], quantity)
                 for s in group], axis=1,
            )  # fmt: skip
            groups = [s.replica_of or s.model for s in group]
            size_level, samples = line_with_sizes(x, y, samples, groups, seed, (family, dataset, quantity),
                                                  covariance_df([s.n_eff_documents for s in group]))  # fmt: skip
            fit, reps = ols(x, y[None, :].astype(np.float64)), ols(x, samples)
            for p in ("slope", "intercept", "r2"):
                row.update(with_intervals(float(fit[p][0]), reps[p], level, p))
            row["ci_mc_error"] = largest([interval_mc_error(reps[p], level) for p in ("slope", "intercept", "r2")])
            if size_level is not None:
                row.update(size_level_columns(size_level))
            noise = "documents" + ("+seeds" if len(set(groups)) < len(groups) else "")
            rows.append({**row, "noise": noise + ("+sizes" if size_level is not None else ""), "note": said})
    return pd.DataFrame(rows)


def _has_lognormal(s: Summary) -> bool:
    """The model's lognormal was fitted inside its bounds: NaN mu or sigma means it ran to one (or could not be
    fitted at all), which the distribution's note says."""
    return bool(np.isfinite(s.distribution.mu) and np.isfinite(s.distribution.sigma))


TABLES = [
    Table(
        name="lognormal_fits",
        section=sections.LOGNORMAL,
        build=lambda inputs: lognormal_table(inputs.summaries),
        caption=(
            "Discrete truncated lognormal fits of the rank distribution, per model and dataset, by "
            "maximum likelihood over the rank histogram: P(R = r) is proportional to F(r + 1/2) - F(r - 1/2) "
            "on r = 1..|V|, F the lognormal CDF with parameters mu, sigma of log R (``truncated = False``: "
            "normalised over r = 1..inf instead, ``analysis.lognormal.truncate``). Intervals: conjecture.csv. A fit with "
            "a parameter at its optimizer's bound (mu at -50: ranks mostly at 1, the fit running towards a power law) "
            "is where the search stopped, not an estimate: mu, sigma and mu_over_sigma are empty and ``note`` says "
            "which parameter is at which bound."
        ),
    ),
    Table(
        name="conjecture",
        section=sections.LOGNORMAL,
        build=lambda inputs: conjecture_table(inputs.summaries, inputs.needed(), **inputs.declared()),
        resampled=True,
        settings=("level",),
        caption=(
            "The lognormal conjecture, per model and dataset: measured cross-entropy ``ce``; the error entropy "
            "``ee`` of the empirical rank distribution and CE's exact decomposition ce = ee + self_alignment + "
            "confidence (arXiv 2510.04067), each the jackknife over documents of its plug-in value (``ee_mm``: the "
            "plug-in's Miller-Madow correction, for comparison); the fitted lognormal "
            "``mu``, ``sigma`` and what it implies for a calibrated model (the paper's Appendix B): its entropy "
            "``ee_lognormal`` (the CE it predicts), ``neg_log_p1_lognormal`` (the -log RBP_1 it predicts), "
            "-log RBP_k at the ``analysis.law_k``, and the paper's closed-form approximation "
            "``ce_appendix_b`` / ``neg_log_p1_appendix_b``. Intervals: ``ce``'s as metrics.csv's (a cluster-robust t "
            "over documents); the others BCa over a document bootstrap with ``replicates`` replicates "
            "(``analysis.lognormal.replicates``; the lognormal refitted by one Newton step) and the jackknife over "
            "documents where BCa is stable under a redraw of the replicates, else the jackknife t over documents "
            "(as metrics.csv's ``jackknife_t``; ``ci_note`` names it), empty where the statistic is biased under "
            f"resampling beyond {2 * BIAS_LIMIT:g} of an SE (for ee, self_alignment and confidence the replicates "
            "are their jackknife's recentred on it, and the bias is the jackknife's residual bias), with "
            "``ci_note`` saying which and why; ``ci_mc_error``: the "
            "largest Monte Carlo standard error of the row's interval ends, as a share of that interval's width "
            "(how far another draw of as many replicates would move them; for BCa the delta method at its adjusted "
            "levels, 0 for the jackknife t). Where the lognormal is at "
            "a bound of its optimizer (or cannot be fitted), mu, sigma and everything derived from the fit are empty, "
            "values and intervals, and ``note`` says why; the measured quantities stay."
        ),
    ),
    Table(
        name="rank_distribution_tests",
        section=sections.LOGNORMAL,
        build=lambda inputs: rank_tests_table(inputs.summaries, inputs.needed(), **inputs.declared()),
        resampled=True,
        settings=("level",),
        caption=(
            "Is the rank distribution lognormal? Per model and dataset, maximum-likelihood fits on 1..|V| of "
            "the discrete truncated lognormal and of each alternative (a truncated discrete power law "
            "``zipf``, a discrete stretched exponential ``stretched_exp``, a discrete truncated "
            "``loglogistic``): log-likelihood per token, and the mean log-likelihood ratio per token ``mean_llr`` "
            "(lognormal - alternative: > 0 favours the lognormal) with its interval over documents, the cluster-robust "
            "t of the documents' own means as metrics.csv's ratios (``mean_llr_ci_mc_error``: the Monte Carlo "
            "standard error of its ends as a share of its width, 0 for this exact interval; ``ci_reliable`` / "
            "``ci_note`` as in metrics.csv). Vuong's test by documents: ``t`` = mean_llr / its cluster-robust "
            "standard error, on ``df`` degrees of freedom (Bell and McCaffrey's, the interval's), and the two-sided "
            "``p_value`` from them, so p < 1 - level exactly when the interval leaves out 0 (tokens of one document "
            "are not independent: Vuong's token-level variance claimed certainty the documents do not give). "
            "``better``: the family on whose side the interval lies (``lognormal`` above 0, the alternative below), "
            "or 'undecided' where it holds 0. A fit with a parameter at its "
            "optimizer's bound shows it as nan in ``alternative_params``; ``note`` (the last column) says which "
            "fit has which parameter at which bound: the row then compares the limits the fits ran to, not "
            "fitted distributions, and ``better`` is 'not identified'."
        ),
    ),
    Table(
        name="lognormal_trends",
        section=sections.LOGNORMAL,
        build=lambda inputs: lognormal_trends_table(finals_of(inputs.summaries), inputs.needed(), **inputs.declared()),
        resampled=True,
        settings=("level", "seed"),
        caption=(
            "Hypothesis 2 of the paper: mu, sigma and mu/sigma of the fitted lognormal against log S, per family "
            "and dataset: slope, intercept and R² of the least-squares line, with intervals from refitting "
            "on every bootstrap replicate, which carry the sizes' scatter around the line too (``tau2``, in the "
            "quantity's units, by REML with the replicates' full covariance; ``lof_q``, ``lof_df``, ``lof_p``, "
            "``lof_n_eff``: lack of fit against documents alone, not testable (``lof_p`` empty) under 20 effective "
            "documents; ``df``: the interval as Student's t; as in "
            "powerlaw_fits.csv; ``ci_mc_error``: the largest Monte Carlo standard error of the three intervals' ends "
            "as a share of the interval's width). Models without an identified lognormal (a parameter at a bound, or "
            "none fitted) are left out, and ``note`` names them; ``n_models`` counts the models fitted. Fewer "
            "than two sizes left: a note row."
        ),
    ),
]
