"""strata.csv, strata_fits.csv, strata_contrasts.csv: which tokens carry the law (docs/science.md, "Strata").

A stratum's metrics are the metrics of its tokens' totals (`rankscale.statistics.stratum_totals`), and
its intervals and laws come from the same per-document replicates as every other number: its rows go
through the same `fits_table`, with each model's stratum index beside them (`stratum_index`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bca import bca
from rankscale.intervals import PROBABILITY, ModelInterval, ratio_of_sums
from rankscale.laws import FitForm, FittedLaw, Points
from rankscale.metrics import METRICS
from rankscale.statistics import STRATA_TOKENS, TOKENS, Totals, stratum_totals
from rankscale.strata import STRATA
from rankscale.summary import MODEL_COLUMNS, Summary
from rankscale.tables.base import Replicates, TableInputs, rows_frame, typed
from rankscale.tables.lawkit import exponent_contrast, fit_or_note
from rankscale.tables.laws import fits_columns, fits_table
from rankscale.tables.model_intervals import certain, design_columns, ratio_intervals
from rankscale.tables.noise import Noise, law_documents, law_replicates
from rankscale.tables.selection import finals, note_last, size_note

STRATUM_METRICS = ("rbp", "ce")  # the metrics every stratum gets (RBP_k at the strata k)
STRATUM_KEYS = ["kind", "stratum"]
# the header of each strata table when there are no strata (`analysis.strata: []`)
STRATA_COLUMNS = (*MODEL_COLUMNS, *STRATUM_KEYS, "n_stratum", "share", "metric", "k", "value", "share_ci_low",
                  "share_ci_high", "ci_low", "ci_high", "ci_reliable", "ci_note")  # fmt: skip
CONTRAST_COLUMNS = ("family", "dataset", "kind", "metric", "k", "reference", "stratum", "alpha", "alpha_reference",
                    "difference", "ci_low", "ci_high", "p_value", "tau2", "noise", "note")  # fmt: skip


def strata_fits_columns(form: FitForm) -> list[str]:
    """The columns of strata_fits.csv fitted as `form`: those `fits_table` gives a fitted row, with the stratum's
    after the dataset."""
    return fits_columns(form, ("family", "dataset", *STRATUM_KEYS))


def stratum_rows(summaries: Iterable[Summary]) -> pd.DataFrame:
    """One row per model x dataset x stratum x metric (x k): the stratum's point value, its token count and
    share, and the model's index of the stratum (`stratum_index`, for its replicates)."""
    rows = []
    for s in summaries:
        totals = s.totals()
        n_all = float(np.asarray(totals[TOKENS]))
        for index, stratum in enumerate(s.strata_columns):
            view = stratum_totals(totals, index)
            n = int(np.asarray(view[TOKENS]))
            base = {**s.columns(), "kind": stratum.kind, "stratum": stratum.label, "stratum_index": index,
                    "n_stratum": n, "share": n / n_all}  # fmt: skip
            for name in STRATUM_METRICS:
                metric = METRICS[name]
                with np.errstate(invalid="ignore", divide="ignore"):
                    values = np.atleast_1d(metric.compute(view))
                ks: list[Any] = list(s.strata_k) if metric.per_k else [pd.NA]
                for k, value in zip(ks, values, strict=True):
                    rows.append({**base, "metric": name, "k": k, "value": float(value)})
    return typed(pd.DataFrame(rows))


