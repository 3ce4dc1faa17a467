"""Scaling in training tokens D: a power law in D per size, and the joint law in (S, D)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import FORMS, FitForm, FittedLaw, Points, PowerLaw, fit_power_law
from rankscale.laws.random_effects import size_matrix
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
from rankscale.tables.noise import SIZE_LEVEL_COLUMNS, LawNoise, Noise, law_replicates, rows_covariance_df

JOINT, POWER_LAW = FORMS["joint"], FORMS["power_law"]
# the headers of the tables in D when no model has checkpoints
DATA_COLUMNS = ("family", "size", "S", "dataset", "metric", "k", "n_checkpoints", "D_min", "D_max",
                *interval_columns("beta"), *interval_columns("C"), *interval_columns("r2"), *SIZE_LEVEL_COLUMNS, "noise",
                "note")  # fmt: skip
JOINT_COLUMNS = ("family", "dataset", "metric", "k", "n_points", *(c for p in JOINT.columns for c in interval_columns(p)),
                 "rmse_log", "refits", "corner_model", "corner_observed", "corner_predicted", "corner_rel_error",
                 "not_identified", "at_bound", *SIZE_LEVEL_COLUMNS, "tau2_checkpoint", "noise", "note")  # fmt: skip


def tokens_groups(metrics: pd.DataFrame, ks: Sequence[int]) -> Iterable[tuple[tuple[Any, ...], pd.DataFrame]]:
    """Rows with a known D of CE and of RBP_k at `ks`, grouped by (family, dataset, metric, k)."""
    ce = metrics["metric"] == "ce"
    rbp = (metrics["metric"] == "rbp") & metrics["k"].isin(list(ks))
    known = metrics[metrics["D"].notna() & (ce | rbp)]
    return known.groupby(GROUP, dropna=False, sort=True)


def _checkpoint_noise(group: pd.DataFrame, replicates: Replicates, form: FitForm, law: FittedLaw, points: Points,
                      y: np.ndarray, kinds: Sequence[np.ndarray] = ()) -> LawNoise:  # fmt: skip
    """The replicates of a law across checkpoints, with a deviation of its own per checkpoint (a size's law in D:
    one run) or, with `kinds`, the variance components they give (the joint law: `run_and_point`)."""
    reps = law_replicates(group, replicates)
    noise = Noise(list(group["model"]), None, None, rows_covariance_df(group))
    keys = (str(group["family"].iloc[0]), str(group["dataset"].iloc[0]))
    return LawNoise.of(form, law, points, y, reps, noise, keys, kinds)


def run_and_point(group: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The joint law's two variance components: a run's deviation, shared by the checkpoints it saved along the
    way (and, as in powerlaw_fits.csv, by the seeds of its size), and each checkpoint's own
    (`rankscale.laws.components`)."""
    runs = group["replica_of"] if "replica_of" in group else group["size"]
    return size_matrix(list(runs)), np.eye(len(group))


def data_fits_table(metrics: pd.DataFrame, replicates: Replicates, law_k: Sequence[int], level: float) -> pd.DataFrame:
    """Per size: the power law in training tokens, y = C D^-beta, over its checkpoints (CE and -log RBP_k at
    `law_k`), with intervals from refitting on every bootstrap replicate."""
    rows = []
    for (family, dataset, name, k), frame in tokens_groups(metrics, law_k):
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
                law = fit_power_law(tokens, y)  # the power law, in D instead of S
            except ValueError as exc:
                rows.append({**row, "note": str(exc)})
                continue
            points = Points.of(tokens)
            honest = _checkpoint_noise(group, replicates, POWER_LAW, law, points, y)
            reps = PowerLaw.fit_replicates(points, honest.replicates, law, 0)
            row.update(with_intervals(law.alpha, reps["alpha"], level, "beta"))
            row.update(with_intervals(law.C, reps["C"], level, "C"))
            row.update(with_intervals(law.r2, reps["r2"], level, "r2"))
            rows.append({**row, **honest.columns(), "noise": honest.label, "note": ""})
    return typed(rows_frame(rows, DATA_COLUMNS))


