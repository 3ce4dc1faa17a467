"""A share observed as exactly 0 (or 1) in every document: a one-sided bound with documents as trials
(`rankscale.intervals.boundary_bound`), never the point [0, 0] (benchmarks/zero_bound_coverage.py measures it)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankscale.intervals import PROBABILITY, ModelInterval, boundary_bound, cr2_intervals, ratio_of_sums
from rankscale.metrics import METRICS
from rankscale.tables.model_intervals import CR2_T, certain, reliability

LEVEL = 0.95


@pytest.mark.parametrize("documents", [1, 7, 30, 164, 1000])
def test_one_token_per_document_is_clopper_pearson_exactly(documents: int) -> None:
    """Independent trials (one token per document): the bound is scipy's exact Clopper-Pearson interval of 0 (or
    n) successes in n trials, both ends."""
    ones = np.ones(documents)
    zero, = ratio_of_sums(np.zeros(documents), ones, LEVEL, PROBABILITY)
    full, = ratio_of_sums(ones, ones, LEVEL, PROBABILITY)
    exact0 = stats.binomtest(0, documents).proportion_ci(LEVEL, method="exact")
    exact1 = stats.binomtest(documents, documents).proportion_ci(LEVEL, method="exact")
    assert (zero.low, full.high) == (0.0, 1.0)
    # binomtest finds its ends by root-finding (relative error ~1e-10); the closed form 1 - 0.025^(1/n) is exact
    assert math.isclose(zero.high, exact0.high, rel_tol=1e-9), (zero.high, exact0.high)
    assert math.isclose(full.low, exact1.low, rel_tol=1e-9), (full.low, exact1.low)
    assert math.isclose(zero.high, -math.expm1(math.log(0.025) / documents), rel_tol=1e-13)
    assert math.isclose(full.low, 1.0 - zero.high, rel_tol=1e-13)
    assert "one-sided upper" in zero.note and "one-sided lower" in full.note


def test_documents_not_tokens_are_the_trials() -> None:
    """Four equal documents of 1,000 windows bound a zero as four single trials do (each document may be all hits
    or none: intra-document correlation 1); unequal ones by Kish's n_eff = (sum w)^2 / sum w^2, worked by hand:
    (10 + 10 + 20 + 40)^2 / (100 + 100 + 400 + 1600) = 6400 / 2200, and the bound 1 - 0.025^(1 / n_eff), at which
    no hit in n_eff independent all-or-nothing trials has probability 2.5%, wider than U = 4 documents' bound."""
    long, = ratio_of_sums(np.zeros(4), np.full(4, 1000.0), LEVEL, PROBABILITY)
    single = stats.binomtest(0, 4).proportion_ci(LEVEL, method="exact").high
    assert math.isclose(long.high, single, rel_tol=1e-12)
    assert long.high > 0.5  # not 1 - 0.025^(1 / 4000) = 0.0009: the tokens of a document count as one
    weights = np.array([10.0, 10.0, 20.0, 40.0])
    uneven, = ratio_of_sums(np.zeros(4), weights, LEVEL, PROBABILITY)
    n_eff = 6400.0 / 2200.0
    assert math.isclose(uneven.high, 1.0 - 0.025 ** (1.0 / n_eff), rel_tol=1e-12)
    assert math.isclose((1.0 - uneven.high) ** n_eff, 0.025, rel_tol=1e-12)
    assert uneven.high > single
    assert "2.9 effective documents" in uneven.note and "(of 4" in uneven.note
    documents_without_windows, = ratio_of_sums(np.zeros(6), np.r_[weights, 0.0, 0.0], LEVEL, PROBABILITY)
    assert documents_without_windows == uneven  # a document too short for a window is no trial


def test_a_share_off_the_boundary_keeps_its_cr2_interval_and_an_unbounded_ratio_its_point() -> None:
    """One hit anywhere: the cluster-robust t, unchanged; a ratio that is no share (no PROBABILITY bounds) with
    every document at 0 keeps its point (its bound would be meaningless)."""
    tokens = np.array([50.0, 80.0, 120.0, 40.0])
    hits = np.array([0.0, 0.0, 3.0, 0.0])
    bounded, = ratio_of_sums(hits, tokens, LEVEL, PROBABILITY)
    free, = ratio_of_sums(hits, tokens, LEVEL)
    assert bounded.note == "" and bounded.high == free.high and bounded.low == max(free.low, 0.0)
    assert ratio_of_sums(np.zeros(4), tokens, LEVEL)[0] == ModelInterval(0.0, 0.0, 0.0)


