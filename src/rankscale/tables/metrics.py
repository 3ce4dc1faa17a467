"""metrics.csv: every metric of every model on every dataset, with its bootstrap interval."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from rankscale.intervals import ModelInterval
from rankscale.metrics import METRICS
from rankscale.summary import FEW_DOCUMENTS, Summary
from rankscale.tables.base import Replicates, TableInputs, optional_columns, typed
from rankscale.tables.model_intervals import interval_method, metric_intervals, reliability


def metrics_table(summaries: Iterable[Summary], replicates: Replicates | None, level: float) -> pd.DataFrame:
    """One row per (model, dataset, metric[, k]) for every metric of `METRICS`, with its interval
    (`rankscale.tables.model_intervals`)."""
    rows = []
    for s in summaries:
        base = s.columns()
        totals = s.totals()
        for metric in METRICS.values():
            if any(statistic.name not in totals for statistic in metric.statistics):
                continue  # a summary made without what the metric sums (no byte lengths: no bits per byte)
            values = np.atleast_1d(metric.compute(totals))
            ks: list[Any] = list(s.k) if metric.per_k else [pd.NA]
            if replicates is not None:
                found = metric_intervals(s, metric, values, replicates, level)
                counts = np.isfinite(replicates.metric(s.model, s.dataset, metric.name).reshape(-1, len(ks))).sum(0)
            else:
                found = [ModelInterval(math.nan, math.nan, note="no bootstrap replicates")] * len(ks)
                counts = np.zeros(len(ks), dtype=int)
            method = interval_method(metric, None if replicates is None else replicates.units.get(s.key))
            for k, v, got, count in zip(ks, values, found, counts, strict=True):
                ok, note = reliability(got, s.n_eff_documents, s.n_documents, method, not metric.statistics,
                                       metric.name)
                rows.append({**base, "few_documents": bool(s.n_eff_documents < FEW_DOCUMENTS), "metric": metric.name,
                             "k": k, "value": float(v), "ci_low": got.low, "ci_high": got.high,
                             "ci_mc_error": got.mc_error, "replicates": int(count), "ci_method": got.method or method,
                             "ci_reliable": ok, "ci_note": note,
                             "quantization": s.quantization})  # fmt: skip
    df = optional_columns(typed(pd.DataFrame(rows)), "quantization")  # only where some model is a GGUF's
    return df.sort_values(["family", "dataset", "metric", "k", "S", "D"], kind="stable").reset_index(drop=True)


def build_metrics(inputs: TableInputs) -> pd.DataFrame:
    """metrics.csv from its job's inputs (its entry: rankscale.tables.entries.metrics)."""
    return metrics_table(inputs.summaries, inputs.replicates, **inputs.declared())
