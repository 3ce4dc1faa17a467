"""Typed summaries built from known numbers, for table and figure tests that need no rank array."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rankscale.conjecture import Distribution
from rankscale.summary import ModelInfo, Summary


def distribution(values: Mapping[str, float] | None = None) -> Distribution:
    """A Distribution holding `values` (others NaN): what a summary's histogram statistics say."""
    nan = math.nan
    fields: dict[str, Any] = dict(
        ee=nan, ee_mm=nan, self_alignment=nan, confidence=nan, ranks_seen=0, mu=nan, sigma=nan, ee_lognormal=nan,
        neg_log_p1_lognormal=nan, neg_log_rbp_lognormal={}, ce_appendix_b=nan, neg_log_p1_appendix_b=nan,
    )  # fmt: skip
    fields.update(values or {})
    return Distribution(**fields)


def summary(
    model: str,
    S: int,
    sums: Mapping[str, Any],
    k: list[int],
    family: str = "f",
    dataset: str = "d",
    histogram: Mapping[str, float] | None = None,
    **more: Any,
) -> Summary:
    """A summary of `model` whose summed statistics are `sums` (n, sum_logprob, hits on grid `k`, ...)."""
    n = int(np.asarray(sums["n"]))
    fields: dict[str, Any] = dict(
        model=model, dataset=dataset, info=ModelInfo(family, None, model, True, None, model), S=int(S), vocab_size=1000,
        n_tokens=n, n_documents=1, k=list(k), sums=dict(sums), emergence_k=[], emergence_N=[], law_k=[],
        distribution=distribution(histogram), distribution_replicates=0, truncated=True, rank_tests={},
        mean_log_rank=nan_float(), runs=[], ties="ge", rank_sha256="",
    )  # fmt: skip
    fields.update(more)
    return Summary(**fields)


def nan_float() -> float:
    return math.nan