def test_rbp_at_the_vocabulary_is_certain_not_observed() -> None:
    """RBP_k at k >= |V| is 1 by construction: its point is its interval; RBP_k below |V| at 1 in every document is
    an observation and gets the lower bound; `reliability` says which."""
    rbp = METRICS["rbp"]
    fixed = certain(rbp, [1, 10, 512, 600], 512)
    assert fixed.tolist() == [False, False, True, True]
    assert not certain(METRICS["ce"], [0], 512).any()
    tokens = np.array([30.0, 30.0, 30.0])
    rates = np.ones((3, 2))
    structural, observed = cr2_intervals(rates, tokens, np.ones(2), LEVEL, PROBABILITY, np.array([True, False]))
    assert structural == ModelInterval(1.0, 1.0, 0.0)
    assert observed == boundary_bound(1.0, tokens, LEVEL) and observed.low < 1.0
    assert reliability(structural, 25.0, 30, CR2_T) == (True, "")
    ok, note = reliability(observed, 25.0, 30, CR2_T)
    assert ok and note.startswith("observed 1 in every document: one-sided lower")
    ok, note = reliability(observed, 6.6, 27, CR2_T)  # too few documents: both reasons
    assert not ok and note.startswith("6.6 effective documents") and "one-sided lower" in note


INTERVAL = re.compile(r"^(?:(?P<name>.+)_)?ci_low$")


def degenerate_boundary_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of `table` with an interval [0, 0] or [1, 1] on a value observed as 0 or 1 (`x`, `x_ci_low`,
    `x_ci_high`; `value`, `ci_low`, `ci_high`), other than RBP_k at k >= |V|, certain by construction."""
    bad = []
    for column in table.columns:
        if not (match := INTERVAL.match(column)) or (high := column.replace("ci_low", "ci_high")) not in table:
            continue
        point = match["name"] or "value"
        if point not in table or not pd.api.types.is_numeric_dtype(table[point]):
            continue
        lo, hi, x = (pd.to_numeric(table[c], errors="coerce") for c in (column, high, point))
        hit = (lo == hi) & (lo == x) & x.isin([0.0, 1.0])
        if {"k", "vocab_size"} <= set(table.columns):
            hit &= ~(pd.to_numeric(table["k"], errors="coerce") >= table["vocab_size"])
        bad.append(table.loc[hit].assign(interval=point))
    return pd.concat(bad) if bad else table.iloc[:0]


def test_the_check_finds_a_point_interval_at_zero() -> None:
    """The sweep below catches [0, 0] on 0 and [1, 1] on 1, and passes RBP_|V| and an interval with spread."""
    table = pd.DataFrame({"metric": "rbp", "k": [1, 5, 512, 7], "vocab_size": 512, "value": [0.0, 1.0, 1.0, 0.0],
                          "ci_low": [0.0, 1.0, 1.0, 0.0], "ci_high": [0.0, 1.0, 1.0, 0.02],
                          "share": [0.0, 0.5, 0.5, 0.5], "share_ci_low": [0.0, 0.4, 0.4, 0.4],
                          "share_ci_high": [0.0, 0.6, 0.6, 0.6]})  # fmt: skip
    found = degenerate_boundary_intervals(table)
    assert sorted(zip(found["k"], found["interval"], strict=True)) == [(1, "share"), (1, "value"), (5, "value")]


def not_observed(table: str, found: pd.DataFrame) -> pd.Series:
    """Which zero-width intervals at 0 or 1 hold by construction or are no share: at N = 1 a run is one token, so
    emergence's ratio to independence is 1 and emergence_laws' exponent difference 0; token_learning's
    lost_per_gained is a ratio of two counts, not a share (left as it is)."""
    by_construction = {"emergence": ("ratio_empirical_independent", "N", 1),
                       "emergence_laws": ("difference", "N", 1),
                       "token_learning": ("value", "quantity", "lost_per_gained")}  # fmt: skip
    if table not in by_construction:
        return pd.Series(False, index=found.index)
    column, key, value = by_construction[table]
    return (found["interval"] == column) & (found[key] == value)


def test_no_finished_table_has_a_point_interval_at_zero_or_one(smoke_run: Path) -> None:
    """Every table of the finished smoke run: no share observed as 0 (1) with the interval [0, 0] ([1, 1]); the
    emergence rows at 0 carry a one-sided upper bound, and so do their Markov rate and ratio, said so in `ci_note`."""
    tables = sorted((smoke_run / "results/smoke/tables").glob("*.csv"))
    assert len(tables) > 10
    for path in tables:
        found = degenerate_boundary_intervals(pd.read_csv(path))
        found = found[~not_observed(path.stem, found)]
        assert found.empty, (path.name, found.head().to_dict("records"))
    emergence = pd.read_csv(smoke_run / "results/smoke/tables/emergence.csv")
    zero = emergence[emergence["empirical"] == 0]
    assert len(zero) > 0  # the smoke run has runs no window completes: the case this is about
    assert (zero["empirical_ci_high"] > 0).all()
    assert zero["ci_note"].str.contains("empirical: observed 0 in every document: one-sided upper").all()
    assert (zero["ratio_empirical_independent_ci_high"] > 0).all()
    assert zero["ci_note"].str.contains("ratio_empirical_independent: 0: (?:upper end|no finite upper end)").all()


def test_a_difference_of_shares_at_zero_in_every_document_is_bounded_both_ways() -> None:
    """token_churn's net (gained - lost, in [-1, 1]) at 0 in every document: [-u, u] with the shares' own u; a
    share's bounds stay one-sided, and a difference off 0 keeps CR2."""
    from rankscale.intervals import DIFFERENCE

    tokens = np.array([10.0, 10.0, 20.0, 40.0])
    net, = ratio_of_sums(np.zeros(4), tokens, LEVEL, DIFFERENCE)
    share, = ratio_of_sums(np.zeros(4), tokens, LEVEL, PROBABILITY)
    assert (net.low, net.high) == (-share.high, share.high) and "both ends" in net.note
    moved, = ratio_of_sums(np.array([1.0, -1.0, 0.0, 2.0]), tokens, LEVEL, DIFFERENCE)
    assert moved.note == "" and moved.low < 2 / 80 < moved.high