def strata_table(summaries: Sequence[Summary], replicates: Replicates, level: float) -> pd.DataFrame:
    """Per model x dataset x stratum: its share of the scored tokens and its RBP_k and CE, with intervals: ratios of
    document sums, so the cluster-robust t over the documents' own ratios, as metrics.csv's (without the documents'
    sums, bias-corrected percentiles of the replicates: `stratum_interval`)."""
    frame = stratum_rows(summaries)
    if frame.empty:
        return typed(rows_frame([], STRATA_COLUMNS))
    strata_k = {s.key: list(s.strata_k) for s in summaries}
    design = {s.key: design_columns(s) for s in summaries}
    out = []
    for row in frame.to_dict("records"):
        key, index = (row["model"], row["dataset"]), int(row["stratum_index"])
        k = None if pd.isna(row["k"]) else int(row["k"])
        found, share = stratum_interval(replicates, key, index, row, strata_k[key], k, level)
        bounds = [f"{name}: {got.note}" for name, got in (("share", share), ("value", found))
                  if got.note and np.isfinite(got.low) and np.isfinite(got.high)]  # one-sided bounds say so
        notes = {**design[key], "ci_note": "; ".join(filter(None, [design[key]["ci_note"], *bounds]))}
        out.append({**row, "share_ci_low": share.low, "share_ci_high": share.high,
                    "ci_low": found.low, "ci_high": found.high, **notes})  # fmt: skip
    columns = [c for c in out[0] if c != "stratum_index"]
    return typed(pd.DataFrame(out))[columns]


def stratum_interval(replicates: Replicates, key: tuple[str, str], index: int, row: dict[str, Any], ks: list[int],
                     k: int | None, level: float) -> tuple[ModelInterval, ModelInterval]:  # fmt: skip
    """(the stratum's metric, its share of the tokens): `rankscale.intervals.ratio_of_sums` of the documents' own
    sums of the stratum (`ks`: the strata k, `k` the row's, None for a metric without k; at 0 or 1 in every
    document, a one-sided bound), else BCa without acceleration of the replicates."""
    units = replicates.units.get(key)
    metric = METRICS[row["metric"]]
    if units is not None:
        view = stratum_totals(units, index)
        values = np.atleast_1d(metric.compute(stratum_totals(Totals({n: np.asarray(v).sum(axis=0)
                                                                     for n, v in units.items()}), index)))  # fmt: skip
        fixed = certain(metric, ks, int(row["vocab_size"])) if metric.per_k else None
        found = ratio_intervals(metric, view, values, level, fixed)[ks.index(k) if k is not None else 0]
        share = ratio_of_sums(np.asarray(units[STRATA_TOKENS])[:, index], units[TOKENS], level, PROBABILITY)[0]
        return found, share
    totals = replicates.totals[key]
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.asarray(totals[STRATA_TOKENS])[:, index] / np.asarray(totals[TOKENS])
        values = replicates.at(*key, row["metric"], None if pd.isna(row["k"]) else int(row["k"]), index)
    none = np.zeros(0)
    return bca(values, row["value"], none, level), bca(shares, row["share"], none, level)


def strata_fits_table(
    summaries: Sequence[Summary], form: FitForm, replicates: Replicates, level: float, refits: int, seed: int | None
) -> pd.DataFrame:
    """The law of every stratum: `fits_table` on each stratum's rows (final models), intervals from refits."""
    rows = stratum_rows(summaries)
    rows = rows if rows.empty else finals(rows)  # no strata: no columns to select on
    if rows.empty:
        return typed(rows_frame([], strata_fits_columns(form)))
    parts = []
    for (kind, stratum), frame in rows.groupby(STRATUM_KEYS, sort=False):
        fits = fits_table(frame, form, replicates, level, refits, seed)
        fits.insert(2, "kind", kind)
        fits.insert(3, "stratum", stratum)
        parts.append(fits)
    return note_last(typed(pd.concat(parts, ignore_index=True)))


