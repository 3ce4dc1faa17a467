"""The laws in S: fits with intervals, exponents compared, out-of-sample checks, forms compared.

Every fit uses the form `analysis.law_form` names (default: the pure power law), through the
FitForm interface; every interval refits the form on the document-bootstrap replicates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bootstrap import interval, p_value, spread_to_noise
from rankscale.laws import FORMS, FitForm, FittedLaw, Points, compare_forms
from rankscale.metrics import METRICS
from rankscale.tables.base import Replicates, Table, TableInputs, law_parameters, typed
from rankscale.tables.noise import Noise, law_replicates
from rankscale.tables.selection import (
    ONE_SIZE,
    FitIndex,
    LawKey,
    finals,
    note_last,
    optional_int,
    select,
    size_note,
)

GROUP = ["family", "dataset", "metric", "k"]  # one law per group of the metrics table
TWO_SIZES = "family has two sizes: holding one out leaves one, no law"


def fit_or_note(form: FitForm, points: Points, y: np.ndarray) -> tuple[FittedLaw | None, str]:
    """The law fitted to the points, or None and why not (a table's `note`): one size, or y the form cannot fit."""
    note = size_note(points.S)
    if note:
        return None, note
    try:
        return form.fit(points, y), ""
    except ValueError as exc:
        return None, str(exc)


@dataclass(frozen=True)
class LawRefits:
    """A law fitted to a group's points and refitted on every bootstrap replicate (the seeds resampled too where
    sizes have several), so it predicts its fitted quantity anywhere in S with an interval: figures' bands,
    held-out sizes, another family's model."""

    form: FitForm
    law: FittedLaw
    params: dict[str, np.ndarray]  # the form's parameters refitted on every replicate, [B] each
    replicates: np.ndarray  # [B, models] the fitted quantity's replicates the refits were fitted to
    noise: Noise

    @classmethod
    def of(
        cls, group: pd.DataFrame, replicates: Replicates, form: FitForm, law: FittedLaw, refits: int, seed: int | None
    ) -> LawRefits:
        """`law`, fitted to the rows of `group` (one per model), refitted on their replicates."""
        reps = law_replicates(group, replicates)
        noise = Noise.of(group, len(reps), seed)
        fit_reps = noise.apply(reps)
        params = form.fit_replicates(Points.of(group["S"].to_numpy(dtype=np.float64)), fit_reps, law, refits)
        return cls(form, law, params, fit_reps, noise)

    def band(self, points: Points) -> np.ndarray:
        """The refitted laws' values at `points`: [B, len(points)] (NaN where a refit failed)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return self.form.predict_replicates(self.params, points)

    def at(self, S: float, keys: Sequence[str]) -> tuple[float, np.ndarray]:
        """The law's value at S, and per replicate a new run's value there: the refit's, times a run's deviation
        off its size's mean where sizes have several seeds (drawn from the stream `keys` names)."""
        at = Points.of(S)
        point = float(self.form.predict(self.law, at)[0])
        return point, self.band(at)[:, 0] * self.noise.new_run(self.replicates, keys)


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
            noise = Noise.of(group, len(document_reps), seed)
            reps = noise.apply(document_reps)
            if law is not None:
                refitted = form.fit_replicates(points, reps, law, refits)
                parameters, unidentified = law_parameters(form, law, refitted, level, float(np.median(y)))
                out.update({name: value for name, value in parameters.items() if name not in law.row()})
                if form.bounds:
                    out["not_identified"] = "; ".join(unidentified.values())
            out["noise"] = noise.label
            row.update(out)
        rows.append({**row, "note": note})
    return typed(pd.DataFrame(rows))


# the exponents compared: each law against cross-entropy and -log RBP_1 (the paper's coincidence,
# and the laws the lognormal and the error entropy imply); -log RBP_k at every k against CE
CONTRASTS: tuple[tuple[str, str, int | None], ...] = (
    ("ee", "ce", None),
    ("ee", "neg_log_rbp", 1),
    ("ee_lognormal", "ce", None),
    ("ee_lognormal", "neg_log_rbp", 1),
    ("neg_log_p1_lognormal", "ce", None),
    ("neg_log_p1_lognormal", "neg_log_rbp", 1),
)

CONTRAST_KEYS = ("metric", "k", "versus", "versus_k")  # with family and dataset, what a contrast row is of


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
        return pd.DataFrame()
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
    return note_last(typed(pd.DataFrame(rows)))


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
    exponent = form.exponent
    sizes = Points.of(group_a["S"].to_numpy())
    alpha_a = form.fit_replicates(sizes, noise.apply(reps_a[:n]), fit_a.law, refits)[exponent]
    alpha_b = form.fit_replicates(sizes, noise.apply(reps_b[:n]), fit_b.law, refits)[exponent]
    difference = alpha_a - alpha_b
    point = fit_a.value(exponent) - fit_b.value(exponent)
    low, high = interval(difference, level, point)
    return {
        "metric": first.law,
        "k": first.k,
        "versus": second.law,
        "versus_k": second.k,
        "alpha": fit_a.value(exponent),
        "alpha_versus": fit_b.value(exponent),
        "difference": point,
        "ci_low": float(low),
        "ci_high": float(high),
        "p_value": p_value(difference),
        "replicates": int(np.isfinite(difference).sum()),
        "noise": noise.label,
    }


def extrapolation_table(
    metrics: pd.DataFrame,
    replicates: Replicates,
    ks: Sequence[int],
    level: float,
    form: FitForm,
    refits: int,
    seed: int | None,
) -> pd.DataFrame:
    """Fit the law without the largest size (and, with >= 4 sizes, without the two largest); predict the
    held-out sizes' RBP_k and CE, with the interval of the refits' predictions. Where sizes have several
    seeds, the refits resample them too, and the interval is one for a new run's value (the law's, plus a
    seed's deviation drawn from the fitted sizes' runs). A family with fewer than three sizes has nothing to hold
    out: one row per dataset says so (`note`)."""
    rows: list[dict[str, Any]] = []
    for (family, dataset, name, k), group in law_k_rows(metrics, ks).groupby(GROUP, dropna=False, sort=True):
        metric = METRICS[name]
        group = group.sort_values("S", kind="stable")
        sizes = group["S"].to_numpy(dtype=np.float64)
        distinct = np.unique(sizes)
        if len(distinct) < 3:  # nothing to hold out: said once per family and dataset
            if not rows or (rows[-1]["family"], rows[-1]["dataset"]) != (family, dataset):
                note = ONE_SIZE if len(distinct) < 2 else TWO_SIZES
                rows.append({"family": family, "dataset": dataset, "metric": None, "k": None, "note": note})
            continue
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        for held in (1, 2):
            n_kept = len(distinct) - held
            if n_kept < 2 or (held == 2 and len(distinct) < 4):
                continue
            fit_rows = sizes <= distinct[n_kept - 1]
            n_fit = int(fit_rows.sum())
            if np.any(y[:n_fit] <= 0):
                continue
            try:
                law = form.fit(Points.of(sizes[:n_fit]), y[:n_fit])
            except ValueError:
                continue
            keys = (family, dataset, name, str(k), str(held))
            refitted = LawRefits.of(group.iloc[:n_fit], replicates, form, law, refits, seed)
            for i in range(n_fit, len(group)):
                point, samples = refitted.at(sizes[i], keys)
                predicted = float(metric.from_law(np.array([point]))[0])
                with np.errstate(invalid="ignore", over="ignore"):
                    samples = metric.from_law(samples)
                low, high = interval(samples, level, predicted)
                observed = float(group["value"].iloc[i])
                rows.append(
                    {
                        "family": family,
                        "dataset": dataset,
                        "metric": name,
                        "k": optional_int(k),
                        "held_out_model": group["model"].iloc[i],
                        "S": int(sizes[i]),
                        "n_fit": n_fit,
                        "predicted": predicted,
                        "predicted_ci_low": float(low),
                        "predicted_ci_high": float(high),
                        "observed": observed,
                        "rel_error": predicted / observed - 1.0,
                        "covered": bool(low - 1e-12 * abs(observed) <= observed <= high + 1e-12 * abs(observed)),
                        "noise": refitted.noise.label,
                    }
                )
    return note_last(typed(pd.DataFrame(rows)))


def law_k_rows(metrics: pd.DataFrame, ks: Sequence[int]) -> pd.DataFrame:
    """The rows of cross-entropy and of RBP_k at `ks` (`analysis.law_k`): the laws checked out of sample."""
    return metrics[(metrics["metric"] == "ce") | ((metrics["metric"] == "rbp") & metrics["k"].isin(list(ks)))]


def form_comparison_table(metrics: pd.DataFrame, forms: Sequence[str], ks: Sequence[int]) -> pd.DataFrame:
    """Every form of `forms` fitted to every (family, dataset, metric) and, for RBP_k, every k of `ks`:
    parameters, leave-one-out RMSE and AICc in log space, and the preferred form of each group."""
    rows = []
    wanted = metrics[metrics["k"].isna() | metrics["k"].isin(list(ks))]
    for (family, dataset, name, k), group in wanted.groupby(GROUP, dropna=False, sort=True):
        metric = METRICS[name]
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        base = {"family": family, "dataset": dataset, "metric": metric.law, "k": k, "n_models": len(group)}
        compared = compare_forms(Points.of(group["S"].to_numpy()), y, [FORMS[f] for f in forms])
        rows.extend({**base, **r} for r in compared)
    return typed(pd.DataFrame(rows))


def law_form(inputs: TableInputs) -> FitForm:
    return FORMS[inputs.settings.get("law_form")]


def _refits(inputs: TableInputs) -> int:
    return int(inputs.settings.get("refits"))


def _fits(inputs: TableInputs) -> pd.DataFrame:
    return inputs.tables["powerlaw_fits"]


LAW_SETTINGS = ("level", "law_form", "refits", "seed")
TABLES = [
    Table(
        name="powerlaw_fits",
        build=lambda inputs: fits_table(
            finals(inputs.tables["metrics"]),
            law_form(inputs),
            inputs.replicates,
            inputs.level,
            _refits(inputs),
            inputs.settings.get("seed"),
        ),
        needs=("metrics",),
        summaries=False,
        resampled=True,
        settings=LAW_SETTINGS,
        caption=(
            "Power-law fits ``y = C S^-alpha`` per family, dataset and k, by ordinary least squares of "
            "log y on log S (``analysis.law_form`` can name another form of ``rankscale.laws.FORMS``; its "
            "parameters are then the columns). ``metric = neg_log_rbp`` fits y = -log RBP_k; ``metric = ce`` fits "
            "the cross-entropy. R² is computed in log space. ``*_ci_low``, ``*_ci_high``: percentile intervals "
            "of the parameters refitted on every bootstrap replicate (documents resampled, the same resample "
            "for every model of a family). ``snr``: standard deviation of log y across the sizes over the "
            "mean bootstrap standard deviation of log y of one model; below ``figures.snr_threshold`` the law "
            "is hard to tell from noise. A row whose ``note`` is set could not be fitted (fewer than two "
            "sizes, or RBP_k = 1 for some model)."
        ),
    ),
    Table(
        name="exponent_contrasts",
        build=lambda inputs: contrasts_table(
            finals(inputs.tables["metrics"]),
            _fits(inputs),
            inputs.needed(),
            inputs.level,
            law_form(inputs),
            _refits(inputs),
            inputs.settings.get("seed"),
        ),
        needs=("metrics", "powerlaw_fits"),
        summaries=False,
        resampled=True,
        settings=LAW_SETTINGS,
        caption=(
            "Exponents compared, with paired-bootstrap percentile intervals (both laws refitted on the same "
            "resampled documents) and a two-sided bootstrap p-value for a difference of zero: the paper's "
            "coincidence (alpha of -log RBP_k minus alpha of cross-entropy, every k), and the laws of the error "
            "entropy and of the fitted lognormal's entropy and -log P(R = 1) against cross-entropy and "
            "-log RBP_1 (``versus``, ``versus_k``). A family of one size has no law: one row per dataset says so "
            "in ``note``."
        ),
    ),
    Table(
        name="extrapolation",
        build=lambda inputs: extrapolation_table(
            finals(inputs.tables["metrics"]),
            inputs.needed(),
            inputs.settings.get("law_k"),
            inputs.level,
            law_form(inputs),
            _refits(inputs),
            inputs.settings.get("seed"),
        ),
        needs=("metrics",),
        summaries=False,
        resampled=True,
        settings=(*LAW_SETTINGS, "law_k"),
        caption=(
            "Out-of-sample test: the law fitted without the largest size (``n_fit`` = all but one) and, "
            "with at least four sizes, without the two largest, predicts the held-out sizes' RBP_k "
            "(``analysis.law_k``) and cross-entropy. ``predicted_ci_*``: percentile interval of the "
            "predictions of the law refitted on every bootstrap replicate; ``covered``: the observed value lies "
            "inside it; ``rel_error`` = predicted / observed - 1. A family with fewer than three sizes has nothing "
            "to hold out: one row per dataset says so in ``note``."
        ),
    ),
    Table(
        name="form_comparison",
        build=lambda inputs: form_comparison_table(
            finals(inputs.tables["metrics"]), inputs.settings.get("forms"), inputs.settings.get("law_k")
        ),
        needs=("metrics",),
        summaries=False,
        settings=("forms", "law_k"),
        caption=(
            "Functional forms compared per family, dataset, metric (and k of ``analysis.law_k``): the pure power "
            "law ``C S^-alpha`` against ``E + C S^-alpha`` (E >= 0, Huber loss on log y from a grid of starts, as "
            "Hoffmann et al. 2022). ``loo_rmse``: leave-one-out error in log space; ``aicc``: corrected Akaike "
            "criterion (log space; infinite when there are too few sizes for the form); ``preferred``: the lowest "
            "AICc, ties to the simpler form, so with few sizes the pure law wins unless the data demand a floor."
        ),
    ),
]
