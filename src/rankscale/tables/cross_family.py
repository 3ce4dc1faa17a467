"""cross_family.csv: where a model of a family with fewer than two sizes (e.g. one pretrained model) sits against
the law of another family on the same dataset, extrapolated to its S."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bca import bca
from rankscale.laws import FitForm, FittedLaw
from rankscale.laws.agreement import interval_p_value
from rankscale.metrics import METRICS
from rankscale.tables.base import Replicates, TableInputs, interval_columns, rows_frame, typed, with_intervals
from rankscale.tables.lawkit import LawRefits, between_family_rows
from rankscale.tables.model_intervals import one_model_interval
from rankscale.tables.selection import FitIndex, LawKey, finals, note_last, optional_int, single_size

NO_LAW_FAMILY = "no family with a law on this dataset"
COLUMNS = (
    "family", "model", "dataset", "S", "law_family", "metric", "k", "law_n_models", "law_S_min", "law_S_max",
    "S_over_law_S_max", *interval_columns("predicted"), *interval_columns("observed"), *interval_columns("ratio"),
    "p_value", "noise", "note",
)  # fmt: skip


def cross_family_table(
    metrics: pd.DataFrame,
    fits: pd.DataFrame,
    replicates: Replicates,
    law_k: Sequence[int],
    level: float,
    form: FitForm,
    refits: int,
    seed: int | None,
) -> pd.DataFrame:
    """Each model of a family with fewer than two sizes (e.g. one pretrained model) against the law of every
    family that has one on its dataset: the law's -log RBP_k (k of `law_k`) and CE at the model's S, with the interval
    of the law refitted on every replicate (as extrapolation.csv's), the measured value with its document-bootstrap
    interval, and measured / predicted. Every family on a dataset scores the same documents, drawn once for all
    in each replicate, so the ratio's replicates are paired draw by draw: documents hard for both cancel."""
    final = between_family_rows(finals(metrics), law_k)
    index, laws = FitIndex(fits, form), _LawCache(final, replicates, form, refits, seed)
    sizes = final.groupby(["dataset", "family"])["S"].nunique()  # a family with a law on a dataset has two or more
    rows: list[dict[str, Any]] = []
    singles = single_size(final).sort_values(["family", "model", "dataset", "metric", "k"], kind="stable")
    for (family, model, dataset), own in singles.groupby(["family", "model", "dataset"], sort=False):
        others = [f for f, n in sizes[dataset].items() if n > 1 and f != family]
        base = {"family": family, "model": model, "dataset": dataset, "S": int(own["S"].iloc[0])}
        if not others:
            rows.append({**base, "law_family": None, "metric": None, "k": None, "note": NO_LAW_FAMILY})
            continue
        for law_family in others:
            for _, measured in own.iterrows():
                key = LawKey(law_family, dataset, METRICS[measured["metric"]].law, optional_int(measured["k"]))
                rows.append({**base, **_cross_family_row(measured, key, index, laws, replicates, level)})
    return note_last(typed(rows_frame(rows, COLUMNS)))  # no rows (every family has a law): the header alone


class _LawCache:
    """Each family's law refitted on the replicates once, however many models it is compared with."""

    def __init__(self, final: pd.DataFrame, replicates: Replicates, form: FitForm, refits: int, seed: int | None):
        self.final, self.replicates, self.form, self.refits, self.seed = final, replicates, form, refits, seed
        self._laws: dict[LawKey, tuple[LawRefits, pd.DataFrame]] = {}

    def get(self, key: LawKey, law: FittedLaw) -> tuple[LawRefits, pd.DataFrame]:
        """The law of `key` refitted, and the rows it is fitted to."""
        if key not in self._laws:
            group = key.points(self.final)
            self._laws[key] = LawRefits.of(group, self.replicates, self.form, law, self.refits, self.seed), group
        return self._laws[key]


def _observed(observed: float, measured: pd.Series, key: LawKey, reps: np.ndarray, replicates: Replicates,
              level: float) -> dict[str, float]:  # fmt: skip
    """The measured model's value in the law's units with metrics.csv's interval of it (the cluster-robust t of
    the metric, carried through `Metric.to_law`, a monotone map), or, without its documents' sums, BCa without
    acceleration of its replicates."""
    found = one_model_interval(replicates, measured["model"], key.dataset, key.metric, key.k, level)
    if found is None:
        found = bca(reps, observed, np.zeros(0), level)
        return {"observed": observed, "observed_ci_low": found.low, "observed_ci_high": found.high}
    with np.errstate(divide="ignore", invalid="ignore"):
        ends = key.metric.to_law(np.array([found.low, found.high]))
    return {"observed": observed, "observed_ci_low": float(np.nanmin(ends)) if np.isfinite(ends).all() else np.nan,
            "observed_ci_high": float(np.nanmax(ends)) if np.isfinite(ends).all() else np.nan}  # fmt: skip


def _cross_family_row(
    measured: pd.Series, key: LawKey, index: FitIndex, laws: _LawCache, replicates: Replicates, level: float
) -> dict[str, Any]:
    """One model's measured value of `key`'s quantity against the law of `key` at its S."""
    metric = key.metric
    row: dict[str, Any] = {"law_family": key.family, "metric": key.law, "k": key.k}
    fit = index.get(key)
    observed = float(metric.to_law(np.array([measured["value"]], dtype=np.float64))[0])
    if fit is None:
        return {**row, "note": f"{key.family} has no fitted law of this quantity (powerlaw_fits.csv says why)"}
    if not (np.isfinite(observed) and observed > 0):
        return {**row, "note": "the measured value is not positive: no place on a law in log space"}
    refitted, group = laws.get(key, fit.law)
    point, predicted = refitted.at(
        float(measured["S"]), (key.family, key.dataset, key.law, str(key.k), "another family")
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        measured_reps = metric.to_law(replicates.at(measured["model"], key.dataset, metric.name, key.k))
        n = min(len(measured_reps), len(predicted))
        ratio = measured_reps[:n] / predicted[:n]  # the same document draw for both families
    return {
        **row,
        "law_n_models": len(group),
        "law_S_min": int(group["S"].min()),
        "law_S_max": int(group["S"].max()),
        "S_over_law_S_max": float(measured["S"]) / float(group["S"].max()),
        **with_intervals(point, predicted, level, "predicted"),
        **_observed(observed, measured, key, measured_reps, replicates, level),
        **with_intervals(observed / point, ratio, level, "ratio"),
        "p_value": interval_p_value(ratio, observed / point, 1.0),
        "noise": refitted.noise.label,
        "note": "",
    }


def build_cross_family(inputs: TableInputs) -> pd.DataFrame:
    """cross_family.csv from its job's inputs (its entry: rankscale.tables.entries.cross_family)."""
    return cross_family_table(
            inputs.tables["metrics"], inputs.tables["powerlaw_fits"], inputs.needed(), **inputs.declared()
        )
