"""What every table job shares: its inputs, typed columns, the bootstrap replicates (the registry entry and the
settings it declares are `rankscale.tables.declaration`, which planning reads without this module's imports)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bootstrap import interval
from rankscale.laws import FORMS, FitForm, FittedLaw
from rankscale.metrics import METRICS
from rankscale.statistics import TOKENS, Totals, stratum_totals
from rankscale.summary import Summary
from rankscale.tables.declaration import Table, TableSettings  # noqa: F401  (re-exported: the entry)

INTEGER_COLUMNS = ("k", "D", "versus_k")  # integers that may be missing (a metric without k, a model without D)
TYPED = {"law_form": "form"}  # a setting a builder reads under another name: the FitForm `law_form` names


class Replicates:
    """Bootstrap replicates of every model x dataset: replicate totals, and metric values from them."""

    def __init__(self, summaries: Sequence[Summary], totals: Sequence[Totals],
                 units: Sequence[Totals] | None = None) -> None:  # fmt: skip
        self._k = {s.key: list(s.k) for s in summaries}
        self._strata_k = {s.key: list(s.strata_k) for s in summaries}
        self.totals = {s.key: t for s, t in zip(summaries, totals, strict=True)}
        # every statistic per resampling unit [U, ...] (`rankscale.summary.load_unit_totals`), where loaded
        self.units = {s.key: u for s, u in zip(summaries, units, strict=True)} if units is not None else {}
        self.metric = cache(self._metric)
        self.influence = cache(self._influence)  # a law's and its contrasts' read the same units

    def _metric(self, model: str, dataset: str, name: str, stratum: int | None = None) -> np.ndarray:
        """Replicate values [B, K] (per-k metrics) or [B]; of one stratum's tokens (at the strata k) if given."""
        totals = self.totals[(model, dataset)]
        return METRICS[name].compute(totals if stratum is None else stratum_totals(totals, stratum))

    def _influence(self, model: str, dataset: str, name: str, k: int | None = None,
                  stratum: int | None = None) -> np.ndarray | None:  # fmt: skip
        """[U] each resampling unit's influence on log of the metric's law quantity (`Metric.to_law`: -log RBP_k,
        CE): d log q(T + e t_u) / de at 0, T the totals and t_u the unit's. A replicate that draws unit u k_u times
        moves log q by about sum_u (k_u - 1) a_u: these are the documents' own deviations, what a lack-of-fit test
        over few documents takes its covariance from (`rankscale.laws.few_documents`). Central differences; None
        without unit totals, or for a metric of the rank histogram (no unit sums)."""
        units = self.units.get((model, dataset))
        metric = METRICS[name]
        if units is None or not metric.statistics:
            return None
        totals = {key: np.asarray(units[key]).sum(axis=0) for key in units}
        size = len(next(iter(units.values())))
        step = 1e-4
        moves = {key: step * np.asarray(units[key]) for key in units}
        shifted = Totals({key: np.concatenate([totals[key][None] + move, totals[key][None] - move])
                          for key, move in moves.items()})  # fmt: skip
        with np.errstate(divide="ignore", invalid="ignore"):
            values = metric.compute(shifted if stratum is None else stratum_totals(shifted, stratum))
            if k is not None:
                values = values[:, self.column(model, dataset, k, stratum)]
            logs = np.log(metric.to_law(values))
            return (logs[:size] - logs[size:]) / (2.0 * step)  # not finite where the law is not (RBP_k of 0 or 1)

    def unit_tokens(self, model: str, dataset: str, stratum: int | None = None) -> np.ndarray:
        """[U] each resampling unit's scored tokens (of one stratum's where given)."""
        units = self.units[(model, dataset)]
        tokens = units[TOKENS] if stratum is None else stratum_totals(units, stratum)[TOKENS]
        return np.asarray(tokens, dtype=np.float64)

    def at(self, model: str, dataset: str, name: str, k: int | None = None, stratum: int | None = None) -> np.ndarray:
        """Replicate values [B] of one metric (at k), of all tokens or of one stratum's (`Summary.strata_columns` index)."""
        values = self.metric(model, dataset, name, stratum)
        return values if k is None else values[:, self.column(model, dataset, k, stratum)]

    def column(self, model: str, dataset: str, k: int, stratum: int | None = None) -> int:
        """Where k sits in a per-k metric's values of this model x dataset (its strata k for a stratum's)."""
        grid = self._k if stratum is None else self._strata_k
        return grid[(model, dataset)].index(int(k))