def joint_intervals(law: FittedLaw, refitted: dict[str, np.ndarray], level: float,
                    level_of_y: float) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:  # fmt: skip
    """The joint law's parameters with their intervals as joint_fits.csv reports them, those not identified (at a
    bound in the fit or in most refits, or an interval spanning the whole domain: no interval) and every interval's
    ends at a bound (benchmarks/joint_coverage.py measures the coverage of exactly these)."""
    parameters, unidentified = law_parameters(JOINT, law, refitted, level, level_of_y)
    at_bound = JOINT.bounded_ends(refitted, level, level_of_y)
    for p, why in JOINT.spanning(refitted, level, level_of_y).items():  # the whole domain: no interval
        unidentified.setdefault(p, why)
        parameters[f"{p}_ci_low"] = parameters[f"{p}_ci_high"] = np.nan
    return parameters, unidentified, at_bound


def joint_fits_table(metrics: pd.DataFrame, replicates: Replicates, law_k: Sequence[int], level: float) -> pd.DataFrame:
    """y = E + A S^-alpha + B D^-beta over every size and checkpoint, per family x dataset x metric, by least squares
    in log space: parameters with intervals from every bootstrap replicate refitted with the scatter of runs and
    checkpoints in it (`run_and_point`), and the law's error on the held-out corner, the largest S at the largest D."""
    rows = []
    for (family, dataset, name, k), group in tokens_groups(metrics, law_k):
        if group["D"].nunique() < 2:
            continue  # no checkpoints: nothing to fit in D
        metric = METRICS[name]
        size, tokens = group["S"].to_numpy(dtype=np.float64), group["D"].to_numpy(dtype=np.float64)
        points = Points.joint(size, tokens)
        y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
        row: dict[str, Any] = {"family": family, "dataset": dataset, "metric": metric.law, "k": k,
                               "n_points": len(group)}  # fmt: skip
        law, note = fit_or_note(JOINT, points, y)
        if law is None:
            rows.append({**row, "note": note})
            continue
        honest = _checkpoint_noise(group, replicates, JOINT, law, points, y, run_and_point(group))
        refitted = honest.refit(JOINT, law, points, 0)  # every replicate: the joint law refits them all at once
        parameters, unidentified, at_bound = joint_intervals(law, refitted, level, float(np.median(y)))
        row.update(parameters)
        residual = np.log(y) - np.log(JOINT.predict(law, points))
        corner = (size == size.max()) & (tokens == tokens[size == size.max()].max())
        held = {"corner_model": group["model"].to_numpy()[corner][0], "corner_observed": float(y[corner][0])}
        try:
            without = JOINT.fit(points.take(~corner), y[~corner])
            held["corner_predicted"] = float(JOINT.predict(without, points.take(corner))[0])
            held["corner_rel_error"] = held["corner_predicted"] / held["corner_observed"] - 1
        except ValueError as exc:
            held["corner_note"] = str(exc)
        refit_count = len(next(iter(refitted.values())))
        rows.append(
            {
                **row,
                "rmse_log": float(np.sqrt(np.mean(residual**2))),
                "refits": refit_count,
                **held,
                "not_identified": "; ".join(unidentified.values()),
                "at_bound": "; ".join(v for p, v in at_bound.items() if p not in unidentified),
                **honest.columns(),
                "tau2_checkpoint": honest.size_level.parts[1] if honest.size_level else np.nan,
                "noise": honest.label,
                "note": "",
            }
        )
    return typed(rows_frame(rows, JOINT_COLUMNS))


def build_data_fits(inputs: TableInputs) -> pd.DataFrame:
    """data_fits.csv from its job's inputs (its entry: rankscale.tables.entries.training)."""
    return data_fits_table(inputs.tables["metrics"], inputs.needed(), **inputs.declared())


def build_joint_fits(inputs: TableInputs) -> pd.DataFrame:
    """joint_fits.csv from its job's inputs (its entry: rankscale.tables.entries.training)."""
    return joint_fits_table(inputs.tables["metrics"], inputs.needed(), **inputs.declared())
