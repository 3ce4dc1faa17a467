"""Out of sample: the law fitted without the largest sizes predicts them, with an interval for the held-out model's
value on the same documents.

Its own module because judging a prediction (the paired document noise of observed and predicted, the size level
a held-out size draws anew) is an idea of its own, beside the fits (rankscale.tables.laws) it checks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import FitForm, FittedLaw, Points
from rankscale.laws.pivot import equivalent_df, half_width, variances
from rankscale.laws.random_effects import SizeLevel, log_design, ols_map, size_matrix, t_interval
from rankscale.metrics import METRICS, Metric
from rankscale.tables.base import Replicates, TableInputs, typed
from rankscale.tables.lawkit import GROUP, law_k_rows
from rankscale.tables.noise import Noise, law_replicates, size_level_of
from rankscale.tables.selection import ONE_SIZE, finals, note_last, optional_int

TWO_SIZES = "family has two sizes: holding one out leaves one, no law"
ROUNDING = 1e-12  # log space: a noise-free law's prediction equals its observation up to float rounding


@dataclass(frozen=True)
class HeldOut:
    """A law fitted to the first `n_fit` models of a group, judged at the others on the same documents.

    A held-out model's value differs from the prediction by d = log y_obs - log y_hat. On one document draw both
    move together, so d's document (and seed) variance is that of the replicate-by-replicate difference, taken
    through the fit's linearisation (exact for the power law): Var_b((L_b,i - y_i) - x_i^T H (L_b - y)). A new
    size is a new draw of the size deviation, and the fitted law carries the fitted sizes' deviations: d's
    variance adds tau^2 (1 + x_i^T H K H^T x_i): the interval mixes Normal intervals over tau^2's pivotal quantity
    from the fitted models (`rankscale.laws.pivot`), documents alone where no tau^2 can be estimated."""

    form: FitForm
    law: FittedLaw
    points: Points  # every model of the group, fitted and held out
    log_y: np.ndarray  # [M] their log y
    log_reps: np.ndarray  # [B, M] its replicates (documents, widened for few documents, and seeds)
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
        with np.errstate(divide="ignore", invalid="ignore"):  # the paired noise widened for few documents
            log_reps, log_y = np.log(noise.apply(reps)), np.log(y)
            wide = np.log(noise.apply(noise.expand(y, reps)))
        points = Points.of(group["S"].to_numpy(dtype=np.float64))
        X, _ = log_design(form, law, points)
        fitted = slice(0, n_fit)
        level = size_level_of(
            form,
            law,
            points.take(fitted),
            log_y[fitted],
            log_reps[:, fitted],
            noise.groups[fitted],
            documents_df=noise.documents_df,
        )
        label = noise.label + ("+sizes" if level is not None else "")
        return cls(form, law, points, log_y, wide, X, n_fit, level, size_matrix(noise.groups[fitted]), label)

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
        if self.level is not None and self.level.pivot is not None:  # the generalized pivot (`rankscale.laws.pivot`)
            b = 1.0 + float(x @ H @ self.K @ H.T @ x)
            tau2 = self.level.tau2
            half = half_width(variances(variance, [(b, self.level.pivot)]), level)
            df = equivalent_df(half, variance + b * tau2, level)
            low, high = log_hat - half, log_hat + half
        else:
            low, high = t_interval(log_hat, variance, df, level)
        with np.errstate(over="ignore"):
            ends = metric.from_law(np.exp(np.array([low, high])))
            predicted = float(metric.from_law(y_hat)[0])
        return {"predicted": predicted, "predicted_ci_low": float(ends.min()), "predicted_ci_high": float(ends.max()),
                "covered": bool(low - ROUNDING <= self.log_y[i] <= high + ROUNDING), "tau2": tau2, "df": df if np.isfinite(df) else math.nan,
                "noise": self.label, "judged": "paired"}  # fmt: skip


def extrapolation_table(metrics: pd.DataFrame, replicates: Replicates, law_k: Sequence[int], level: float,
                        form: FitForm, refits: int, seed: int | None) -> pd.DataFrame:  # fmt: skip
    """Fit the law without the largest size (and, with >= 4 sizes, without the two largest); predict the
    held-out sizes' RBP_k and CE, with the interval of the refits' predictions. Where sizes have several
    seeds, the refits resample them too, and the interval is one for a new run's value (the law's, plus a
    seed's deviation drawn from the fitted sizes' runs). A family with fewer than three sizes has nothing to hold
    out: one row per dataset says so (`note`)."""
    rows: list[dict[str, Any]] = []
    for (family, dataset, name, k), group in law_k_rows(metrics, law_k).groupby(GROUP, dropna=False, sort=True):
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


def build_extrapolation(inputs: TableInputs) -> pd.DataFrame:
    """extrapolation.csv from its job's inputs (its entry: rankscale.tables.entries.extrapolation)."""
    return extrapolation_table(
            finals(inputs.tables["metrics"]), inputs.needed(), **inputs.declared()
        )
