"""The laws in S: fits with intervals, exponents compared, forms compared.

Every fit uses the form `analysis.law_form` names (default: the pure power law), through the
FitForm interface; every interval refits the form on the document-bootstrap replicates. What other tables
share of fitting laws is in rankscale.tables.lawkit; the out-of-sample check in rankscale.tables.extrapolation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bootstrap import interval_mc_error, spread_to_noise
from rankscale.laws import FORMS, FitForm, Points, compare_forms
from rankscale.laws.few_documents import UNTESTED_LAWS
from rankscale.metrics import CALIBRATION_METRICS, METRICS
from rankscale.tables.base import Replicates, TableInputs, law_parameters, rows_frame, typed, with_intervals
from rankscale.tables.lawkit import GROUP, biased_models, exponent_contrast, fit_or_note
from rankscale.tables.noise import SIZE_LEVEL_COLUMNS, LawNoise, Noise, law_documents, law_keys, law_replicates
from rankscale.tables.selection import FitIndex, LawKey, finals, note_last, select, size_note


def fits_table(
    metrics: pd.DataFrame,
    form: FitForm,
    replicates: Replicates | None,
    level: float,
    refits: int,
    seed: int | None,
) -> pd.DataFrame:
    """Fit `form` to each metric's fitted quantity per (family, dataset, metric, k).

    The fitted quantity is the metric's `to_law` (e.g. -log RBP_k); a group that cannot be
    fitted (one size, or RBP_k = 1 so -log RBP_k = 0) gets a `note` instead of numbers. With
    replicates, each parameter gets the percentile interval of its refits, and `snr` says how far
    the sizes' spread stands above the resampling noise.
    """
    rows = []
    for (family, dataset, name, k), group in metrics.groupby(GROUP, dropna=False, sort=True):
        metric = METRICS[name]
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        points = Points.of(group["S"].to_numpy())
        row: dict[str, Any] = {
            "family": family,
            "dataset": dataset,
            "metric": metric.law,
            "k": k,
            "n_models": len(group),
            "S_min": int(group["S"].min()),
            "S_max": int(group["S"].max()),
        }
        law, note = fit_or_note(form, points, y)
        row.update(law.row() if law is not None else dict.fromkeys(form.columns, math.nan))
        if replicates is not None:
            out = {f"{p}_ci_{side}": math.nan for p in form.columns for side in ("low", "high")}
            document_reps = law_replicates(group, replicates)
            out["snr"] = spread_to_noise(y, list(document_reps.T)) if np.all(y > 0) else math.nan
            noise = Noise.of(group, len(document_reps), seed).with_documents(law_documents(group, replicates))
            label = noise.label
            if law is not None:
                honest = LawNoise.of(form, law, points, y, document_reps, noise, law_keys(family, dataset, name, k))
                refitted, documents = honest.refit_both(form, law, points, refits)
                parameters, unidentified = law_parameters(form, law, refitted, level, float(np.median(y)))
                out.update({name: value for name, value in parameters.items() if name not in law.row()})
                if form.exponent is not None:  # the interval documents (and seeds) alone would give, beside
                    alone = with_intervals(law.row()[form.exponent], documents[form.exponent], level, "documents")
                    out.update({f"{form.exponent}_ci_low_documents": alone["documents_ci_low"],
                                f"{form.exponent}_ci_high_documents": alone["documents_ci_high"]})  # fmt: skip
                    out["ci_mc_error"] = interval_mc_error(refitted[form.exponent], level)
                    if form.exponent in unidentified:
                        out[f"{form.exponent}_ci_low_documents"] = out[f"{form.exponent}_ci_high_documents"] = math.nan
                out.update(honest.columns())
                if metric.law in UNTESTED_LAWS:  # its test's level measured well above 5%: not testable (lof_p empty)
                    out["lof_p"] = math.nan
                if form.bounds:
                    out["not_identified"] = "; ".join(unidentified.values())
                label = honest.label
            out["noise"] = label
            out["ci_note"] = biased_models(group) if law is not None else ""
            if out["ci_note"]:  # the per-model rule refused some model's replicates: so does the law
                out.update({c: math.nan for c in out if "_ci_" in c or c == "ci_mc_error"})
            row.update(out)
        rows.append({**row, "note": note})
    return typed(pd.DataFrame(rows))


# the exponents compared: each law against cross-entropy and -log RBP_1 (the paper's coincidence,
# and the laws the lognormal and the error entropy imply); -log RBP_k at every k against CE; every calibration
# law against -log RBP_1 (does -log C(p)'s exponent grow with p as alpha grows with k? nucleus_fits.csv)
CONTRASTS: tuple[tuple[str, str, int | None], ...] = (
    ("ee", "ce", None),
    ("ee", "neg_log_rbp", 1),
    ("ee_lognormal", "ce", None),
    ("ee_lognormal", "neg_log_rbp", 1),
    ("neg_log_p1_lognormal", "ce", None),
    ("neg_log_p1_lognormal", "neg_log_rbp", 1),
    *((metric.law, "neg_log_rbp", 1) for metric in CALIBRATION_METRICS),
)

CONTRAST_KEYS = ("metric", "k", "versus", "versus_k")  # with family and dataset, what a contrast row is of
CONTRAST_COLUMNS = ("family", "dataset", *CONTRAST_KEYS, "alpha", "alpha_versus", "difference", "ci_low", "ci_high",
                    "p_value", "replicates", *SIZE_LEVEL_COLUMNS, "noise", "note")  # fmt: skip


def fits_columns(form: FitForm, keys: Sequence[str] = ("family", "dataset")) -> list[str]:
    """The columns of a fitted row of `fits_table` (fitted as `form`), with `keys` first: a table of laws keeps
    them as its header when it has no rows."""
    intervals = [c for p in form.columns for c in (f"{p}_ci_low", f"{p}_ci_high")]
    documents = ([f"{form.exponent}_ci_low_documents", f"{form.exponent}_ci_high_documents", "ci_mc_error"]
                 if form.exponent else [])  # fmt: skip
    return [*keys, "metric", "k", "n_models", "S_min", "S_max", *form.columns, *intervals, "snr", *documents,
            *SIZE_LEVEL_COLUMNS, *(["not_identified"] if form.bounds else []), "noise", "ci_note", "note"]  # fmt: skip


def contrasts_table(
    metrics: pd.DataFrame,
    fits: pd.DataFrame,
    replicates: Replicates,
    level: float,
    form: FitForm,
    refits: int,
    seed: int | None,
) -> pd.DataFrame:
    """The exponent of one law minus that of another, per family x dataset: paired-bootstrap interval and p-value.

    Both laws are refitted on the same replicates (the same documents resampled for every model
    and metric), so the difference's interval carries their correlation. Histogram statistics
    have fewer replicates (`analysis.lognormal.replicates`): they pair with the first draws.
    """
    if form.exponent is None:
        return typed(rows_frame([], CONTRAST_COLUMNS))
    index = FitIndex(fits, form)
    rows = []
    for (family, dataset), frame in metrics.groupby(["family", "dataset"], sort=True):
        if note := size_note(frame["S"]):
            rows.append({"family": family, "dataset": dataset, **dict.fromkeys(CONTRAST_KEYS), "note": note})
            continue
        ks = sorted(int(k) for k in select(frame, metric="rbp")["k"].dropna().unique())
        pairs = [("neg_log_rbp", k, "ce", None) for k in ks] + [(a, None, b, kb) for a, b, kb in CONTRASTS]
        for law, k, versus, versus_k in pairs:
            first, second = LawKey(family, dataset, law, k), LawKey(family, dataset, versus, versus_k)
            row = _contrast(frame, index, replicates, level, form, refits, seed, first, second)
            if row:
                rows.append({"family": family, "dataset": dataset, **row})
    return note_last(typed(rows_frame(rows, CONTRAST_COLUMNS)))


def _contrast(
    frame: pd.DataFrame,
    fits: FitIndex,
    replicates: Replicates,
    level: float,
    form: FitForm,
    refits: int,
    seed: int | None,
    first: LawKey,
    second: LawKey,
) -> dict[str, Any] | None:
    """One contrast row, or None where either law was not fitted or they cover different models."""
    assert form.exponent is not None
    fit_a, fit_b = first.select(fits, form), second.select(fits, form)
    group_a, group_b = first.points(frame), second.points(frame)
    if fit_a is None or fit_b is None or list(group_a["model"]) != list(group_b["model"]):
        return None
    reps_a, reps_b = law_replicates(group_a, replicates), law_replicates(group_b, replicates)
    n = min(len(reps_a), len(reps_b))  # histogram statistics: the first draws of the same stream
    noise = Noise.of(group_a, n, seed)  # the same models: the same seed draws for both laws
    sizes = Points.of(group_a["S"].to_numpy())
    ys = tuple(METRICS[g["metric"].iloc[0]].to_law(g["value"].to_numpy(dtype=np.float64)) for g in (group_a, group_b))
    keys = (first.family, first.dataset)
    documents = (law_documents(group_a, replicates), law_documents(group_b, replicates))
    contrast = exponent_contrast(form, sizes, (fit_a.law, fit_b.law), ys, (reps_a[:n], reps_b[:n]), noise, keys, refits,
                                 documents)  # fmt: skip
    row = {
        "metric": first.law,
        "k": first.k,
        "versus": second.law,
        "versus_k": second.k,
        "alpha": fit_a.value(form.exponent),
        "alpha_versus": fit_b.value(form.exponent),
        **contrast.row(level),
    }
    if first.law in UNTESTED_LAWS or second.law in UNTESTED_LAWS:  # as the law's own row (fits_table)
        row["lof_p"] = math.nan
    if why := "; ".join(filter(None, (biased_models(group_a), biased_models(group_b)))):
        row.update(ci_low=math.nan, ci_high=math.nan, p_value=math.nan, note=f"{first.law}: {why}")  # as its fit's
    return row


contrast_row = _contrast  # one paired contrast of two laws, for tables that read a few (paper_claims)


def form_comparison_table(metrics: pd.DataFrame, forms: Sequence[str], law_k: Sequence[int]) -> pd.DataFrame:
    """Every form of `forms` fitted to every (family, dataset, metric) and, for RBP_k, every k of `law_k`:
    parameters, leave-one-out RMSE and AICc in log space, and the preferred form of each group."""
    rows = []
    wanted = metrics[metrics["k"].isna() | metrics["k"].isin(list(law_k))]
    for (family, dataset, name, k), group in wanted.groupby(GROUP, dropna=False, sort=True):
        metric = METRICS[name]
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        base = {"family": family, "dataset": dataset, "metric": metric.law, "k": k, "n_models": len(group)}
        compared = compare_forms(Points.of(group["S"].to_numpy()), y, [FORMS[f] for f in forms])
        rows.extend({**base, **r} for r in compared)
    return typed(pd.DataFrame(rows))


def build_powerlaw_fits(inputs: TableInputs) -> pd.DataFrame:
    """powerlaw_fits.csv from its job's inputs (its entry: rankscale.tables.entries.laws)."""
    return fits_table(
            finals(inputs.tables["metrics"]), replicates=inputs.replicates, **inputs.declared()
        )


def build_exponent_contrasts(inputs: TableInputs) -> pd.DataFrame:
    """exponent_contrasts.csv from its job's inputs (its entry: rankscale.tables.entries.laws)."""
    return contrasts_table(
            finals(inputs.tables["metrics"]), inputs.tables["powerlaw_fits"], inputs.needed(), **inputs.declared()
        )


def build_form_comparison(inputs: TableInputs) -> pd.DataFrame:
    """form_comparison.csv from its job's inputs (its entry: rankscale.tables.entries.laws)."""
    return form_comparison_table(finals(inputs.tables["metrics"]), **inputs.declared())
