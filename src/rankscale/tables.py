"""The result tables (results/tables/<name>.csv), built from per model x dataset summaries.

To add a table: write `build(inputs) -> DataFrame` and add a `Table` to `TABLES` with the
tables it reads (`needs`), whether it reads bootstrap replicates, the `analysis:` settings it
reads and its report caption. The `table` rule makes every table in `TABLES`, each in its own
job, so changing one table's settings reruns that table (and what reads it) only.

Every interval is a percentile interval over the document-level paired bootstrap replicates
of the summaries (docs/science.md, "Uncertainty"); a fit's interval comes from refitting it on
every replicate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bootstrap import interval, p_value, spread_to_noise
from rankscale.laws import FORMS, compare_forms, fit_power_law_replicates
from rankscale.metrics import METRICS
from rankscale.summary import summary_totals

MODEL_COLUMNS = ("family", "model", "dataset", "S", "vocab_size", "n_tokens")


class Replicates:
    """Bootstrap replicates of every model x dataset: replicate totals, and metric values from them."""

    def __init__(self, summaries: Sequence[Mapping[str, Any]], totals: Sequence[Mapping[str, np.ndarray]]) -> None:
        self._k = {(s["model"], s["dataset"]): list(s["k"]) for s in summaries}
        self.totals = {(s["model"], s["dataset"]): dict(t) for s, t in zip(summaries, totals, strict=True)}
        self.metric = cache(self._metric)

    def _metric(self, model: str, dataset: str, name: str) -> np.ndarray:
        """Replicate values [B, K] (per-k metrics) or [B]."""
        return METRICS[name].compute(self.totals[(model, dataset)])

    def at(self, model: str, dataset: str, name: str, k: int | None = None) -> np.ndarray:
        """Replicate values [B] of one metric (at k)."""
        values = self.metric(model, dataset, name)
        return values if k is None else values[:, self._k[(model, dataset)].index(int(k))]


@dataclass(frozen=True)
class TableInputs:
    summaries: list[dict[str, Any]]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # the tables this one needs, by name
    settings: dict[str, Any] = field(default_factory=dict)  # the `analysis:` settings it reads
    replicates: Replicates | None = None


@dataclass(frozen=True)
class Table:
    name: str  # results/tables/<name>.csv
    build: Callable[[TableInputs], pd.DataFrame]
    caption: str  # reStructuredText, shown in the Snakemake report
    needs: tuple[str, ...] = ()  # tables it is built from
    settings: tuple[str, ...] = ()  # `analysis:` keys it reads
    summaries: bool = True  # reads every model x dataset summary
    replicates: bool = False  # reads every summary's bootstrap replicates


def read_table(path: str | Path) -> pd.DataFrame:
    """A table as written (full precision, read back bit for bit; k as a nullable integer)."""
    return pd.read_csv(path, dtype={"k": "Int64"})


def _k(value: Any) -> int | None:
    return None if pd.isna(value) else int(value)


def metrics_table(
    summaries: Iterable[Mapping[str, Any]], replicates: Replicates | None = None, level: float = 0.95
) -> pd.DataFrame:
    """One row per (model, dataset, metric[, k]) for every metric of `METRICS`, with its interval."""
    rows = []
    for s in summaries:
        base = {k: s[k] for k in MODEL_COLUMNS}
        totals = summary_totals(s)
        for metric in METRICS.values():
            values = np.atleast_1d(metric.compute(totals))
            ks: list[Any] = list(s["k"]) if metric.per_k else [pd.NA]
            if replicates is not None:
                reps = replicates.metric(s["model"], s["dataset"], metric.name).reshape(-1, len(ks))
                low, high = interval(reps, level, values)
            else:
                low = high = np.full(len(ks), math.nan)
            for k, v, lo, hi in zip(ks, values, low, high, strict=True):
                rows.append({**base, "metric": metric.name, "k": k, "value": float(v), "ci_low": lo, "ci_high": hi})
    df = pd.DataFrame(rows)
    df["k"] = df["k"].astype("Int64")
    return df.sort_values(["family", "dataset", "metric", "k", "S"], kind="stable").reset_index(drop=True)


def law_replicates(group: pd.DataFrame, replicates: Replicates) -> np.ndarray:
    """The fitted quantity of a (family, dataset, metric, k) group on every replicate: [B, models]."""
    metric = METRICS[group["metric"].iloc[0]]
    k = _k(group["k"].iloc[0])
    columns = [replicates.at(m, d, metric.name, k) for m, d in zip(group["model"], group["dataset"], strict=True)]
    with np.errstate(divide="ignore"):
        return metric.to_law(np.stack(columns, axis=1))


def fits_table(
    metrics: pd.DataFrame, form: str = "power_law", replicates: Replicates | None = None, level: float = 0.95
) -> pd.DataFrame:
    """Fit `form` to each metric's fitted quantity per (family, dataset, metric, k).

    The fitted quantity is the metric's `to_law` (e.g. -log RBP_k); a group that cannot be
    fitted (one size, or RBP_k = 1 so -log RBP_k = 0) gets a `note` instead of numbers. With
    replicates (power law only), each parameter gets the percentile interval of its refits, and
    `snr` says how far the sizes' spread stands above the resampling noise.
    """
    fit_form = FORMS[form]
    rows = []
    for (family, dataset, name, k), group in metrics.groupby(
        ["family", "dataset", "metric", "k"], dropna=False, sort=True
    ):
        metric = METRICS[name]
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        row: dict[str, Any] = {
            "family": family,
            "dataset": dataset,
            "metric": metric.law,
            "k": k,
            "n_models": len(group),
            "S_min": int(group["S"].min()),
            "S_max": int(group["S"].max()),
        }
        fit: dict[str, float] | None
        try:
            fit, note = fit_form.fit(group["S"].to_numpy(), y).row(), ""
        except ValueError as exc:
            fit, note = None, str(exc)
        row.update(fit or dict.fromkeys(fit_form.columns, math.nan))
        if replicates is not None and form == "power_law":
            row.update(_fit_intervals(group, y, replicates, level, fit))
        rows.append({**row, "note": note})
    df = pd.DataFrame(rows)
    df["k"] = df["k"].astype("Int64")
    return df


def _fit_intervals(
    group: pd.DataFrame, y: np.ndarray, replicates: Replicates, level: float, fit: Mapping[str, float] | None
) -> dict[str, float]:
    out = {f"{p}_ci_{side}": math.nan for p in ("alpha", "C", "r2") for side in ("low", "high")}
    reps = law_replicates(group, replicates)
    out["snr"] = spread_to_noise(y, list(reps.T)) if np.all(y > 0) else math.nan
    if fit is not None:
        params = fit_power_law_replicates(group["S"].to_numpy(), reps)
        for p, values in params.items():
            out[f"{p}_ci_low"], out[f"{p}_ci_high"] = (float(v) for v in interval(values, level, fit[p]))
    return out


def law_rows(fits: pd.DataFrame, law: str) -> dict[tuple[str, str, Any], Mapping[str, Any]]:
    """Fitted rows of one law by (family, dataset, k), k None for metrics without k."""
    sel = fits[(fits["metric"] == law) & fits["note"].fillna("").eq("")]
    return {(row["family"], row["dataset"], _k(row["k"])): row for row in sel.to_dict("records")}


def contrasts_table(metrics: pd.DataFrame, fits: pd.DataFrame, replicates: Replicates, level: float) -> pd.DataFrame:
    """alpha of -log RBP_k minus alpha of CE, per family x dataset x k: paired-bootstrap interval and p-value.

    Both laws are refitted on the same replicates (the same documents resampled for every model
    and metric), so the difference's interval carries their correlation.
    """
    rbp_fits, ce_fits = law_rows(fits, "neg_log_rbp"), law_rows(fits, "ce")
    rows = []
    for (family, dataset), frame in metrics.groupby(["family", "dataset"], sort=True):
        ce_fit = ce_fits.get((family, dataset, None))
        if ce_fit is None:
            continue
        ce = frame[frame["metric"] == "ce"]
        ce_alpha = fit_power_law_replicates(ce["S"].to_numpy(), law_replicates(ce, replicates))["alpha"]
        for k, group in frame[frame["metric"] == "rbp"].groupby("k", sort=True):
            fit = rbp_fits.get((family, dataset, int(k)))
            if fit is None:
                continue
            alpha = fit_power_law_replicates(group["S"].to_numpy(), law_replicates(group, replicates))["alpha"]
            difference = alpha - ce_alpha if len(group) == len(ce) else np.full_like(alpha, np.nan)
            low, high = interval(difference, level, fit["alpha"] - ce_fit["alpha"])
            rows.append(
                {
                    "family": family,
                    "dataset": dataset,
                    "metric": "neg_log_rbp",
                    "k": int(k),
                    "versus": "ce",
                    "alpha": fit["alpha"],
                    "alpha_versus": ce_fit["alpha"],
                    "difference": fit["alpha"] - ce_fit["alpha"],
                    "ci_low": float(low),
                    "ci_high": float(high),
                    "p_value": p_value(difference),
                    "replicates": int(np.isfinite(difference).sum()),
                }
            )
    df = pd.DataFrame(rows)
    if len(df):
        df["k"] = df["k"].astype("Int64")
    return df


def extrapolation_table(metrics: pd.DataFrame, replicates: Replicates, ks: Sequence[int], level: float) -> pd.DataFrame:
    """Fit the power law without the largest size (and, with >= 4 sizes, without the two largest);
    predict the held-out sizes' RBP_k and CE, with the interval of the refits' predictions."""
    wanted = metrics[(metrics["metric"] == "ce") | ((metrics["metric"] == "rbp") & metrics["k"].isin(list(ks)))]
    rows = []
    for (family, dataset, name, k), group in wanted.groupby(
        ["family", "dataset", "metric", "k"], dropna=False, sort=True
    ):
        metric = METRICS[name]
        group = group.sort_values("S", kind="stable")
        sizes = group["S"].to_numpy(dtype=np.float64)
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        reps = law_replicates(group, replicates)
        for held in (1, 2):
            n_fit = len(group) - held
            if (
                n_fit < 2
                or (held == 2 and len(group) < 4)
                or len(np.unique(sizes[:n_fit])) < 2
                or np.any(y[:n_fit] <= 0)
            ):
                continue
            law = FORMS["power_law"].fit(sizes[:n_fit], y[:n_fit])
            params = fit_power_law_replicates(sizes[:n_fit], reps[:, :n_fit])
            for i in range(n_fit, len(group)):
                predicted = float(metric.from_law(law.predict(sizes[i])))
                with np.errstate(invalid="ignore", over="ignore"):
                    samples = metric.from_law(params["C"] * sizes[i] ** (-params["alpha"]))
                low, high = interval(samples, level, predicted)
                observed = float(group["value"].iloc[i])
                rows.append(
                    {
                        "family": family,
                        "dataset": dataset,
                        "metric": name,
                        "k": _k(k),
                        "held_out_model": group["model"].iloc[i],
                        "S": int(sizes[i]),
                        "n_fit": n_fit,
                        "predicted": predicted,
                        "predicted_ci_low": float(low),
                        "predicted_ci_high": float(high),
                        "observed": observed,
                        "rel_error": predicted / observed - 1.0,
                        "covered": bool(low - 1e-12 * abs(observed) <= observed <= high + 1e-12 * abs(observed)),
                    }
                )
    df = pd.DataFrame(rows)
    if len(df):
        df["k"] = df["k"].astype("Int64")
    return df


def form_comparison_table(metrics: pd.DataFrame, forms: Sequence[str]) -> pd.DataFrame:
    """Every form of `forms` fitted to every (family, dataset, metric, k): parameters, leave-one-out
    RMSE and AICc in log space, and the preferred form of each group."""
    rows = []
    for (family, dataset, name, k), group in metrics.groupby(
        ["family", "dataset", "metric", "k"], dropna=False, sort=True
    ):
        metric = METRICS[name]
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        base = {"family": family, "dataset": dataset, "metric": metric.law, "k": k, "n_models": len(group)}
        rows.extend({**base, **r} for r in compare_forms(group["S"].to_numpy(), y, forms))
    df = pd.DataFrame(rows)
    df["k"] = df["k"].astype("Int64")
    return df


def lognormal_table(summaries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    rows = [
        {**{k: s[k] for k in MODEL_COLUMNS}, **s["lognormal"], "mean_log_rank": s["mean_log_rank"]} for s in summaries
    ]
    return pd.DataFrame(rows).sort_values(["family", "dataset", "S"], kind="stable").reset_index(drop=True)


def emergence_table(
    summaries: Iterable[Mapping[str, Any]],
    fits: pd.DataFrame,
    replicates: Replicates | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Predicted RBP_k^N, the fitted-law value exp(-N C S^-alpha), and the empirical run rate, with intervals."""
    rbp = METRICS["rbp"]
    laws = law_rows(fits, rbp.law)
    rows = []
    for s in summaries:
        value = dict(zip(s["k"], rbp.compute(summary_totals(s)), strict=True))
        for run in s["runs"]:
            fit = laws.get((s["family"], s["dataset"], run["k"]))
            law = FORMS["power_law"].from_row(fit).scaled(run["N"]) if fit else None  # -log p_{N,k} = N C S^-alpha
            row = {
                "family": s["family"],
                "model": s["model"],
                "dataset": s["dataset"],
                "S": s["S"],
                "k": run["k"],
                "N": run["N"],
                "predicted": float(value[run["k"]]) ** run["N"],
                "fitted": math.exp(-float(law.predict(s["S"]))) if law else math.nan,
                "empirical": run["empirical"],
                "n_runs": run["n_runs"],
            }
            if replicates is not None:
                row.update(_run_intervals(s, row, replicates, level))
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["family", "dataset", "k", "N", "S"], kind="stable").reset_index(drop=True)