@dataclass(frozen=True)
class TableInputs:
    summaries: list[Summary]
    settings: TableSettings
    tables: dict[str, pd.DataFrame]  # the tables this one needs, by name
    replicates: Replicates | None  # every summary's bootstrap replicates, for tables marked `resampled`
    # every family x dataset's token trajectories (`rankscale.trajectories`), for tables marked `trajectories`
    trajectories: list[Any] | None = None

    # the settings a table declared (`Table.settings`), typed: a builder never unpacks them by hand
    def declared(self) -> dict[str, Any]:
        """The declared settings, typed, as keywords of the table's builder (`law_form` as `form`, the FitForm it
        names): a builder takes each declared setting as a parameter of that name, so a setting it reads but does
        not declare, or declares but does not read, fails at once."""
        declared = {}
        for name in (f.name for f in fields(self.settings) if getattr(self.settings, f.name) is not None):
            key = TYPED.get(name, name)
            has_type = isinstance(getattr(type(self), key, None), property)  # else the value as configured
            declared[key] = getattr(self, key) if has_type else self.settings.get(name)
        return declared

    @property
    def level(self) -> float:
        return float(self.settings.get("level"))

    @property
    def form(self) -> FitForm:
        """`analysis.law_form`: the form every law of the table is fitted as."""
        return FORMS[self.settings.get("law_form")]

    @property
    def law_k(self) -> list[int]:
        return self.settings.get("law_k")

    @property
    def forms(self) -> list[str]:
        return self.settings.get("forms")

    @property
    def refits(self) -> int:
        return int(self.settings.get("refits"))

    @property
    def seed(self) -> int:
        return int(self.settings.get("seed"))

    def tracked(self) -> list[Any]:
        """The token trajectories (`rankscale.trajectories.TrajectoryResult`), which a table marked
        `trajectories=True` always gets."""
        assert self.trajectories is not None, "this table reads the token trajectories"
        return self.trajectories

    def needed(self) -> Replicates:
        """The replicates, which a table marked `resampled=True` always gets."""
        assert self.replicates is not None, "this table reads bootstrap replicates"
        return self.replicates


def typed(df: pd.DataFrame) -> pd.DataFrame:
    """Integer columns that may be missing as nullable integers, as every table writes and reads them."""
    for column in INTEGER_COLUMNS:
        if column in df:
            df[column] = df[column].astype("Int64")
    return df


def optional_columns(frame: pd.DataFrame, *names: str) -> pd.DataFrame:
    """`frame` without those of the columns `names` that no row fills (an empty note, no quantization): a table
    gains such a column only where some row needs it, so tables of runs that need none keep their bytes."""
    empty = [n for n in names if n in frame and (frame[n].isna() | (frame[n].astype(str) == "")).all()]
    return frame.drop(columns=empty)


def rows_frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """A table of `rows`; with no rows, an empty table under `columns` (those its rows have): a table with no
    rows keeps its header, as `rankscale.tables.write_table` requires (pandas.read_csv refuses a file without)."""
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(columns))


def interval_columns(name: str) -> tuple[str, str, str]:
    """The columns `with_intervals` gives `name`: the value and its interval."""
    return name, f"{name}_ci_low", f"{name}_ci_high"


def read_table(path: str | Path) -> pd.DataFrame:
    """A table as written (full precision, read back bit for bit; k and D as nullable integers).

    A table with no rows (e.g. fits in D when no model has checkpoints) reads back empty, under its header; a
    file with no header at all (how such tables were written before they kept theirs) reads back as a frame with
    neither rows nor columns.
    """
    try:
        return pd.read_csv(path, dtype=dict.fromkeys(INTEGER_COLUMNS, "Int64"))
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def law_parameters(
    form: FitForm, law: FittedLaw, refitted: dict[str, np.ndarray], level: float, level_of_y: float
) -> tuple[dict[str, float], dict[str, str]]:
    """A fitted law's parameters, each with the percentile interval of its refits, and those the data cannot
    identify (at a bound of their domain: `FitForm.unidentified`), whose interval is left empty."""
    unidentified = form.unidentified(law, refitted, level_of_y)
    out: dict[str, float] = {}
    for p, value in law.row().items():
        out.update(with_intervals(value, refitted[p], level, p))
        if p in unidentified:  # every refit stops at the bound: no interval, rather than a point
            out[f"{p}_ci_low"] = out[f"{p}_ci_high"] = np.nan
    return out, unidentified


SAME = 1e-9  # replicates closer than this (relative) to each other are the point itself: noise-free data, rounding


def with_intervals(value: float, samples: np.ndarray, level: float, name: str) -> dict[str, float]:
    """`name`, `name_ci_low`, `name_ci_high`: a value and the percentile interval of its replicates, for quantities
    of several models (a law's parameters refitted with the sizes' scatter, whose coverage benchmarks/RESULTS.md
    measures). One model's statistics over its documents take `rankscale.intervals` instead (a ratio's
    cluster-robust t, BCa), never an expanded percentile. Where the value sits on an end of that interval or
    outside it, the replicates are biased (R² of a near-perfect law: every refit fits worse) and a percentile
    interval of them is no interval of the value: there is none, rather than one stretched to reach it."""
    low, high = (float(end) for end in interval(samples, level))
    span = max(high, value) - min(low, value)
    if span <= SAME * max(abs(value), abs(low), abs(high)):  # replicates equal to the point but for rounding
        low = high = value
    elif not low < value < high and np.isfinite(value):
        low = high = math.nan
    return {name: value, f"{name}_ci_low": low, f"{name}_ci_high": high}


def largest(errors: Sequence[float]) -> float:
    """The largest of some intervals' Monte Carlo errors (`rankscale.bootstrap.interval_mc_error`), NaN if none."""
    finite = [e for e in errors if np.isfinite(e)]
    return max(finite) if finite else math.nan
