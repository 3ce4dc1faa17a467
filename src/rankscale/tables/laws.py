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
from rankscale.laws.random_effects import SizeLevel, log_design, ols_map, satterthwaite, size_matrix, t_interval
from rankscale.metrics import METRICS, Metric
from rankscale.report.sections import LAWS, OUT_OF_SAMPLE
from rankscale.tables.base import Replicates, Table, TableInputs, law_parameters, rows_frame, typed
from rankscale.tables.noise import SIZE_LEVEL_COLUMNS, LawNoise, Noise, law_noise, law_replicates, size_level_of
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
ROUNDING = 1e-12  # log space: a noise-free law's prediction equals its observation up to float rounding


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
    """A law fitted to a group's points and refitted on every replicate (documents, the seeds where sizes have
    several, and the sizes' scatter: `LawNoise`), so it predicts its fitted quantity anywhere in S with an
    interval: figures' bands, another family's model."""

    form: FitForm
    law: FittedLaw
    params: dict[str, np.ndarray]  # the form's parameters refitted on every replicate, [B] each
    noise: LawNoise

    @classmethod
    def of(
        cls, group: pd.DataFrame, replicates: Replicates, form: FitForm, law: FittedLaw, refits: int, seed: int | None
    ) -> LawRefits:
        """`law`, fitted to the rows of `group` (one per model), refitted on their replicates."""
        points = Points.of(group["S"].to_numpy(dtype=np.float64))
        noise = law_noise(group, replicates, form, law, points, seed)
        return cls(form, law, noise.refit(form, law, points, refits), noise)

    def band(self, points: Points) -> np.ndarray:
        """The refitted laws' values at `points`: [B, len(points)] (NaN where a refit failed)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return self.form.predict_replicates(self.params, points)

    def at(self, S: float, keys: Sequence[str]) -> tuple[float, np.ndarray]:
        """The law's value at S, and per replicate a new model's value there: the refit's, times a new size's
        deviation off the law, times a run's deviation off its size's mean where sizes have several seeds (drawn
        from the stream `keys` names)."""
        at = Points.of(S)
        point = float(self.form.predict(self.law, at)[0])
        new_run = self.noise.noise.new_run(self.noise.replicates, keys)
        return point, self.band(at)[:, 0] * np.exp(self.noise.new_size) * new_run


@dataclass(frozen=True)
class ExponentContrast:
    """alpha(a) - alpha(b) of two laws of the same models, refitted on replicates with every source of noise."""

    point: float
    replicates: np.ndarray  # [B] the difference refitted on every replicate
    noise: LawNoise  # of the law of y_a / y_b (log-linear forms), else of law a

    def row(self, level: float) -> dict[str, Any]:
        low, high = interval(self.replicates, level, self.point)
        return {"difference": self.point, "ci_low": float(low), "ci_high": float(high),
                "p_value": p_value(self.replicates), "replicates": int(np.isfinite(self.replicates).sum()),
                **self.noise.columns(), "noise": self.noise.label}  # fmt: skip


def exponent_contrast(
    form: FitForm,
    points: Points,
    laws: tuple[FittedLaw, FittedLaw],
    y: tuple[np.ndarray, np.ndarray],
    document_reps: tuple[np.ndarray, np.ndarray],
    noise: Noise,
    keys: Sequence[str],
    refits: int,
) -> ExponentContrast:
    """The difference of two laws' exponents over the same models, paired replicate by replicate.

    Where log y is linear in the parameters (the power law) the difference of two OLS exponents is the exponent
    of the law of y_a / y_b, so the contrast is that law, with its own document covariance (of the replicate-by-
    replicate ratios, not the sum of the two), its own tau^2 and lack of fit. Other forms refit each law on its
    own replicates with the size level, both drawn from one stream (size deviations shared in sign and scale)."""
    assert form.exponent is not None
    exponent = form.exponent
    point = float(laws[0].row()[exponent]) - float(laws[1].row()[exponent])
    if form.log_linear:
        ratio, ratio_reps = y[0] / y[1], document_reps[0] / document_reps[1]
        law = form.fit(points, ratio)
        honest = LawNoise.of(form, law, points, ratio, ratio_reps, noise, keys)
        return ExponentContrast(point, form.fit_replicates(points, honest.replicates, law, refits)[exponent], honest)
    each = [LawNoise.of(form, law, points, v, reps, noise, keys)
            for law, v, reps in zip(laws, y, document_reps, strict=True)]  # fmt: skip
    refitted = [n.refit(form, law, points, refits)[exponent] for n, law in zip(each, laws, strict=True)]
    return ExponentContrast(point, refitted[0] - refitted[1], each[0])


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
            label = noise.label
            if law is not None:
                honest = LawNoise.of(form, law, points, y, document_reps, noise, (family, dataset))
                refitted, documents = honest.refit_both(form, law, points, refits)
                parameters, unidentified = law_parameters(form, law, refitted, level, float(np.median(y)))
                out.update({name: value for name, value in parameters.items() if name not in law.row()})
                if form.exponent is not None:  # the interval documents (and seeds) alone would give, beside
                    low, high = interval(documents[form.exponent], level, law.row()[form.exponent])
                    out.update({f"{form.exponent}_ci_low_documents": float(low),
                                f"{form.exponent}_ci_high_documents": float(high)})  # fmt: skip
                    if form.exponent in unidentified:
                        out[f"{form.exponent}_ci_low_documents"] = out[f"{form.exponent}_ci_high_documents"] = math.nan
                out.update(honest.columns())
                if form.bounds:
                    out["not_identified"] = "; ".join(unidentified.values())
                label = honest.label
            out["noise"] = label
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
CONTRAST_COLUMNS = ("family", "dataset", *CONTRAST_KEYS, "alpha", "alpha_versus", "difference", "ci_low", "ci_high",
                    "p_value", "replicates", *SIZE_LEVEL_COLUMNS, "noise", "note")  # fmt: skip


def fits_columns(form: FitForm, keys: Sequence[str] = ("family", "dataset")) -> list[str]:
    """The columns of a fitted row of `fits_table` (fitted as `form`), with `keys` first: a table of laws keeps
    them as its header when it has no rows."""
    intervals = [c for p in form.columns for c in (f"{p}_ci_low", f"{p}_ci_high")]
    documents = [f"{form.exponent}_ci_low_documents", f"{form.exponent}_ci_high_documents"] if form.exponent else []
    return [*keys, "metric", "k", "n_models", "S_min", "S_max", *form.columns, *intervals, "snr", *documents,
            *SIZE_LEVEL_COLUMNS, *(["not_identified"] if form.bounds else []), "noise", "note"]  # fmt: skip


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
    contrast = exponent_contrast(form, sizes, (fit_a.law, fit_b.law), ys, (reps_a[:n], reps_b[:n]), noise, keys, refits)
    return {
        "metric": first.law,
        "k": first.k,
        "versus": second.law,
        "versus_k": second.k,
        "alpha": fit_a.value(form.exponent),
        "alpha_versus": fit_b.value(form.exponent),
        **contrast.row(level),
    }


@dataclass(frozen=True)
class HeldOut:
    """A law fitted to the first `n_fit` models of a group, judged at the others on the same documents.

    A held-out model's value differs from the prediction by d = log y_obs - log y_hat. On one document draw both
    move together, so d's document (and seed) variance is that of the replicate-by-replicate difference, taken
    through the fit's linearisation (exact for the power law): Var_b((L_b,i - y_i) - x_i^T H (L_b - y)). A new
    size is a new draw of the size deviation, and the fitted law carries the fitted sizes' deviations: d's
    variance adds tau^2 (1 + x_i^T H K H^T x_i), tau^2 by REML on the fitted models, Student's t on Satterthwaite
    degrees of freedom."""

    form: FitForm
    law: FittedLaw
    points: Points  # every model of the group, fitted and held out
    log_y: np.ndarray  # [M] their log y
    log_reps: np.ndarray  # [B, M] its replicates (documents, and seeds where sizes have several)
    X: np.ndarray  # [M, p] the law's design at every model (the fit's linearisation)
    n_fit: int
    level: SizeLevel | None
    K: np.ndarray  # [n_fit, n_fit] runs of one size
    label: str

    @classmethod
    def of(cls, form: FitForm, law: FittedLaw, group: pd.DataFrame, n_fit: int, y: np.ndarray,
           replicates: Replicates, seed: int | None) -> HeldOut:  # fmt: skip
        reps = law_replicates(group, replicates)
        noise = Noise.of(group, len(reps), seed)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_reps, log_y = np.log(noise.apply(reps)), np.log(y)
        points = Points.of(group["S"].to_numpy(dtype=np.float64))
        X, _ = log_design(form, law, points)
        fitted = slice(0, n_fit)
        level = size_level_of(form, law, points.take(fitted), log_y[fitted], log_reps[:, fitted], noise.groups[fitted])
        label = noise.label + ("+sizes" if level is not None else "")
        return cls(form, law, points, log_y, log_reps, X, n_fit, level, size_matrix(noise.groups[fitted]), label)

    def check(self, i: int, level: float, metric: Metric) -> dict[str, Any]:
        """Model i's columns: the prediction (in the metric's units), its interval for model i's value on these
        documents, whether the observed value lies inside, and what the interval includes."""
        n, x = self.n_fit, self.X[i]
        H = ols_map(self.X[:n])
        y_hat = self.form.predict(self.law, self.points.take([i]))
        log_hat = float(np.log(y_hat[0]))
        paired = (self.log_reps[:, i] - self.log_y[i]) - (self.log_reps[:, :n] - self.log_y[:n]) @ (H.T @ x)
        paired = paired[np.isfinite(paired)]
        variance, df, tau2 = (float(np.var(paired, ddof=1)) if paired.size > 1 else math.nan), math.inf, math.nan
        if self.level is not None:
            b = 1.0 + float(x @ H @ self.K @ H.T @ x)
            tau2 = self.level.tau2
            df = satterthwaite(variance + b * tau2, b, self.level.information)
            variance += b * tau2
        low, high = t_interval(log_hat, variance, df, level)
        with np.errstate(over="ignore"):
            ends = metric.from_law(np.exp(np.array([low, high])))
            predicted = float(metric.from_law(y_hat)[0])
        return {"predicted": predicted, "predicted_ci_low": float(ends.min()), "predicted_ci_high": float(ends.max()),
                "covered": bool(low - ROUNDING <= self.log_y[i] <= high + ROUNDING), "tau2": tau2, "df": df if np.isfinite(df) else math.nan,
                "noise": self.label, "judged": "paired"}  # fmt: skip


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
            check = HeldOut.of(form, law, group, n_fit, y, replicates, seed)
            for i in range(n_fit, len(group)):
                observed = float(group["value"].iloc[i])
                judged = check.check(i, level, metric)
                rows.append(
                    {
                        "family": family,
                        "dataset": dataset,
                        "metric": name,
                        "k": optional_int(k),
                        "held_out_model": group["model"].iloc[i],
                        "S": int(sizes[i]),
                        "n_fit": n_fit,
                        **judged,
                        "observed": observed,
                        "rel_error": judged["predicted"] / observed - 1.0,
                    }
                )
    return note_last(typed(pd.DataFrame(rows)))


def law_k_rows(metrics: pd.DataFrame, ks: Sequence[int]) -> pd.DataFrame:
    """The rows of cross-entropy and of RBP_k at `ks` (`analysis.law_k`): the laws checked out of sample."""
    return metrics[(metrics["metric"] == "ce") | ((metrics["metric"] == "rbp") & metrics["k"].isin(list(ks)))]


def between_family_rows(metrics: pd.DataFrame, ks: Sequence[int]) -> pd.DataFrame:
    """`law_k_rows` and cross-entropy in bits per byte: what families with different tokenizers are compared on
    (within one tokenizer bpb is CE times a constant, so the laws of one family need it not)."""
    return metrics[metrics.index.isin(law_k_rows(metrics, ks).index) | (metrics["metric"] == "bpb")]


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
        section=LAWS,
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
            "of the parameters refitted on every replicate, which carry every source of noise ``noise`` names: "
            "documents (the same resample for every model), seeds where a size has several, and sizes: the "
            "models' scatter around their law beyond documents and seeds, a random effect per size whose "
            "variance ``tau2`` (log space) is estimated by REML with the replicates' full covariance; the interval "
            "is Student's t on ``df`` Satterthwaite degrees of freedom (empty: Normal). ``lof_q``: the lack-of-fit "
            "statistic r'V^-1 r of the generalised least-squares residuals with documents (and seeds) alone, "
            "chi-square on ``lof_df`` under the law, ``lof_p`` its p-value: a small one says the sizes scatter "
            "more than documents explain. ``alpha_ci_*_documents``: the interval documents (and seeds) alone "
            "give, for comparison. A law of as many sizes as parameters has no size level (``noise`` says so). "
            "``snr``: standard deviation of log y across the sizes over the "
            "mean bootstrap standard deviation of log y of one model; below ``figures.snr_threshold`` the law "
            "is hard to tell from noise. A row whose ``note`` is set could not be fitted (fewer than two "
            "sizes, or RBP_k = 1 for some model)."
        ),
    ),
    Table(
        name="exponent_contrasts",
        section=LAWS,
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
            "Exponents compared over the same models, paired: the difference of two OLS exponents is the exponent "
            "of the law of the ratio of the two quantities, fitted with its own document covariance (of the "
            "replicate-by-replicate ratios), its own scatter of sizes ``tau2`` and lack of fit (``lof_*``, as in "
            "powerlaw_fits.csv); percentile interval of its refits and a two-sided bootstrap p-value for a "
            "difference of zero, both including that scatter (``noise``). The paper's "
            "coincidence (alpha of -log RBP_k minus alpha of cross-entropy, every k), and the laws of the error "
            "entropy and of the fitted lognormal's entropy and -log P(R = 1) against cross-entropy and "
            "-log RBP_1 (``versus``, ``versus_k``). A family of one size has no law: one row per dataset says so "
            "in ``note``."
        ),
    ),
    Table(
        name="extrapolation",
        section=OUT_OF_SAMPLE,
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
            "(``analysis.law_k``) and cross-entropy. ``predicted_ci_*``: the interval for the held-out model's "
            "value on these documents (``judged = paired``): the observed and predicted values share every "
            "document draw, so the document (and seed) variance is that of their difference replicate by "
            "replicate; a held-out size is a new draw of the sizes' scatter around the law, so ``tau2`` (REML on "
            "the fitted sizes) enters too; Student's t on ``df`` Satterthwaite degrees of freedom. ``covered``: "
            "the observed value lies inside; ``rel_error`` = predicted / observed - 1. A family with fewer than three sizes has nothing "
            "to hold out: one row per dataset says so in ``note``."
        ),
    ),
    Table(
        name="form_comparison",
        section=LAWS,
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
            "AICc, ties to the simpler form, so with few sizes the pure law wins unless the data demand a floor. "
            "``not_identified``: a parameter at a bound of its domain (the floor E at 0: the data show no floor), "
            "whose value is where the optimizer stopped, not an estimate."
        ),
    ),
]
