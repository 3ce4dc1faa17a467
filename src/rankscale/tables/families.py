"""family_contrasts.csv: the exponent of one family's law minus another's on the same dataset, paired.

Every family on a dataset scores the same documents and every bootstrap replicate draws them once for all
(`rankscale.summary.Resampling`), so the two exponents' document noise is paired replicate by replicate. The
families' models differ: each exponent also carries its own family's scatter of sizes (tau^2, `LawNoise`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import FitForm, Points
from rankscale.laws.pivot import TauPivot, equivalent_df, half_width, mixture_p_value, variances
from rankscale.laws.random_effects import log_design, ols_map, size_matrix
from rankscale.metrics import METRICS
from rankscale.tables.base import Replicates, TableInputs, rows_frame, typed
from rankscale.tables.lawkit import GROUP, between_family_rows
from rankscale.tables.noise import Noise, law_replicates, size_level_of
from rankscale.tables.selection import FitIndex, LawKey, finals, optional_int

COLUMNS = ("dataset", "metric", "k", "family", "versus", "alpha", "alpha_versus", "difference", "ci_low", "ci_high",
           "p_value", "df", "tau2", "tau2_versus", "sd_documents", "noise", "note")  # fmt: skip


@dataclass(frozen=True)
class FamilyExponent:
    """One family's exponent, linearised: its deviation on every document replicate, and its size level."""

    value: float
    document_deviation: np.ndarray  # [B] exponent on replicate b minus the point (documents, seeds)
    b: float  # the exponent's variance is b tau^2 from the family's scatter of sizes (h^T K h)
    tau2: float
    pivot: TauPivot | None  # tau^2's pivotal quantity (None: no size level, documents alone)
    label: str

    @classmethod
    def of(cls, group: pd.DataFrame, replicates: Replicates, form: FitForm, seed: int | None) -> FamilyExponent | str:
        """The exponent of a family's law (power law: OLS in log space), or why there is none."""
        assert form.exponent is not None
        group = group.sort_values("S", kind="stable")
        y = METRICS[group["metric"].iloc[0]].to_law(group["value"].to_numpy(dtype=np.float64))
        points = Points.of(group["S"].to_numpy(dtype=np.float64))
        try:
            law = form.fit(points, y)
        except ValueError as exc:
            return str(exc)
        reps = law_replicates(group, replicates)
        noise = Noise.of(group, len(reps), seed)
        with np.errstate(divide="ignore", invalid="ignore"):  # the deviations widened for few documents
            log_reps, log_y = np.log(noise.apply(reps)), np.log(y)
            wide = np.log(noise.apply(noise.expand(y, reps)))
        X, names = log_design(form, law, points)
        if form.exponent not in names:  # at a bound of its domain: no exponent to compare
            return f"{form.exponent} at a bound of its domain"
        h = ols_map(X)[names.index(form.exponent)]
        deviation = (wide - log_y) @ h  # the linearised exponent's change on each replicate (exact for OLS)
        level = size_level_of(form, law, points, log_y, log_reps, noise.groups, documents_df=noise.documents_df)
        value = float(law.row()[form.exponent])
        if level is None:
            return cls(value, deviation, 0.0, math.nan, None, noise.label)
        b = float(h @ size_matrix(noise.groups) @ h)
        return cls(value, deviation, b, level.tau2, level.pivot, noise.label + "+sizes")

    @property
    def size_terms(self) -> list[tuple[float, TauPivot]]:
        return [] if self.pivot is None else [(self.b, self.pivot)]


def family_contrasts_table(metrics: pd.DataFrame, fits: pd.DataFrame, replicates: Replicates, law_k: Sequence[int],
                           level: float, form: FitForm, seed: int | None) -> pd.DataFrame:  # fmt: skip
    """alpha(family) - alpha(versus) for every two families with a law of the same quantity on a dataset.

    Variance: each exponent's document (and seed) variance and their covariance, from the paired replicates
    through the OLS map, plus each family's size variance b tau^2. Interval and p-value: the Normal mixed over
    both families' tau^2 pivotal quantities (`rankscale.laws.pivot`), the document part being known."""
    rows: list[dict[str, Any]] = []
    if form.exponent is None:
        return typed(rows_frame(rows, COLUMNS))
    index = FitIndex(fits, form)
    final = between_family_rows(finals(metrics), law_k)
    for (dataset, name, k), frame in final.groupby(GROUP[1:], dropna=False, sort=True):
        law = METRICS[name].law
        families = sorted(f for f, g in frame.groupby("family") if index.get(LawKey(f, dataset, law, optional_int(k))))
        exponents = {f: FamilyExponent.of(frame[frame["family"] == f], replicates, form, seed) for f in families}
        for first, second in itertools.combinations(families, 2):
            base = {"dataset": dataset, "metric": law, "k": optional_int(k), "family": first, "versus": second}
            rows.append({**base, **_contrast(exponents[first], exponents[second], level)})
    return typed(rows_frame(rows, COLUMNS))


def _contrast(a: FamilyExponent | str, b: FamilyExponent | str, level: float) -> dict[str, Any]:
    if isinstance(a, str) or isinstance(b, str):
        return {"note": f"no law: {a if isinstance(a, str) else b}"}
    n = min(len(a.document_deviation), len(b.document_deviation))
    paired = a.document_deviation[:n] - b.document_deviation[:n]
    paired = paired[np.isfinite(paired)]
    documents = float(np.var(paired, ddof=1))
    terms = a.size_terms + b.size_terms
    at_estimate = documents + sum(e.b * e.tau2 for e in (a, b) if e.pivot is not None)
    half = half_width(variances(documents, terms), level)
    df = equivalent_df(half, at_estimate, level)
    difference = a.value - b.value
    low, high = difference - half, difference + half
    return {"alpha": a.value, "alpha_versus": b.value, "difference": difference, "ci_low": low, "ci_high": high,
            "p_value": mixture_p_value(difference, documents, terms), "df": df if np.isfinite(df) else math.nan,
            "tau2": a.tau2, "tau2_versus": b.tau2, "sd_documents": math.sqrt(documents),
            "noise": a.label if a.label == b.label else f"{a.label} | {b.label}", "note": ""}  # fmt: skip


def build_family_contrasts(inputs: TableInputs) -> pd.DataFrame:
    """family_contrasts.csv from its job's inputs (its entry: rankscale.tables.entries.families)."""
    return family_contrasts_table(
            inputs.tables["metrics"], inputs.tables["powerlaw_fits"], inputs.needed(), **inputs.declared()
        )
