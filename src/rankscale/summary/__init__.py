"""Per model x dataset summaries: computed once from a rank array (`compute`), read as typed results (`types`)."""

from rankscale.bootstrap import Resampling
from rankscale.limits import FEW_DOCUMENTS
from rankscale.summary.compute import (
    RankPairs,
    SummarySettings,
    kish_documents,
    per_document,
    rank_tests,
    summarize,
)
from rankscale.summary.types import (
    MODEL_COLUMNS,
    ModelInfo,
    RankTest,
    RunRate,
    Summary,
    SummaryError,
    SummaryPaths,
    left_out,
    load_histogram,
    load_replicates,
    load_unit_totals,
    read_summary,
    unit_totals,
    write_summary,
)

__all__ = [
    "FEW_DOCUMENTS",
    "MODEL_COLUMNS",
    "ModelInfo",
    "RankPairs",
    "RankTest",
    "Resampling",
    "RunRate",
    "Summary",
    "SummaryError",
    "SummaryPaths",
    "SummarySettings",
    "kish_documents",
    "left_out",
    "load_histogram",
    "load_replicates",
    "load_unit_totals",
    "per_document",
    "rank_tests",
    "read_summary",
    "summarize",
    "write_summary",
    "unit_totals",
]
