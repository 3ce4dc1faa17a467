"""Tidy tables from per model x dataset summaries: metrics, power-law, lognormal, emergence."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from rankscale.powerlaw import fit_power_law


def metrics_table(summaries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (model, dataset, metric, k): metric 'rbp' (with k) or 'ce' (k empty)."""
    rows = []
    for s in summaries:
        base = {k: s[k] for k in ("family", "model", "dataset", "S", "vocab_size", "n_tokens")}
        rows.append({**base, "metric": "ce", "k": pd.NA, "value": s["ce"]})
        for k, v in s["rbp"].items():
            rows.append({**base, "metric": "rbp", "k": int(k), "value": v})
    df = pd.DataFrame(rows)
    df["k"] = df["k"].astype("Int64")
    return df.sort_values(["family", "dataset", "metric", "k", "S"], kind="stable").reset_index(drop=True)


def _fit_row(group: pd.DataFrame, y: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {"n_models": len(group), "S_min": int(group["S"].min()), "S_max": int(group["S"].max())}
    try:
        fit = fit_power_law(group["S"].to_numpy(), y)
        out.update(alpha=fit.alpha, C=fit.C, r2=fit.r2, note="")
    except ValueError as exc:
        out.update(alpha=math.nan, C=math.nan, r2=math.nan, note=str(exc))
    return out


def powerlaw_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Fit -log RBP_k = C S^-alpha per (family, dataset, k), and CE = C S^-alpha likewise.

    A k where some model has RBP_k = 1 (so -log RBP_k = 0) cannot be fitted in log space
    and gets a note instead of numbers.
    """
    rows = []
    for (family, dataset, metric, k), group in metrics.groupby(
        ["family", "dataset", "metric", "k"], dropna=False, sort=True
    ):
        if metric == "rbp":
            y = -np.log(group["value"].to_numpy(dtype=np.float64))
            name = "neg_log_rbp"
        else:
            y = group["value"].to_numpy(dtype=np.float64)
            name = "ce"
        rows.append({"family": family, "dataset": dataset, "metric": name, "k": k, **_fit_row(group, y)})
    df = pd.DataFrame(rows)
    df["k"] = df["k"].astype("Int64")
    return df


def lognormal_table(summaries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    rows = [
        {
            **{k: s[k] for k in ("family", "model", "dataset", "S", "vocab_size", "n_tokens")},
            **s["lognormal"],
            "mean_log_rank": s["mean_log_rank"],
        }
        for s in summaries
    ]
    return pd.DataFrame(rows).sort_values(["family", "dataset", "S"], kind="stable").reset_index(drop=True)


def emergence_table(summaries: Iterable[Mapping[str, Any]], powerlaw: pd.DataFrame) -> pd.DataFrame:
    """Predicted RBP_k^N, the fitted-law value exp(-N C S^-alpha), and the empirical run rate."""
    fits = powerlaw[powerlaw["metric"] == "neg_log_rbp"].set_index(["family", "dataset", "k"])
    rows = []
    for s in summaries:
        for run in s["runs"]:
            key = (s["family"], s["dataset"], run["k"])
            fitted = math.nan
            if key in fits.index:
                fit = fits.loc[key]
                if np.isfinite(fit["alpha"]):
                    fitted = math.exp(-run["N"] * fit["C"] * s["S"] ** (-fit["alpha"]))
            rows.append(
                {
                    "family": s["family"],
                    "model": s["model"],
                    "dataset": s["dataset"],
                    "S": s["S"],
                    "k": run["k"],
                    "N": run["N"],
                    "predicted": run["predicted"],
                    "fitted": fitted,
                    "empirical": run["empirical"],
                    "n_runs": run["n_runs"],
                }
            )
    return pd.DataFrame(rows).sort_values(["family", "dataset", "k", "N", "S"], kind="stable").reset_index(drop=True)
