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
from rankscale.conjecture import markov_run_rate
from rankscale.laws import FORMS, compare_forms, fit_joint_law, fit_power_law, fit_power_law_replicates
from rankscale.metrics import METRICS, metric_for_law
from rankscale.summary import summary_totals

MODEL_COLUMNS = ("family", "model", "dataset", "S", "D", "size", "final", "vocab_size", "n_tokens")


def finals(metrics: pd.DataFrame) -> pd.DataFrame:
    """The rows of each size's final model: the laws in S are fitted over these (checkpoints are D's)."""
    return metrics[metrics["final"].astype(bool)]


def final_summaries(summaries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [s for s in summaries if s["final"]]


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
    """A table as written (full precision, read back bit for bit; k and D as nullable integers).

    A table with no rows (e.g. fits in D when no model has checkpoints) reads back empty.
    """
    try:
        return pd.read_csv(path, dtype={"k": "Int64", "D": "Int64", "versus_k": "Int64"})
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


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
    df["D"] = df["D"].astype("Int64")
    return df.sort_values(["family", "dataset", "metric", "k", "S", "D"], kind="stable").reset_index(drop=True)


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


def _law_frame(frame: pd.DataFrame, law: str, k: int | None) -> pd.DataFrame:
    metric = metric_for_law(law).name
    sel = frame[frame["metric"] == metric]
    return sel[sel["k"].isna()] if k is None else sel[sel["k"] == k]


def contrasts_table(metrics: pd.DataFrame, fits: pd.DataFrame, replicates: Replicates, level: float) -> pd.DataFrame:
    """alpha of one law minus alpha of another, per family x dataset: paired-bootstrap interval and p-value.

    Both laws are refitted on the same replicates (the same documents resampled for every model
    and metric), so the difference's interval carries their correlation. Histogram statistics
    have fewer replicates (`analysis.lognormal.replicates`): they pair with the first draws.
    """
    rows = []
    laws = {"neg_log_rbp", "ce"} | {law for a, b, _ in CONTRASTS for law in (a, b)}
    fitted = {law: law_rows(fits, law) for law in laws}  # once: each lookup below is then a dict get
    for (family, dataset), frame in metrics.groupby(["family", "dataset"], sort=True):
        ks = sorted(int(k) for k in frame.loc[frame["metric"] == "rbp", "k"].dropna().unique())
        pairs = [("neg_log_rbp", k, "ce", None) for k in ks] + [(a, None, b, kb) for a, b, kb in CONTRASTS]
        for law, k, versus, versus_k in pairs:
            row = _contrast(frame, fitted, replicates, level, (law, k), (versus, versus_k))
            if row:
                rows.append({"family": family, "dataset": dataset, **row})
    df = pd.DataFrame(rows)
    if len(df):
        df["k"] = df["k"].astype("Int64")
        df["versus_k"] = df["versus_k"].astype("Int64")
    return df


def _contrast(
    frame: pd.DataFrame,
    fitted: Mapping[str, Mapping[tuple[str, str, Any], Mapping[str, Any]]],
    replicates: Replicates,
    level: float,
    first: tuple[str, int | None],
    second: tuple[str, int | None],
) -> dict[str, Any] | None:
    """One contrast row; `fitted` holds each law's fitted rows (`law_rows`)."""
    family, dataset = frame["family"].iloc[0], frame["dataset"].iloc[0]
    fit_a = fitted[first[0]].get((family, dataset, first[1]))
    fit_b = fitted[second[0]].get((family, dataset, second[1]))
    group_a, group_b = _law_frame(frame, *first), _law_frame(frame, *second)
    if fit_a is None or fit_b is None or list(group_a["model"]) != list(group_b["model"]):
        return None
    reps_a, reps_b = law_replicates(group_a, replicates), law_replicates(group_b, replicates)
    n = min(len(reps_a), len(reps_b))  # histogram statistics: the first draws of the same stream
    alpha_a = fit_power_law_replicates(group_a["S"].to_numpy(), reps_a[:n])["alpha"]
    alpha_b = fit_power_law_replicates(group_b["S"].to_numpy(), reps_b[:n])["alpha"]
    difference = alpha_a - alpha_b
    point = fit_a["alpha"] - fit_b["alpha"]
    low, high = interval(difference, level, point)
    return {
        "metric": first[0],
        "k": first[1],
        "versus": second[0],
        "versus_k": second[1],
        "alpha": fit_a["alpha"],
        "alpha_versus": fit_b["alpha"],
        "difference": point,
        "ci_low": float(low),
        "ci_high": float(high),
        "p_value": p_value(difference),
        "replicates": int(np.isfinite(difference).sum()),
    }


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


def form_comparison_table(metrics: pd.DataFrame, forms: Sequence[str], ks: Sequence[int]) -> pd.DataFrame:
    """Every form of `forms` fitted to every (family, dataset, metric) and, for RBP_k, every k of `ks`:
    parameters, leave-one-out RMSE and AICc in log space, and the preferred form of each group."""
    rows = []
    wanted = metrics[metrics["k"].isna() | metrics["k"].isin(list(ks))]
    for (family, dataset, name, k), group in wanted.groupby(
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
        {
            **{k: s[k] for k in MODEL_COLUMNS},
            **{k: s["lognormal"][k] for k in ("mu", "sigma", "mu_over_sigma", "truncated")},
            "loglik_per_token": s["rank_tests"]["lognormal"]["loglik"],
            "mean_log_rank": s["mean_log_rank"],
            "note": s["lognormal"]["note"],
        }
        for s in summaries
    ]
    return pd.DataFrame(rows).sort_values(["family", "dataset", "S"], kind="stable").reset_index(drop=True)


def _with_intervals(value: float, samples: np.ndarray, level: float, name: str) -> dict[str, float]:
    low, high = interval(samples, level, value)
    return {name: value, f"{name}_ci_low": float(low), f"{name}_ci_high": float(high)}


def conjecture_table(summaries: Iterable[Mapping[str, Any]], replicates: Replicates, level: float) -> pd.DataFrame:
    """Per model x dataset: measured CE, the error entropy and CE's decomposition, the fitted lognormal and
    what it implies (the paper's Appendix B: exact, and its closed-form approximation), each with its
    document-bootstrap interval."""
    rows = []
    for s in summaries:
        totals = replicates.totals[(s["model"], s["dataset"])]
        d = s["distribution"]
        row: dict[str, Any] = {k: s[k] for k in MODEL_COLUMNS}
        ce = float(METRICS["ce"].compute(summary_totals(s)))
        row.update(_with_intervals(ce, replicates.at(s["model"], s["dataset"], "ce"), level, "ce"))
        names = ["ee", "ee_mm", "self_alignment", "confidence", "mu", "sigma", "ee_lognormal", "neg_log_p1_lognormal"]
        names += [f"neg_log_rbp{k}_lognormal" for k in s["law_k"]] + ["ce_appendix_b", "neg_log_p1_appendix_b"]
        for name in names:
            row.update(_with_intervals(d[name], totals[name], level, name))
        rows.append(
            {
                **row,
                "replicates": s["distribution_replicates"],
                "truncated": s["lognormal"]["truncated"],
                "note": d["note"],
            }
        )
    return pd.DataFrame(rows).sort_values(["family", "dataset", "S"], kind="stable").reset_index(drop=True)


def rank_tests_table(summaries: Iterable[Mapping[str, Any]], replicates: Replicates, level: float) -> pd.DataFrame:
    """The lognormal against each alternative family, per model x dataset: log-likelihoods per token,
    Vuong's z and p, and the document-bootstrap interval of the mean log-likelihood ratio."""
    rows = []
    for s in summaries:
        tests = s["rank_tests"]
        totals = replicates.totals[(s["model"], s["dataset"])]
        for name, test in tests.items():
            if name == "lognormal":
                continue
            samples = totals[f"llr_{name}"] / totals["n"]
            verdict = "inconclusive"
            if test["p_value"] < 1 - level:
                verdict = "lognormal" if test["z"] > 0 else name
            rows.append(
                {
                    **{k: s[k] for k in MODEL_COLUMNS},
                    "alternative": name,
                    "loglik_lognormal": tests["lognormal"]["loglik"],
                    "loglik_alternative": test["loglik"],
                    "alternative_params": " ".join(f"{v:.6g}" for v in test["params"]),
                    **_with_intervals(test["mean_llr"], samples, level, "mean_llr"),
                    "z": test["z"],
                    "p_value": test["p_value"],
                    "better": verdict,
                }
            )
    return (
        pd.DataFrame(rows).sort_values(["family", "dataset", "S", "alternative"], kind="stable").reset_index(drop=True)
    )


def lognormal_trends_table(
    summaries: Sequence[Mapping[str, Any]], replicates: Replicates, level: float
) -> pd.DataFrame:
    """Hypothesis 2 of the paper: mu, sigma and mu/sigma of the fitted lognormal, linear in log S,
    per family x dataset, with slope, intercept and R^2 refitted on every replicate."""
    rows = []
    frame = pd.DataFrame([{k: s[k] for k in ("family", "model", "dataset", "S")} for s in summaries])
    for (family, dataset), group in frame.groupby(["family", "dataset"], sort=True):
        group = group.sort_values("S")
        x = np.log(group["S"].to_numpy(dtype=np.float64))
        by_model = [replicates.totals[(m, dataset)] for m in group["model"]]
        point = {
            m: next(s for s in summaries if s["model"] == m and s["dataset"] == dataset)["distribution"]
            for m in group["model"]
        }
        for quantity in ("mu", "sigma", "mu_over_sigma"):
            y = np.array([_lognormal_value(point[m], quantity) for m in group["model"]], dtype=np.float64)
            samples = np.stack([_lognormal_value(t, quantity) for t in by_model], axis=1)  # [R, models]
            row: dict[str, Any] = {"family": family, "dataset": dataset, "quantity": quantity, "n_models": len(group)}
            if len(np.unique(x)) < 2 or not np.all(np.isfinite(y)):
                rows.append({**row, "note": "needs two sizes with a fitted lognormal"})
                continue
            fit = linear_fit(x, y[None, :])
            reps = linear_fit(x, samples)
            for p in ("slope", "intercept", "r2"):
                row.update(_with_intervals(float(fit[p][0]), reps[p], level, p))
            rows.append({**row, "note": ""})
    return pd.DataFrame(rows)


def _lognormal_value(d: Mapping[str, Any], quantity: str) -> Any:
    return d["mu"] / d["sigma"] if quantity == "mu_over_sigma" else d[quantity]


def linear_fit(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """OLS of each row of y [B, M] on x [M]: slope, intercept, R^2 per row (NaN rows stay NaN)."""
    xc = x - x.mean()
    mean = y.mean(axis=1, keepdims=True)
    slope = (y - mean) @ xc / (xc @ xc)
    intercept = mean[:, 0] - slope * x.mean()
    residual = y - (intercept[:, None] + slope[:, None] * x)
    ss_tot = ((y - mean) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(ss_tot > 0, 1 - (residual**2).sum(axis=1) / ss_tot, np.nan)
    return {"slope": slope, "intercept": intercept, "r2": r2}


def emergence_table(
    summaries: Iterable[Mapping[str, Any]],
    fits: pd.DataFrame,
    replicates: Replicates | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per model x dataset x k x N: the empirical rate of N-token runs inside the top-k, what independent
    positions predict (RBP_k^N), what a first-order Markov chain of hits predicts, and the fitted law
    exp(-N C S^-alpha); intervals from the document bootstrap."""
    rbp = METRICS["rbp"]
    laws = law_rows(fits, rbp.law)
    rows = []
    for s in summaries:
        totals = summary_totals(s)
        value = dict(zip(s["k"], rbp.compute(totals), strict=True))
        for run in s["runs"]:
            i = s["emergence_k"].index(run["k"])
            fit = laws.get((s["family"], s["dataset"], run["k"])) if s["final"] else None  # the law in S: final models
            law = FORMS["power_law"].from_row(fit).scaled(run["N"]) if fit else None  # -log p_{N,k} = N C S^-alpha
            predicted = float(value[run["k"]]) ** run["N"]
            markov = float(
                markov_run_rate(value[run["k"]], totals["pairs_prev_hit"][i], totals["pairs_both_hit"][i], run["N"])
            )
            row = {
                **{c: s[c] for c in ("family", "model", "dataset", "S", "D", "size", "final")},
                "k": run["k"],
                "N": run["N"],
                "empirical": run["empirical"],
                "predicted": predicted,
                "markov": markov,
                "fitted": math.exp(-float(law.predict(s["S"]))) if law else math.nan,
                "ratio_empirical_independent": run["empirical"] / predicted if predicted > 0 else math.nan,
                "n_runs": run["n_runs"],
            }
            if replicates is not None:
                row.update(_run_intervals(s, row, replicates, level))
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["family", "dataset", "k", "N", "S"], kind="stable").reset_index(drop=True)


def run_replicates(s: Mapping[str, Any], k: int, n: int, replicates: Replicates) -> dict[str, np.ndarray]:
    """Replicates [B] of the empirical, independent and Markov N-run rates of one model x dataset at (k, N)."""
    totals = replicates.totals[(s["model"], s["dataset"])]
    i, j = s["emergence_k"].index(k), s["emergence_N"].index(n)
    rbp = replicates.at(s["model"], s["dataset"], "rbp", k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "empirical": totals["run_hits"][:, i, j] / totals["run_windows"][:, j],
            "predicted": rbp**n,
            "markov": markov_run_rate(rbp, totals["pairs_prev_hit"][:, i], totals["pairs_both_hit"][:, i], n),
        }


def _run_intervals(
    s: Mapping[str, Any], row: Mapping[str, Any], replicates: Replicates, level: float
) -> dict[str, float]:
    """Intervals of a row of the emergence table (its rates at its k and N, and their ratio)."""
    samples = run_replicates(s, row["k"], row["N"], replicates)
    with np.errstate(invalid="ignore", divide="ignore"):
        samples["ratio_empirical_independent"] = samples["empirical"] / samples["predicted"]
    out: dict[str, float] = {}
    for name, values in samples.items():
        low, high = interval(values, level, row[name])
        out.update({f"{name}_ci_low": float(low), f"{name}_ci_high": float(high)})
    return out


def emergence_laws_table(
    summaries: Sequence[Mapping[str, Any]], fits: pd.DataFrame, replicates: Replicates, level: float
) -> pd.DataFrame:
    """The paper's claim -log p_{N,k} = N C S^-alpha tested on the measured run rates: per family x dataset
    x k x N, the power law fitted to -log(empirical N-run rate), its exponent against alpha_k of
    -log RBP_k (paired-bootstrap interval of the difference, p-value), and C_N / (N C)."""
    laws = law_rows(fits, "neg_log_rbp")
    frame = pd.DataFrame([{k: s[k] for k in ("family", "model", "dataset", "S")} | {"summary": s} for s in summaries])
    rows = []
    for (family, dataset), group in frame.groupby(["family", "dataset"], sort=True):
        group = group.sort_values("S", kind="stable")
        sizes = group["S"].to_numpy(dtype=np.float64)
        first = group["summary"].iloc[0]
        for k in first["emergence_k"]:
            fit_k = laws.get((family, dataset, k))
            if fit_k is None or any(k not in s["emergence_k"] for s in group["summary"]):
                continue
            rbp_rows = pd.DataFrame(
                [{"model": s["model"], "dataset": dataset, "metric": "rbp", "k": k} for s in group["summary"]]
            )
            alpha_k = fit_power_law_replicates(sizes, law_replicates(rbp_rows, replicates))["alpha"]
            for n in first["emergence_N"]:
                observed = np.array(
                    [next(r["empirical"] for r in s["runs"] if r["k"] == k and r["N"] == n) for s in group["summary"]]
                )
                row: dict[str, Any] = {"family": family, "dataset": dataset, "k": k, "N": n, "n_models": len(group)}
                with np.errstate(divide="ignore", invalid="ignore"):
                    y = -np.log(observed)
                if not np.all((y > 0) & np.isfinite(y)) or len(np.unique(sizes)) < 2:
                    rows.append({**row, "note": "a run rate of 0 or 1 (or one size): no power law in log space"})
                    continue
                law = FORMS["power_law"].fit(sizes, y)
                with np.errstate(divide="ignore", invalid="ignore"):
                    samples = -np.log(
                        np.stack([run_replicates(s, k, n, replicates)["empirical"] for s in group["summary"]], axis=1)
                    )
                alpha_n = fit_power_law_replicates(sizes, samples)["alpha"]
                difference = alpha_n - alpha_k
                low, high = interval(difference, level, law.alpha - fit_k["alpha"])
                rows.append(
                    {
                        **row,
                        **_with_intervals(law.alpha, alpha_n, level, "alpha_runs"),
                        "alpha_k": fit_k["alpha"],
                        "difference": law.alpha - fit_k["alpha"],
                        "difference_ci_low": float(low),
                        "difference_ci_high": float(high),
                        "p_value": p_value(difference),
                        "C_runs": law.C,
                        "C_ratio": law.C / (n * fit_k["C"]),
                        "r2": law.r2,
                        "note": "",
                    }
                )
    return pd.DataFrame(rows)


def _tokens_groups(metrics: pd.DataFrame, ks: Sequence[int]) -> Iterable[tuple[tuple[Any, ...], pd.DataFrame]]:
    """Rows with a known D of CE and of RBP_k at `ks`, grouped by (family, dataset, metric, k)."""
    ce = metrics["metric"] == "ce"
    rbp = (metrics["metric"] == "rbp") & metrics["k"].isin(list(ks))
    known = metrics[metrics["D"].notna() & (ce | rbp)]
    return known.groupby(["family", "dataset", "metric", "k"], dropna=False, sort=True)


def data_fits_table(metrics: pd.DataFrame, replicates: Replicates, ks: Sequence[int], level: float) -> pd.DataFrame:
    """Per size: the power law in training tokens, y = C D^-beta, over its checkpoints (CE and -log RBP_k at
    `ks`), with intervals from refitting on every bootstrap replicate."""
    rows = []
    for (family, dataset, name, k), frame in _tokens_groups(metrics, ks):
        metric = METRICS[name]
        for size, group in frame.groupby("size", sort=True):
            if group["D"].nunique() < 2:
                continue  # a size without checkpoints has no law in D
            group = group.sort_values("D", kind="stable")
            tokens = group["D"].to_numpy(dtype=np.float64)
            y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
            row: dict[str, Any] = {
                "family": family,
                "size": size,
                "S": int(group["S"].iloc[-1]),
                "dataset": dataset,
                "metric": metric.law,
                "k": k,
                "n_checkpoints": len(group),
                "D_min": int(tokens.min()),
                "D_max": int(tokens.max()),
            }
            try:
                law = fit_power_law(tokens, y)
            except ValueError as exc:
                rows.append({**row, "note": str(exc)})
                continue
            reps = fit_power_law_replicates(tokens, law_replicates(group, replicates))
            row.update(_with_intervals(law.alpha, reps["alpha"], level, "beta"))
            row.update(_with_intervals(law.C, reps["C"], level, "C"))
            row.update(_with_intervals(law.r2, reps["r2"], level, "r2"))
            rows.append({**row, "note": ""})
    df = pd.DataFrame(rows)
    if len(df):
        df["k"] = df["k"].astype("Int64")
    return df


def joint_fits_table(
    metrics: pd.DataFrame, replicates: Replicates, ks: Sequence[int], level: float, refits: int
) -> pd.DataFrame:
    """y = E + A S^-alpha + B D^-beta over every size and checkpoint (Hoffmann et al.'s Approach 3), per
    family x dataset x metric: parameters with intervals from `refits` bootstrap refits (each started at the
    full-data fit), and the law's error on the held-out corner, the largest S at the largest D."""
    rows = []
    for (family, dataset, name, k), group in _tokens_groups(metrics, ks):
        if group["D"].nunique() < 2:
            continue  # no checkpoints: nothing to fit in D
        metric = METRICS[name]
        size, tokens = group["S"].to_numpy(dtype=np.float64), group["D"].to_numpy(dtype=np.float64)
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        row: dict[str, Any] = {
            "family": family,
            "dataset": dataset,
            "metric": metric.law,
            "k": k,
            "n_points": len(group),
        }
        try:
            law = fit_joint_law(size, tokens, y)
        except ValueError as exc:
            rows.append({**row, "note": str(exc)})
            continue
        samples = law_replicates(group, replicates)[:refits]
        refitted = []
        for values in samples:
            try:
                refitted.append(fit_joint_law(size, tokens, values, start=law).row())
            except ValueError:
                refitted.append(dict.fromkeys(law.row(), math.nan))
        for p, value in law.row().items():
            row.update(_with_intervals(value, np.array([r[p] for r in refitted]), level, p))
        residual = np.log(y) - np.log(law.predict(size, tokens))
        corner = (size == size.max()) & (tokens == tokens[size == size.max()].max())
        held = {"corner_model": group["model"].to_numpy()[corner][0], "corner_observed": float(y[corner][0])}
        try:
            without = fit_joint_law(size[~corner], tokens[~corner], y[~corner])
            held["corner_predicted"] = float(without.predict(size[corner], tokens[corner])[0])
            held["corner_rel_error"] = held["corner_predicted"] / held["corner_observed"] - 1
        except ValueError as exc:
            held["corner_note"] = str(exc)
        rows.append(
            {**row, "rmse_log": float(np.sqrt(np.mean(residual**2))), "refits": len(refitted), **held, "note": ""}
        )
    df = pd.DataFrame(rows)
    if len(df):
        df["k"] = df["k"].astype("Int64")
    return df


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
            build=lambda inputs: fits_table(
                finals(inputs.tables["metrics"]), "power_law", inputs.replicates, _level(inputs)
            ),
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
                finals(inputs.tables["metrics"]), inputs.tables["powerlaw_fits"], inputs.replicates, _level(inputs)
            ),
            needs=("metrics", "powerlaw_fits"),
            summaries=False,
            replicates=True,
            settings=("bootstrap",),
            caption=(
                "Exponents compared, with paired-bootstrap percentile intervals (both laws refitted on the same "
                "resampled documents) and a two-sided bootstrap p-value for a difference of zero: the paper's "
                "coincidence (alpha of -log RBP_k minus alpha of cross-entropy, every k), and the laws of the error "
                "entropy and of the fitted lognormal's entropy and -log P(R = 1) against cross-entropy and "
                "-log RBP_1 (``versus``, ``versus_k``)."
            ),
        ),
        Table(
            name="extrapolation",
            build=lambda inputs: extrapolation_table(
                finals(inputs.tables["metrics"]), inputs.replicates, inputs.settings["law_k"], _level(inputs)
            ),
            needs=("metrics",),
            summaries=False,
            replicates=True,
            settings=("bootstrap", "law_k"),
            caption=(
                "Out-of-sample test: the power law fitted without the largest size (``n_fit`` = all but one) and, "
                "with at least four sizes, without the two largest, predicts the held-out sizes' RBP_k "
                "(``analysis.law_k``) and cross-entropy. ``predicted_ci_*``: percentile interval of the "
                "predictions of the law refitted on every bootstrap replicate; ``covered``: the observed value lies "
                "inside it; ``rel_error`` = predicted / observed - 1."
            ),
        ),
        Table(
            name="form_comparison",
            build=lambda inputs: form_comparison_table(
                finals(inputs.tables["metrics"]), inputs.settings["forms"], inputs.settings["law_k"]
            ),
            needs=("metrics",),
            summaries=False,
            settings=("forms", "law_k"),
            caption=(
                "Functional forms compared per family, dataset, metric (and k of ``analysis.law_k``): the pure power law ``C S^-alpha`` "
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
                "on r = 1..|V|, F the lognormal CDF with parameters mu, sigma of log R (``truncated = False``: "
                "normalised over r = 1..inf instead, ``analysis.lognormal.truncate``). Intervals: conjecture.csv."
            ),
        ),
        Table(
            name="conjecture",
            build=lambda inputs: conjecture_table(inputs.summaries, inputs.replicates, _level(inputs)),
            replicates=True,
            settings=("bootstrap",),
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
            build=lambda inputs: rank_tests_table(inputs.summaries, inputs.replicates, _level(inputs)),
            replicates=True,
            settings=("bootstrap",),
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
            build=lambda inputs: lognormal_trends_table(
                final_summaries(inputs.summaries), inputs.replicates, _level(inputs)
            ),
            replicates=True,
            settings=("bootstrap",),
            caption=(
                "Hypothesis 2 of the paper: mu, sigma and mu/sigma of the fitted lognormal against log S, per family "
                "and dataset: slope, intercept and R² of the least-squares line, with intervals from refitting "
                "on every bootstrap replicate."
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
                "Emergence: for a task needing N consecutive tokens inside the top-k, ``empirical`` is the measured "
                "fraction of N-token runs (consecutive scored tokens of one document; ``n_runs`` of them) that lie "
                "entirely inside the top-k; ``predicted`` = RBP_k^N assumes independent positions; ``markov`` = "
                "RBP_k · P(hit | previous hit)^(N-1) a first-order Markov chain of hits; ``fitted`` = "
                "exp(-N C S^-alpha) from the power-law fit; ``ratio_empirical_independent`` how far independence is "
                "off. Intervals: document bootstrap, percentile."
            ),
        ),
        Table(
            name="data_fits",
            build=lambda inputs: data_fits_table(
                inputs.tables["metrics"], inputs.replicates, inputs.settings["law_k"], _level(inputs)
            ),
            needs=("metrics",),
            summaries=False,
            replicates=True,
            settings=("bootstrap", "law_k"),
            caption=(
                "Scaling in training tokens: per size (its checkpoints, each with the training tokens D it has "
                "seen), the power law y = C D^-beta of cross-entropy and of -log RBP_k at ``analysis.law_k``, by "
                "least squares in log-log space, with intervals from refitting on every bootstrap replicate. Empty "
                "when no model declares D (``ladder.train.checkpoints``, or ``D`` on model entries)."
            ),
        ),
        Table(
            name="joint_fits",
            build=lambda inputs: joint_fits_table(
                inputs.tables["metrics"],
                inputs.replicates,
                inputs.settings["law_k"],
                _level(inputs),
                inputs.settings["bootstrap"]["refits"],
            ),
            needs=("metrics",),
            summaries=False,
            replicates=True,
            settings=("bootstrap", "law_k"),
            caption=(
                "Size and training tokens together: y = E + A S^-alpha + B D^-beta over every size and checkpoint, "
                "fitted as Hoffmann et al. 2022's Approach 3 (Huber loss, delta 1e-3, on log y; L-BFGS from a grid "
                "of starts). Intervals: the law refitted on the first ``analysis.bootstrap.refits`` bootstrap "
                "replicates (``refits``), each started at the full-data fit. ``corner_*``: the law fitted without the "
                "largest size at its largest D predicts that point; ``rmse_log``: the fit's error in log space."
            ),
        ),
        Table(
            name="emergence_laws",
            build=lambda inputs: emergence_laws_table(
                final_summaries(inputs.summaries), inputs.tables["powerlaw_fits"], inputs.replicates, _level(inputs)
            ),
            needs=("powerlaw_fits",),
            replicates=True,
            settings=("bootstrap",),
            caption=(
                "The paper's emergence law -log p_{N,k} = N C S^-alpha tested on measured run rates: per family, "
                "dataset, k and N, the power law fitted to -log(empirical N-run rate), its exponent "
                "``alpha_runs`` against ``alpha_k`` of -log RBP_k (``difference`` with its paired-bootstrap interval "
                "and p-value), and ``C_ratio`` = C_runs / (N C), 1 if positions were independent."
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
