"""Datasets of few heavy documents: which of a run's numbers are flagged, and why, said where a reader looks first
(the run summary and the report's landing page), not only in a column of each table.

A dataset whose documents are worth fewer than HEAVY_DOCUMENTS effective documents (Kish's n_eff) has intervals
that no method here makes hold their level: on pydoc's own documents (27 worth 6.6, one holding a third of the
tokens) the cluster-robust t of a model's CE covered 88-91% (93.5% for the largest model), 70-84% in the samples
that lack the longest document, and the studentized bootstrap over documents did worse
(benchmarks/heavy_documents.py). The tables already mark those rows (`ci_reliable` False, the lack of fit not
testable); this note counts them per table, and says what is not flagged.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

HEAVY_DOCUMENTS = 10.0  # below this many effective documents a dataset gets the note

# The tables whose rows are one model's (or stratum's) interval with a `ci_reliable` flag.
RELIABILITY_TABLES = ("metrics", "strata", "emergence", "rank_distribution_tests")
LAW_TABLE = "powerlaw_fits"  # the laws in S, whose lack of fit needs 20 effective documents

WHY = ("with so few, uneven documents no interval method tried holds its level: on pydoc's own documents (27 worth "
       "6.6, one of a third of the tokens) the cluster-robust t (CR2) intervals of a model's CE covered 88-91% of "
       "the truths (93.5% for the largest model), 70-84% in the samples that lack the longest document, and a "
       "studentized bootstrap over documents did worse, 76-83% (benchmarks/RESULTS.md, \"Few heavy documents\"); "
       "more documents, or more even ones, are the remedy")  # fmt: skip
NOT_FLAGGED = ("Not flagged: the laws' exponent intervals, which include the sizes' scatter and covered 94.8-98.3% on "
               "pydoc's real-document null (benchmarks/RESULTS.md, \"Real-document nulls\")")  # fmt: skip


@dataclass(frozen=True)
class Flagged:
    """Rows of one table, for one dataset, that carry a flag: how many of how many."""

    table: str
    flagged: int
    rows: int

    def text(self) -> str:
        return f"{self.flagged} of {self.rows} in {self.table}.csv"


@dataclass(frozen=True)
class HeavyDocuments:
    """One dataset under HEAVY_DOCUMENTS effective documents: its documents, the per-model intervals its tables
    mark unreliable and the laws whose lack of fit they call not testable."""

    dataset: str
    n_eff: float
    n_documents: int
    unreliable: tuple[Flagged, ...]
    untestable: Flagged | None

    def headline(self) -> str:
        return (f"{self.dataset}: {self.n_eff:.1f} effective documents of {self.n_documents} "
                f"(under {HEAVY_DOCUMENTS:g}: few heavy documents)")  # fmt: skip

    def findings(self) -> str:
        parts = []
        if self.unreliable:
            parts.append("intervals marked unreliable (ci_reliable False): "
                         + ", ".join(f.text() for f in self.unreliable))  # fmt: skip
        if self.untestable is not None:
            parts.append(f"laws whose lack of fit is not testable: {self.untestable.text()}")
        return "Flagged: " + ("; ".join(parts) if parts else "no table of it is loaded")

    def text(self) -> str:
        """One paragraph, as the run summary prints it."""
        return f"{self.headline()}. {self.findings()}. Why: {WHY}. {NOT_FLAGGED}."

    def html(self) -> str:
        """One paragraph of the landing page, a line of its own (docutils' line length limit)."""
        return (f'<p class="heavy-documents" data-dataset="{html.escape(self.dataset)}"><b>'
                f"{html.escape(self.headline())}</b>. {html.escape(self.findings())}. Why: {html.escape(WHY)}. "
                f"{html.escape(NOT_FLAGGED)}.</p>")  # fmt: skip


def _reliability(table: str, frame: pd.DataFrame, dataset: str) -> Flagged | None:
    if frame.empty or "ci_reliable" not in frame or "dataset" not in frame:
        return None
    rows = frame[frame["dataset"].eq(dataset)]
    reliable = rows["ci_reliable"].map(lambda v: v is True or str(v) == "True")
    return Flagged(table, int((~reliable).sum()), len(rows))


def _lack_of_fit(frame: pd.DataFrame, dataset: str) -> Flagged | None:
    if frame.empty or not {"lof_p", "alpha", "dataset"} <= set(frame.columns):
        return None
    laws = frame[frame["dataset"].eq(dataset) & frame["alpha"].notna()]
    return Flagged(LAW_TABLE, int(laws["lof_p"].isna().sum()), len(laws))


def heavy_documents(tables: Mapping[str, pd.DataFrame]) -> list[HeavyDocuments]:
    """Every dataset of metrics.csv whose fewest effective documents (over its models) are under HEAVY_DOCUMENTS,
    with the rows of each table that flag it; [] where metrics.csv has no documents' columns."""
    metrics = tables.get("metrics", pd.DataFrame())
    if metrics.empty or not {"dataset", "n_eff_documents", "n_documents"} <= set(metrics.columns):
        return []
    out = []
    for dataset, rows in metrics.groupby("dataset", sort=True):
        n_eff = float(rows["n_eff_documents"].min())
        if not (math.isfinite(n_eff) and n_eff < HEAVY_DOCUMENTS):
            continue
        found = [_reliability(t, tables.get(t, pd.DataFrame()), str(dataset)) for t in RELIABILITY_TABLES]
        n_documents = int(rows.loc[rows["n_eff_documents"].idxmin(), "n_documents"])
        out.append(HeavyDocuments(str(dataset), n_eff, n_documents, tuple(f for f in found if f is not None),
                                  _lack_of_fit(tables.get(LAW_TABLE, pd.DataFrame()), str(dataset))))  # fmt: skip
    return out


TABLES = (*RELIABILITY_TABLES, LAW_TABLE)  # the tables `heavy_documents` reads
