"""Training-run noise: how much a size's metrics move across seeds, and the law fitted to each seed alone.

Where some size of a family was trained with several seeds (`ladder.train.seeds`, or hub entries with
`seed` and `replica_of`), the law tables' intervals already resample the seeds within each size on top
of the documents (the hierarchical bootstrap, `rankscale.tables.noise.Noise`). These two tables say how
large that source is: against the document-sampling noise of one run, and as the spread of the
exponent across seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bootstrap import has_replicas, seed_draws
from rankscale.laws import FitForm, Points
from rankscale.metrics import METRICS
from rankscale.tables.base import (
    Replicates,
    TableInputs,
    interval_columns,
    law_parameters,
    rows_frame,
    typed,
    with_intervals,
)
from rankscale.tables.lawkit import GROUP, fit_or_note
from rankscale.tables.noise import SIZE_LEVEL_COLUMNS, LawNoise, Noise, law_replicates
from rankscale.tables.selection import FitIndex, LawKey, finals, optional_int

VARIANCE_COLUMNS = (
    "family", "dataset", "size", "S", "metric", "k", "n_seeds", "seeds", "mean", "sd_seeds",
    *interval_columns("var_seeds"), "var_documents", *interval_columns("share_seeds"),
)  # fmt: skip


def seed_fits_columns(form: FitForm) -> list[str]:
    """The columns of seed_fits.csv fitted as `form`, which its header keeps when no size has several seeds."""
    columns = ["family", "dataset", "metric", "k", "seed", "n_models"]
    columns += [c for p in form.columns for c in interval_columns(p)]
    columns += [*SIZE_LEVEL_COLUMNS, "noise"]
    columns += ["not_identified"] if form.bounds else []
    columns += ["note", "n_seeds", "exponent_seed_mean", "exponent_seed_sd", "exponent_seed_min", "exponent_seed_max"]
    if form.exponent:
        columns += ["exponent_pooled", "exponent_pooled_ci_low", "exponent_pooled_ci_high", "pooled_noise"]
    return columns


def _wanted(metrics: pd.DataFrame, ks: Sequence[int]) -> pd.DataFrame:
    """Final models' rows of cross-entropy and of RBP_k at `ks`, in families where some size has several seeds."""
    rows = finals(metrics)
    rows = rows[(rows["metric"] == "ce") | ((rows["metric"] == "rbp") & rows["k"].isin(list(ks)))]
    seeded = [f for f, group in rows.groupby("family") if has_replicas(group.drop_duplicates("model")["replica_of"])]
    return rows[rows["family"].isin(seeded)]


def seed_variance_table(
    metrics: pd.DataFrame, replicates: Replicates, law_k: Sequence[int], level: float, seed: int
) -> pd.DataFrame:
    """Per size with several seeds, dataset and metric: the variance of the metric across seeds against the
    document-sampling variance of one run, and the share due to seeds, with a hierarchical-bootstrap interval."""
    rows = []
    for (family, dataset, name, k), group in _wanted(metrics, law_k).groupby(GROUP, dropna=False, sort=True):
        group = group.sort_values(["S", "seed"], kind="stable")
        metric = METRICS[name]
        columns = np.stack([replicates.at(m, d, name, optional_int(k)) for m, d in zip(group["model"], group["dataset"], strict=True)], axis=1)  # fmt: skip
        draws = seed_draws(group["replica_of"], len(columns), seed, str(family), str(dataset))
        for size, runs in group.groupby("replica_of", sort=False):
            if len(runs) < 2:
                continue
            cols = np.array(sorted(group.index.get_loc(i) for i in runs.index))
            values = runs["value"].to_numpy(dtype=np.float64)
            m = len(cols)
            var_documents = np.nanvar(columns[:, cols], axis=0, ddof=1)
            # the seed level resampled: runs drawn with replacement, their spread inflated by m / (m - 1)
            drawn = np.take_along_axis(columns, draws[:, cols], axis=1)
            centre = columns[:, cols].mean(axis=1, keepdims=True)
            resampled = centre + math.sqrt(m / (m - 1)) * (drawn - centre)
            var_seeds_b = np.var(resampled, axis=1, ddof=1)
            var_documents_b = var_documents[np.searchsorted(cols, draws[:, cols])].mean(axis=1)
            var_seeds = float(np.var(values, ddof=1))
            point_documents = float(var_documents.mean())
            with np.errstate(invalid="ignore", divide="ignore"):
                share_b = var_seeds_b / (var_seeds_b + var_documents_b)
            share = var_seeds / (var_seeds + point_documents) if var_seeds + point_documents > 0 else math.nan
            rows.append(
                {
                    "family": family,
                    "dataset": dataset,
                    "size": size,
                    "S": int(runs["S"].iloc[0]),
                    "metric": metric.name,
                    "k": k,
                    "n_seeds": m,
                    "seeds": " ".join(str(optional_int(s)) for s in runs["seed"]),
                    "mean": float(values.mean()),
                    "sd_seeds": math.sqrt(var_seeds),
                    **with_intervals(var_seeds, var_seeds_b, level, "var_seeds"),
                    "var_documents": point_documents,
                    **with_intervals(share, share_b, level, "share_seeds"),
                }
            )
    return typed(rows_frame(rows, VARIANCE_COLUMNS))  # no size with several seeds: the header alone