def _run_intervals(
    s: Mapping[str, Any], row: Mapping[str, Any], replicates: Replicates, level: float
) -> dict[str, float]:
    """Intervals of a row of the emergence table (`predicted`, `empirical` at its k and N)."""
    totals = replicates.totals[(s["model"], s["dataset"])]
    i, j = s["emergence_k"].index(row["k"]), s["emergence_N"].index(row["N"])
    predicted = replicates.at(s["model"], s["dataset"], "rbp", row["k"]) ** row["N"]
    with np.errstate(invalid="ignore", divide="ignore"):
        empirical = totals["run_hits"][:, i, j] / totals["run_windows"][:, j]
    (p_low, p_high) = interval(predicted, level, row["predicted"])
    (e_low, e_high) = interval(empirical, level, row["empirical"])
    return {
        "predicted_ci_low": float(p_low),
        "predicted_ci_high": float(p_high),
        "empirical_ci_low": float(e_low),
        "empirical_ci_high": float(e_high),
    }


def _level(inputs: TableInputs) -> float:
    return float(inputs.settings["bootstrap"]["level"])


TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            name="metrics",
            build=lambda inputs: metrics_table(inputs.summaries, inputs.replicates, _level(inputs)),
            replicates=True,
            settings=("bootstrap",),
            caption=(
                "Tidy metrics: one row per model, dataset and metric. ``metric = rbp`` rows give RBP_k "
                "(fraction of scored tokens whose correct token ranks <= k) on a log-spaced k grid from 1 to "
                "the vocabulary size; ``metric = ce`` rows give the cross-entropy in nats. S is the number of "
                "non-embedding parameters; n_tokens the number of scored tokens. ``ci_low``, ``ci_high``: "
                "percentile interval (``analysis.bootstrap.level``) of a bootstrap over documents (tokens of one "
                "document are correlated, so documents, not tokens, are resampled)."
            ),
        ),
        Table(
            name="powerlaw_fits",
            build=lambda inputs: fits_table(inputs.tables["metrics"], "power_law", inputs.replicates, _level(inputs)),
            needs=("metrics",),
            summaries=False,
            replicates=True,
            settings=("bootstrap",),
            caption=(
                "Power-law fits ``y = C S^-alpha`` per family, dataset and k, by ordinary least squares of "
                "log y on log S. ``metric = neg_log_rbp`` fits y = -log RBP_k; ``metric = ce`` fits the "
                "cross-entropy. R² is computed in log space. ``*_ci_low``, ``*_ci_high``: percentile intervals "
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
                inputs.tables["metrics"], inputs.tables["powerlaw_fits"], inputs.replicates, _level(inputs)
            ),
            needs=("metrics", "powerlaw_fits"),
            summaries=False,
            replicates=True,
            settings=("bootstrap",),
            caption=(
                "The paper's coincidence tested: per family, dataset and k, alpha of -log RBP_k minus alpha of "
                "cross-entropy, with its paired-bootstrap percentile interval (both laws refitted on the same "
                "resampled documents) and a two-sided bootstrap p-value for a difference of zero."
            ),
        ),
        Table(
            name="extrapolation",
            build=lambda inputs: extrapolation_table(
                inputs.tables["metrics"], inputs.replicates, inputs.settings["extrapolation_k"], _level(inputs)
            ),
            needs=("metrics",),
            summaries=False,
            replicates=True,
            settings=("bootstrap", "extrapolation_k"),
            caption=(
                "Out-of-sample test: the power law fitted without the largest size (``n_fit`` = all but one) and, "
                "with at least four sizes, without the two largest, predicts the held-out sizes' RBP_k "
                "(``analysis.extrapolation_k``) and cross-entropy. ``predicted_ci_*``: percentile interval of the "
                "predictions of the law refitted on every bootstrap replicate; ``covered``: the observed value lies "
                "inside it; ``rel_error`` = predicted / observed - 1."
            ),
        ),
        Table(
            name="form_comparison",
            build=lambda inputs: form_comparison_table(inputs.tables["metrics"], inputs.settings["forms"]),
            needs=("metrics",),
            summaries=False,
            settings=("forms",),
            caption=(
                "Functional forms compared per family, dataset, metric and k: the pure power law ``C S^-alpha`` "
                "against ``E + C S^-alpha`` (E >= 0, Huber loss on log y from a grid of starts, as Hoffmann et al. "
                "2022). ``loo_rmse``: leave-one-out error in log space; ``aicc``: corrected Akaike criterion "
                "(log space; infinite when there are too few sizes for the form); ``preferred``: the lowest AICc, "
                "ties to the simpler form, so with few sizes the pure law wins unless the data demand a floor."
            ),
        ),
        Table(
            name="lognormal_fits",
            build=lambda inputs: lognormal_table(inputs.summaries),
            caption=(
                "Discrete truncated lognormal fits of the rank distribution, per model and dataset, by "
                "maximum likelihood over the rank histogram: P(R = r) is proportional to F(r + 1/2) - F(r - 1/2) "
                "on r = 1..|V|, F the lognormal CDF with parameters mu, sigma of log R."
            ),
        ),
        Table(
            name="emergence",
            build=lambda inputs: emergence_table(
                inputs.summaries, inputs.tables["powerlaw_fits"], inputs.replicates, _level(inputs)
            ),
            needs=("powerlaw_fits",),
            replicates=True,
            settings=("bootstrap",),
            caption=(
                "Emergence: for a task needing N consecutive tokens inside the top-k, ``predicted`` is RBP_k^N "
                "(independent positions), ``fitted`` is exp(-N C S^-alpha) from the power-law fit, and "
                "``empirical`` the measured fraction of N-token runs (consecutive scored tokens of one "
                "document) that lie entirely inside the top-k; n_runs is how many such runs exist. Intervals: "
                "document bootstrap, percentile."
            ),
        ),
    )
}


def build_table(
    name: str,
    summaries: Sequence[Mapping[str, Any]],
    tables: Mapping[str, pd.DataFrame],
    settings: Mapping[str, Any],
    replicates: Replicates | None = None,
) -> pd.DataFrame:
    """Build table `name` from the summaries, the tables it needs and the bootstrap replicates."""
    table = TABLES[name]
    return table.build(TableInputs(list(summaries), {n: tables[n] for n in table.needs}, dict(settings), replicates))