def test_emergence_quantities_of_a_zero_run_rate_are_bounded_from_its_bounds() -> None:
    """No run and no pair of hits anywhere: the ratio to independence is below the run rate's bound over RBP_k^N's
    lower end, the Markov rate below RBP_k's upper end times P(hit | previous hit)'s bound to the N - 1, worked by
    hand from Clopper-Pearson on the documents."""
    from rankscale.statistics import PAIRS_BOTH_HIT, PAIRS_PREV_HIT, Totals
    from rankscale.tables.emergence import _zero_rate_bounds

    windows = np.array([30.0, 50.0, 20.0, 40.0, 60.0])
    prev = np.array([[4.0, 9.0], [0.0, 12.0], [3.0, 5.0], [6.0, 7.0], [2.0, 8.0]])  # pairs after a hit, per k
    units = Totals({PAIRS_BOTH_HIT.name: np.zeros_like(prev), PAIRS_PREV_HIT.name: prev})
    empirical = boundary_bound(0.0, windows, LEVEL)
    rbp = ModelInterval(0.1, 0.2, 0.0)
    found = _zero_rate_bounds(units, {"empirical": 0.0, "markov": 0.0, "N": 3}, 1, empirical, rbp, LEVEL)
    n_windows = windows.sum() ** 2 / (windows**2).sum()
    n_pairs = prev[:, 1].sum() ** 2 / (prev[:, 1] ** 2).sum()
    upper = [-math.expm1(math.log(0.025) / n) for n in (n_windows, n_pairs)]
    assert found["ratio_empirical_independent"].high == pytest.approx(upper[0] / 0.1**3, rel=1e-12)
    assert found["markov"].high == pytest.approx(0.2 * upper[1] ** 2, rel=1e-12)
    assert found["markov"].low == found["ratio_empirical_independent"].low == 0.0
    some = _zero_rate_bounds(units, {"empirical": 0.01, "markov": 0.002, "N": 3}, 1, ModelInterval(0.0, 0.02), rbp,
                             LEVEL)  # fmt: skip
    assert some == {}  # a hit somewhere: the tables' own intervals stand
