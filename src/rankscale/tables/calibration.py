"""calibration.csv: each model's calibration curves, every point a ratio of document sums with its interval.

Three curves per model x dataset (docs/science.md, "Calibration and nucleus coverage"):
- `coverage`: C(p) against p (the nucleus grid of `rankscale.calibration.P_GRID`), on or above the diagonal for
  a calibrated model;
- `reliability`: top-1 accuracy against the mean top-1 confidence of each equal-mass bin;
- `pit`: the randomised PIT's distribution function F(u) against u, the diagonal for a calibrated model.
A model whose rank arrays were made before the calibration fields has one row, `curve` = `none`, whose note says so
(`extraction.refresh_calibration` re-extracts exactly those arrays).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from rankscale import calibration as cal
from rankscale.intervals import PROBABILITY, ModelInterval, ratio_of_sums
from rankscale.statistics import TOKENS, Totals
from rankscale.summary import Summary
from rankscale.tables.base import Replicates, TableInputs, typed


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
