"""calibration.csv: each model's calibration curves, every point a ratio of document sums with its interval.

Three curves per model x dataset (docs/science.md, "Calibration and nucleus coverage"):
- `coverage`: C(p) against p (the nucleus grid of `rankscale.calibration.P_GRID`), on or above the diagonal for
  a calibrated model;
- `reliability`: top-1 accuracy against the mean top-1 confidence of each equal-mass bin;
- `pit`: the randomised PIT's distribution function F(u) against u, the diagonal for a calibrated model.
A model whose rank arrays were made before the calibration fields has one row, `curve` = `none`, whose note says so
(`extraction.refresh_calibration` re-extracts exactly those arrays).

nucleus_fits.csv: the calibration laws in S (powerlaw_fits.csv's rows) beside their exponent's paired contrast with
-log RBP_1's (exponent_contrasts.csv's rows): the relative law for the samplers that cut by probability mass.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from rankscale import calibration as cal
from rankscale.intervals import PROBABILITY, ModelInterval, ratio_of_sums
from rankscale.laws import FitForm
from rankscale.metrics import CALIBRATION_METRICS
from rankscale.statistics import TOKENS, Totals
from rankscale.summary import Summary
from rankscale.tables.base import Replicates, TableInputs, rows_frame, typed
from rankscale.tables.selection import select


def has_calibration(summary: Summary) -> bool:
    return cal.NUCLEUS_HITS.name in summary.totals()


NO_FIELDS = "none"  # the `curve` of a model whose rank array lacks the calibration fields
NO_FIELDS_NOTE = ("its rank array was made before the calibration fields: no calibration metrics or curves "
                  "(extraction.refresh_calibration re-extracts exactly such arrays)")  # fmt: skip


def _curves(totals: Totals) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per curve: (x, numerator, denominator) from sums ([..., points]; a leading unit axis passes through)."""
    n = np.asarray(totals[TOKENS], dtype=np.float64)[..., None]
    u = np.asarray(cal.U_GRID)
    bins_n = np.asarray(totals[cal.BIN_TOKENS], dtype=np.float64)
    bins_c = np.asarray(totals[cal.BIN_CONFIDENCE], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        confidence = bins_c.sum(axis=0) / bins_n.sum(axis=0) if bins_n.ndim > 1 else bins_c / bins_n
    hits = np.asarray(totals[cal.NUCLEUS_HITS], dtype=np.float64)
    return {
        "coverage": (np.asarray(cal.P_GRID), hits, np.broadcast_to(n, hits.shape)),
        "reliability": (confidence, bins_c + np.asarray(totals[cal.BIN_DEVIATION], dtype=np.float64), bins_n),
        "pit": (u, np.asarray(totals[cal.PIT_DEVIATION], dtype=np.float64) + u * n, np.broadcast_to(n, (*n.shape[:-1], u.size))),
    }


def calibration_table(summaries: Iterable[Summary], replicates: Replicates | None, level: float) -> pd.DataFrame:
    """One row per model x dataset x curve x point: `x`, `value` (a share), its interval over documents and the
    tokens it rests on (`n`)."""
    rows = []
    for s in summaries:
        if not has_calibration(s):
            rows.append({**s.columns(), "curve": NO_FIELDS, "point": 0, "x": np.nan, "value": np.nan, "ci_low": np.nan,
                         "ci_high": np.nan, "n": np.nan, "ci_note": NO_FIELDS_NOTE})  # fmt: skip
            continue
        units = replicates.units.get(s.key) if replicates is not None else None
        whole = _curves(s.totals())
        by_unit = _curves(units) if units is not None else None
        for curve, (x, numerator, denominator) in whole.items():
            with np.errstate(divide="ignore", invalid="ignore"):
                values = numerator / denominator
            if by_unit is not None:
                found = ratio_of_sums(by_unit[curve][1], by_unit[curve][2], level, PROBABILITY)
            else:
                found = [ModelInterval(np.nan, np.nan, note="no documents' sums")] * len(values)
            for j, (point, value, got) in enumerate(zip(x, values, found, strict=True)):
                rows.append({**s.columns(), "curve": curve, "point": j, "x": float(point), "value": float(value),
                             "ci_low": got.low, "ci_high": got.high, "n": float(denominator[j]),
                             "ci_note": got.note})  # fmt: skip
    columns = ["curve", "point", "x", "value", "ci_low", "ci_high", "n", "ci_note"]
    frame = typed(pd.DataFrame(rows)) if rows else pd.DataFrame(columns=["family", "model", "dataset", "S", *columns])
    return frame.sort_values(["family", "dataset", "curve", "S", "point"], kind="stable").reset_index(drop=True)


def build_calibration(inputs: TableInputs) -> pd.DataFrame:
    """calibration.csv from its job's inputs (its entry: rankscale.tables.entries.calibration)."""
    return calibration_table(inputs.summaries, inputs.replicates, **inputs.declared())


NUCLEUS_P = {f"neg_log_nucleus_{round(100 * p)}": p for p in cal.NUCLEUS_P}  # a nucleus law's p (its metric's name)
VERSUS = ("neg_log_rbp", 1)  # the law every calibration law's exponent is contrasted with
FIT_COLUMNS = ("n_models", "S_min", "S_max", "r2", "tau2", "lof_p", "lof_n_eff", "noise", "ci_note")  # as they are
CONTRAST_COLUMNS = {"alpha_versus": "alpha_rbp1", "difference": "difference", "ci_low": "difference_ci_low",
                    "ci_high": "difference_ci_high", "p_value": "difference_p"}  # fmt: skip


def nucleus_fits_table(fits: pd.DataFrame, contrasts: pd.DataFrame, form: FitForm) -> pd.DataFrame:
    """One row per family x dataset x calibration law: the law's exponent with its interval and lack of fit, and
    its paired difference from -log RBP_1's exponent (the same refits as exponent_contrasts.csv's). No new fit:
    a view of the two tables that answers whether -log C(p)'s exponent grows with p as alpha grows with k."""
    exponent = form.exponent
    keys = ["family", "dataset", "metric", "p"]
    fitted = [*((exponent, f"{exponent}_ci_low", f"{exponent}_ci_high") if exponent else ()), *FIT_COLUMNS]
    columns = [*keys, *fitted, *(CONTRAST_COLUMNS.values() if exponent else ()), "note"]
    laws = [m.law for m in CALIBRATION_METRICS]
    rows = []
    for _, fit in fits[fits["metric"].isin(laws)].iterrows():
        row = {**{c: fit.get(c, np.nan) for c in ("family", "dataset", "metric", *fitted)},
               "p": NUCLEUS_P.get(fit["metric"], np.nan)}  # fmt: skip
        notes = [fit.get("note")]
        if exponent:
            found = select(contrasts, family=fit["family"], dataset=fit["dataset"], metric=fit["metric"],
                           versus=VERSUS[0], versus_k=VERSUS[1])  # fmt: skip
            row.update({name: found[source].iloc[0] if len(found) else np.nan
                        for source, name in CONTRAST_COLUMNS.items()})  # fmt: skip
            notes += found["note"].tolist() if "note" in found else []  # a table none of whose rows has one drops it
        row["note"] = "; ".join(dict.fromkeys(n for n in notes if isinstance(n, str) and n))
        rows.append(row)
    order = {law: i for i, law in enumerate(laws)}
    frame = rows_frame(rows, columns).reindex(columns=columns)
    frame = frame.sort_values(["family", "dataset", "metric"], kind="stable",
                              key=lambda c: c.map(order) if c.name == "metric" else c)  # fmt: skip
    return typed(frame.reset_index(drop=True))


def build_nucleus_fits(inputs: TableInputs) -> pd.DataFrame:
    """nucleus_fits.csv from its job's inputs (its entry: rankscale.tables.entries.calibration)."""
    return nucleus_fits_table(inputs.tables["powerlaw_fits"], inputs.tables["exponent_contrasts"], **inputs.declared())