def seed_fits_table(
    metrics: pd.DataFrame, fits: pd.DataFrame, replicates: Replicates, law_k: Sequence[int], level: float,
    form: FitForm, refits: int,
) -> pd.DataFrame:  # fmt: skip
    """The law fitted to each seed's final models alone (its document-bootstrap intervals), and per law the
    spread of the exponent across seeds beside the pooled fit of powerlaw_fits.csv."""
    index = FitIndex(fits, form)
    rows = []
    for (family, dataset, name, k), group in _wanted(metrics, law_k).groupby(GROUP, dropna=False, sort=True):
        metric = METRICS[name]
        pooled = index.get(LawKey(family, dataset, metric.law, optional_int(k)))
        per_seed = []
        for seed, runs in group.groupby("seed", sort=True):
            runs = runs.sort_values("S", kind="stable")
            y = metric.to_law(runs["value"].to_numpy(dtype=np.float64))
            points = Points.of(runs["S"].to_numpy())
            row: dict[str, Any] = {"family": family, "dataset": dataset, "metric": metric.law, "k": k,
                                   "seed": optional_int(seed), "n_models": len(runs)}  # fmt: skip
            law, note = fit_or_note(form, points, y)
            if law is None:
                per_seed.append({**row, "note": note})
                continue
            reps = law_replicates(runs, replicates)
            honest = LawNoise.of(form, law, points, y, reps, Noise.of(runs, len(reps), None), (family, dataset))
            refitted = honest.refit(form, law, points, refits)
            parameters, unidentified = law_parameters(form, law, refitted, level, float(np.median(y)))
            row.update({**parameters, **honest.columns(), "noise": honest.label})
            if form.bounds:
                row["not_identified"] = "; ".join(unidentified.values())
            per_seed.append({**row, "note": ""})
        exponents = np.array([r[form.exponent] for r in per_seed if form.exponent and not r["note"]])
        spread = {
            "n_seeds": len(per_seed),
            "exponent_seed_mean": float(exponents.mean()) if exponents.size else math.nan,
            "exponent_seed_sd": float(exponents.std(ddof=1)) if exponents.size > 1 else math.nan,
            "exponent_seed_min": float(exponents.min()) if exponents.size else math.nan,
            "exponent_seed_max": float(exponents.max()) if exponents.size else math.nan,
        }
        if pooled is not None and form.exponent:
            low, high = pooled.interval(form.exponent)
            spread.update(exponent_pooled=pooled.value(form.exponent), exponent_pooled_ci_low=low,
                          exponent_pooled_ci_high=high, pooled_noise=pooled.record.get("noise", ""))  # fmt: skip
        rows.extend({**r, **spread} for r in per_seed)
    return typed(rows_frame(rows, seed_fits_columns(form)))  # no size with several seeds: the header alone


def build_seed_variance(inputs: TableInputs) -> pd.DataFrame:
    """seed_variance.csv from its job's inputs (its entry: rankscale.tables.entries.seeds)."""
    return seed_variance_table(inputs.tables["metrics"], inputs.needed(), **inputs.declared())


def build_seed_fits(inputs: TableInputs) -> pd.DataFrame:
    """seed_fits.csv from its job's inputs (its entry: rankscale.tables.entries.seeds)."""
    return seed_fits_table(
        inputs.tables["metrics"], inputs.tables["powerlaw_fits"], inputs.needed(), **inputs.declared()
    )
