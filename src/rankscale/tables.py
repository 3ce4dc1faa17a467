"""The result tables (results/tables/<name>.csv), built from per model x dataset summaries.

To add a table: write `build(inputs) -> DataFrame` and add a `Table` to `TABLES` with the
tables it reads (`needs`), the `analysis:` settings it reads and its report caption. The
`table` rule makes every table in `TABLES`, each in its own job, so changing one table's
settings reruns that table (and what reads it) only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import FORMS
from rankscale.metrics import METRICS
from rankscale.summary import summary_totals

MODEL_COLUMNS = ("family", "model", "dataset", "S", "vocab_size", "n_tokens")


@dataclass(frozen=True)
class TableInputs:
    summaries: list[dict[str, Any]]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # the tables this one needs, by name
    settings: dict[str, Any] = field(default_factory=dict)  # the `analysis:` settings it reads


@dataclass(frozen=True)
class Table:
    name: str  # results/tables/<name>.csv
    build: Callable[[TableInputs], pd.DataFrame]
    caption: str  # reStructuredText, shown in the Snakemake report
    needs: tuple[str, ...] = ()  # tables it is built from
    settings: tuple[str, ...] = ()  # `analysis:` keys it reads
    summaries: bool = True  # reads every model x dataset summary


def read_table(path: str | Path) -> pd.DataFrame:
    """A table as written (full precision, read back bit for bit; k as a nullable integer)."""
    return pd.read_csv(path, dtype={"k": "Int64"})


def metrics_table(summaries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (model, dataset, metric[, k]) for every metric of `METRICS`."""
    rows = []
    for s in summaries:
        base = {k: s[k] for k in MODEL_COLUMNS}
        totals = summary_totals(s)
        for metric in METRICS.values():
            values = metric.compute(totals)
            if metric.per_k:
                rows.extend(
                    {**base, "metric": metric.name, "k": int(k), "value": float(v)}
                    for k, v in zip(s["k"], values, strict=True)
                )
            else:
                rows.append({**base, "metric": metric.name, "k": pd.NA, "value": float(values)})
    df = pd.DataFrame(rows)
    df["k"] = df["k"].astype("Int64")
    return df.sort_values(["family", "dataset", "metric", "k", "S"], kind="stable").reset_index(drop=True)


def fits_table(metrics: pd.DataFrame, form: str = "power_law") -> pd.DataFrame:
    """Fit `form` to each metric's fitted quantity per (family, dataset, metric, k).

    The fitted quantity is the metric's `to_law` (e.g. -log RBP_k); a group that cannot be
    fitted (one size, or RBP_k = 1 so -log RBP_k = 0) gets a `note` instead of numbers.
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
        try:
            row.update(fit_form.fit(group["S"].to_numpy(), y).row(), note="")
        except ValueError as exc:
            row.update(dict.fromkeys(fit_form.columns, math.nan), note=str(exc))
        rows.append(row)
    df = pd.DataFrame(rows)
    df["k"] = df["k"].astype("Int64")
    return df


def law_rows(fits: pd.DataFrame, law: str) -> dict[tuple[str, str, Any], Mapping[str, Any]]:
    """Fitted rows of one law by (family, dataset, k), k None for metrics without k."""
    sel = fits[(fits["metric"] == law) & fits["note"].fillna("").eq("")]
    return {
        (row["family"], row["dataset"], None if pd.isna(row["k"]) else int(row["k"])): row
        for row in sel.to_dict("records")
    }


def lognormal_table(summaries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    rows = [
        {**{k: s[k] for k in MODEL_COLUMNS}, **s["lognormal"], "mean_log_rank": s["mean_log_rank"]} for s in summaries
    ]
    return pd.DataFrame(rows).sort_values(["family", "dataset", "S"], kind="stable").reset_index(drop=True)


def emergence_table(summaries: Iterable[Mapping[str, Any]], fits: pd.DataFrame) -> pd.DataFrame:
    """Predicted RBP_k^N, the fitted-law value exp(-N C S^-alpha), and the empirical run rate."""
    rbp = METRICS["rbp"]
    laws = law_rows(fits, rbp.law)
    rows = []
    for s in summaries:
        value = dict(zip(s["k"], rbp.compute(summary_totals(s)), strict=True))
        for run in s["runs"]:
            fit = laws.get((s["family"], s["dataset"], run["k"]))
            law = FORMS["power_law"].from_row(fit).scaled(run["N"]) if fit else None  # -log p_{N,k} = N C S^-alpha
            fitted = math.exp(-float(law.predict(s["S"]))) if law else math.nan
            rows.append(
                {
                    "family": s["family"],
                    "model": s["model"],
                    "dataset": s["dataset"],
                    "S": s["S"],
                    "k": run["k"],
                    "N": run["N"],
                    "predicted": float(value[run["k"]]) ** run["N"],
                    "fitted": fitted,
                    "empirical": run["empirical"],
                    "n_runs": run["n_runs"],
                }
            )
    return pd.DataFrame(rows).sort_values(["family", "dataset", "k", "N", "S"], kind="stable").reset_index(drop=True)


TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            name="metrics",
            build=lambda inputs: metrics_table(inputs.summaries),
            caption=(
                "Tidy metrics: one row per model, dataset and metric. ``metric = rbp`` rows give RBP_k "
                "(fraction of scored tokens whose correct token ranks <= k) on a log-spaced k grid from 1 to "
                "the vocabulary size; ``metric = ce`` rows give the cross-entropy in nats. S is the number of "
                "non-embedding parameters; n_tokens the number of scored tokens."
            ),
        ),
        Table(
            name="powerlaw_fits",
            build=lambda inputs: fits_table(inputs.tables["metrics"]),
            needs=("metrics",),
            summaries=False,
            caption=(
                "Power-law fits ``y = C S^-alpha`` per family, dataset and k, by ordinary least squares of "
                "log y on log S. ``metric = neg_log_rbp`` fits y = -log RBP_k; ``metric = ce`` fits the "
                "cross-entropy. R² is computed in log space. A row whose ``note`` is set could not be fitted "
                "(fewer than two sizes, or RBP_k = 1 for some model)."
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
            build=lambda inputs: emergence_table(inputs.summaries, inputs.tables["powerlaw_fits"]),
            needs=("powerlaw_fits",),
            caption=(
                "Emergence: for a task needing N consecutive tokens inside the top-k, ``predicted`` is RBP_k^N "
                "(independent positions), ``fitted`` is exp(-N C S^-alpha) from the power-law fit, and "
                "``empirical`` the measured fraction of N-token runs (consecutive scored tokens of one "
                "document) that lie entirely inside the top-k; n_runs is how many such runs exist."
            ),
        ),
    )
}


def build_table(
    name: str, summaries: Sequence[Mapping[str, Any]], tables: Mapping[str, pd.DataFrame], settings: Mapping[str, Any]
) -> pd.DataFrame:
    """Build table `name` from the summaries and the tables it needs."""
    table = TABLES[name]
    return table.build(TableInputs(list(summaries), {n: tables[n] for n in table.needs}, dict(settings)))
