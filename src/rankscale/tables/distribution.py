"""The rank distribution: lognormal fits, the conjecture's quantities, the lognormal against
alternative families, and the lognormal's parameters as trends in log S."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bca import bca
from rankscale.bootstrap import interval_mc_error
from rankscale.intervals import ratio_test
from rankscale.laws import ols
from rankscale.metrics import METRICS
from rankscale.rankdist import FAMILIES, bound_note
from rankscale.statistics import TOKENS
from rankscale.summary import RankTest, Summary
from rankscale.tables.base import Replicates, TableInputs, largest, optional_columns, with_intervals
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


def build_lognormal_fits(inputs: TableInputs) -> pd.DataFrame:
    """lognormal_fits.csv from its job's inputs (its entry: rankscale.tables.entries.distribution)."""
    return lognormal_table(inputs.summaries)


def build_conjecture(inputs: TableInputs) -> pd.DataFrame:
    """conjecture.csv from its job's inputs (its entry: rankscale.tables.entries.distribution)."""
    return conjecture_table(inputs.summaries, inputs.needed(), **inputs.declared())


def build_rank_distribution_tests(inputs: TableInputs) -> pd.DataFrame:
    """rank_distribution_tests.csv from its job's inputs (its entry: rankscale.tables.entries.distribution)."""
    return rank_tests_table(inputs.summaries, inputs.needed(), **inputs.declared())


def build_lognormal_trends(inputs: TableInputs) -> pd.DataFrame:
    """lognormal_trends.csv from its job's inputs (its entry: rankscale.tables.entries.distribution)."""
    return lognormal_trends_table(finals_of(inputs.summaries), inputs.needed(), **inputs.declared())
