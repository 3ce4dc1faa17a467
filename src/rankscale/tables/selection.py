"""Rows of the metrics and fits tables selected by what they are of: one way to pick a law's rows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import FitForm, FittedLaw
from rankscale.metrics import Metric, metric_for_law
from rankscale.summary import Summary

ONE_SIZE = "family has one size: no law"  # the note of a law (or a check of one) a family of one size cannot have


def n_sizes(S: Any) -> int:
    """Distinct model sizes among `S`: a law in S needs two."""
    return len(np.unique(np.asarray(S, dtype=np.float64)))


def size_note(S: Any) -> str:
    """Why no law in S can be fitted to models of these sizes ('' when it can be tried): a table's `note`."""
    return ONE_SIZE if n_sizes(S) < 2 else ""


def single_size(metrics: pd.DataFrame) -> pd.DataFrame:
    """The final models' rows of the families with fewer than two sizes on their dataset: families without a law."""
    rows = finals(metrics)
    if rows.empty:
        return rows
    sizes = rows.groupby(["family", "dataset"])["S"].transform("nunique")
    return rows[sizes < 2]


def without_notes(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a table that hold numbers: those whose `note` is empty (every row of a table without notes)."""
    if "note" not in frame:
        return frame
    return frame[frame["note"].fillna("").eq("")]


def note_last(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with its `note` column (if any) last, wherever the first note row put it."""
    if "note" not in frame:
        return frame
    return frame[[c for c in frame.columns if c != "note"] + ["note"]]


def select(frame: pd.DataFrame, **match: Any) -> pd.DataFrame:
    """The rows of `frame` whose columns equal `match`; a None value matches a missing one (a metric without k)."""
    keep = pd.Series(True, index=frame.index)
    for column, value in match.items():
        keep &= frame[column].isna() if value is None else frame[column] == value
    return frame[keep]


def finals(metrics: pd.DataFrame) -> pd.DataFrame:
    """The rows of each size's final model: the laws in S are fitted over these (checkpoints are D's)."""
    return metrics[metrics["final"].astype(bool)]


def finals_of(summaries: Iterable[Summary]) -> list[Summary]:
    """The summaries of each size's final model: `finals` for summaries rather than table rows."""
    return [s for s in summaries if s.final]


def optional_int(value: Any) -> int | None:
    """A k (or D) as read from a table: None where missing."""
    return None if pd.isna(value) else int(value)


@dataclass(frozen=True)
class LawKey:
    """One fitted quantity: a law (e.g. 'neg_log_rbp', 'ce') of a family on a dataset, at k if it has one."""

    family: str
    dataset: str
    law: str
    k: int | None = None

    @property
    def metric(self) -> Metric:
        return metric_for_law(self.law)

    def points(self, metrics: pd.DataFrame) -> pd.DataFrame:
        """The metrics rows this law is fitted to: the family's final models on the dataset (at k), by S."""
        rows = select(finals(metrics), family=self.family, dataset=self.dataset, metric=self.metric.name, k=self.k)
        return rows.sort_values("S", kind="stable")

    def select(self, fits: pd.DataFrame | FitIndex, form: FitForm, **more: Any) -> LawFit | None:
        """This law's row of a fits table (fitted as `form`; `more` narrows further, e.g. size=), if it was fitted.

        Tables that look up many laws pass a `FitIndex` of the table instead: the same rows, indexed once.
        """
        if isinstance(fits, FitIndex):
            return fits.get(self)
        if fits.empty:
            return None
        rows = select(fits, family=self.family, dataset=self.dataset, metric=self.law, k=self.k, **more)
        return LawFit.of(rows.iloc[0], form) if len(rows) and not rows["note"].fillna("").iloc[0] else None


@dataclass(frozen=True)
class LawFit:
    """A fitted row of powerlaw_fits.csv, read back: its form, the law and the parameters' intervals."""

    form: FitForm
    law: FittedLaw
    record: dict[str, Any]

    @classmethod
    def of(cls, row: pd.Series, form: FitForm) -> LawFit:
        return cls(form, form.from_row(row), row.to_dict())

    def value(self, parameter: str) -> float:
        return float(self.record[parameter])

    def interval(self, parameter: str) -> tuple[float, float]:
        """The percentile interval of a parameter (NaN where the table has none)."""
        return (
            float(self.record.get(f"{parameter}_ci_low", np.nan)),
            float(self.record.get(f"{parameter}_ci_high", np.nan)),
        )


class FitIndex:
    """Every fitted row of a fits table by its LawKey, read once (tables that look up a law per row)."""

    def __init__(self, fits: pd.DataFrame, form: FitForm) -> None:
        self._fits: dict[LawKey, LawFit] = {}
        if fits.empty:
            return
        for _, row in without_notes(fits).iterrows():
            key = LawKey(row["family"], row["dataset"], row["metric"], optional_int(row["k"]))
            self._fits.setdefault(key, LawFit.of(row, form))

    def get(self, key: LawKey) -> LawFit | None:
        return self._fits.get(key)