def strata_contrasts_table(
    summaries: Sequence[Summary], form: FitForm, replicates: Replicates, level: float, refits: int, seed: int | None
) -> pd.DataFrame:
    """Per family x dataset x kind x law: each stratum's exponent minus the reference stratum's (the kind's
    `reference`: the most frequent tokens, the shortest contexts, words), refitted on the same replicates."""
    header = typed(rows_frame([], CONTRAST_COLUMNS))
    if form.exponent is None:  # a form without an exponent has nothing to contrast (as exponent_contrasts.csv)
        return header
    rows_all = stratum_rows(summaries)
    rows_all = rows_all if rows_all.empty else finals(rows_all)  # no strata: no columns to select on
    out: list[dict[str, Any]] = []
    if rows_all.empty:
        return header
    for (family, dataset, kind), frame in rows_all.groupby(["family", "dataset", "kind"], sort=True):
        if note := size_note(frame["S"]):
            out.append({"family": family, "dataset": dataset, "kind": kind, "note": note})
            continue
        labels = list(dict.fromkeys(frame["stratum"]))
        reference = labels[min(STRATA[kind].reference, len(labels) - 1)]
        for (name, k), law_rows in frame.groupby(["metric", "k"], dropna=False, sort=True):
            base = {"family": family, "dataset": dataset, "kind": kind, "metric": METRICS[name].law,
                    "k": None if pd.isna(k) else int(k), "reference": reference}  # fmt: skip
            fitted = {label: _stratum_law(law_rows[law_rows["stratum"] == label], form) for label in labels}
            for label in labels:
                if label == reference:
                    continue
                contrast = _contrast(fitted[label], fitted[reference], replicates, form, refits, seed, level)
                out.append({**base, "stratum": label, **contrast})
    return note_last(typed(rows_frame(out, CONTRAST_COLUMNS)))


def _stratum_law(group: pd.DataFrame, form: FitForm) -> tuple[pd.DataFrame, FittedLaw, np.ndarray] | str:
    """(the rows by S, the law, its fitted quantity) of one stratum, or why it has no law."""
    group = group.sort_values("S", kind="stable")
    y = METRICS[group["metric"].iloc[0]].to_law(group["value"].to_numpy(dtype=np.float64))
    law, note = fit_or_note(form, Points.of(group["S"].to_numpy()), y)
    return note if law is None else (group, law, y)


def _contrast(
    stratum: tuple[pd.DataFrame, FittedLaw, np.ndarray] | str,
    reference: tuple[pd.DataFrame, FittedLaw, np.ndarray] | str,
    replicates: Replicates,
    form: FitForm,
    refits: int,
    seed: int | None,
    level: float,
) -> dict[str, Any]:
    """alpha(stratum) - alpha(reference) over the same models: the exponent of the law of their ratio, with its
    own document covariance and scatter of sizes (`exponent_contrast`), or a note where either has no law."""
    if isinstance(stratum, str) or isinstance(reference, str):
        why = stratum if isinstance(stratum, str) else reference
        return {"alpha": math.nan, "alpha_reference": math.nan, "difference": math.nan, "ci_low": math.nan,
                "ci_high": math.nan, "p_value": math.nan, "note": f"no law: {why}"}  # fmt: skip
    assert form.exponent is not None
    (group, law, y), (group_ref, law_ref, y_ref) = stratum, reference
    reps, reps_ref = law_replicates(group, replicates), law_replicates(group_ref, replicates)
    noise = Noise.of(group, len(reps), seed)
    keys = (str(group["family"].iloc[0]), str(group["dataset"].iloc[0]))
    points = Points.of(group["S"].to_numpy(dtype=np.float64))
    documents = (law_documents(group, replicates), law_documents(group_ref, replicates))
    row = exponent_contrast(form, points, (law, law_ref), (y, y_ref), (reps, reps_ref), noise, keys, refits,
                            documents).row(level)  # fmt: skip
    return {"alpha": float(law.row()[form.exponent]), "alpha_reference": float(law_ref.row()[form.exponent]),
            **{k: row[k] for k in ("difference", "ci_low", "ci_high", "p_value", "tau2", "noise")}, "note": ""}  # fmt: skip


def build_strata(inputs: TableInputs) -> pd.DataFrame:
    """strata.csv from its job's inputs (its entry: rankscale.tables.entries.strata)."""
    return strata_table(inputs.summaries, inputs.needed(), **inputs.declared())


def build_strata_fits(inputs: TableInputs) -> pd.DataFrame:
    """strata_fits.csv from its job's inputs (its entry: rankscale.tables.entries.strata)."""
    return strata_fits_table(inputs.summaries, replicates=inputs.needed(), **inputs.declared())


def build_strata_contrasts(inputs: TableInputs) -> pd.DataFrame:
    """strata_contrasts.csv from its job's inputs (its entry: rankscale.tables.entries.strata)."""
    return strata_contrasts_table(inputs.summaries, replicates=inputs.needed(), **inputs.declared())
