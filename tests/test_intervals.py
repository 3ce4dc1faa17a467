"""One model's intervals (`rankscale.intervals`): the cluster-robust t of a ratio, BCa of a biased statistic and the
Monte Carlo error of a bootstrap interval's ends, each against a closed form, a hand computation or re-drawing;
and metrics.csv never writes a point on or outside its own interval."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import special, stats

from rankscale.bca import BOOTSTRAP_SE_T, JACKKNIFE_T, ONE_SIDED, acceleration, bca
from rankscale.conjecture import distribution_statistics
from rankscale.identity import OWN_SHA
from rankscale.intervals import BIAS_LIMIT, cr2_t, ratio_test
from rankscale.lognormal import sample_discrete_lognormal
from rankscale.rankfile import RankArrays
from rankscale.statistics import Totals
from rankscale.strata import StrataSettings
from rankscale.summary import ModelInfo, Resampling, Summary, SummarySettings, summarize, unit_totals
from rankscale.tables import Replicates
from rankscale.tables.metrics import metrics_table
from rankscale.tables.model_intervals import BCA, CR2_T
from rankscale.windows import WindowSpec


def test_cr2_t_of_equal_documents_is_the_classical_t_interval() -> None:
    """Equal weights: CR2 is s^2 / m and Bell-McCaffrey's df is m - 1, so the interval is Student's."""
    rates = np.random.default_rng(0).normal(0.4, 0.1, 12)
    low, high, df = cr2_t(rates, np.full(12, 1 / 12), np.array(rates.mean()), 0.95)
    want = stats.t.interval(0.95, 11, loc=rates.mean(), scale=stats.sem(rates))
    assert df == pytest.approx(11.0)
    assert (float(low), float(high)) == (pytest.approx(want[0]), pytest.approx(want[1]))


def test_cr2_t_by_hand_with_one_dominant_document() -> None:
    w = np.array([0.6, 0.2, 0.1, 0.1])
    r = np.array([0.5, 0.2, 0.3, 0.1])
    point = float(w @ r)
    low, high, df = cr2_t(r, w, np.array(point), 0.9)
    variance = float(np.sum(w**2 * (r - point) ** 2 / (1 - w)))
    # Bell-McCaffrey by its definition: eigenvalues of A^1/2 (I - 1 w')(I - w 1') A^1/2
    p = np.eye(4) - np.outer(np.ones(4), w)
    a = np.diag(np.sqrt(w**2 / (1 - w)))
    lam = np.linalg.eigvalsh(a @ p @ p.T @ a)
    assert df == pytest.approx(lam.sum() ** 2 / (lam**2).sum())
    assert df < 3.0  # one document of 60%: far fewer than m - 1 = 3 degrees of freedom
    assert float(high) - point == pytest.approx(stats.t.ppf(0.95, df) * math.sqrt(variance))
    assert float(low) == pytest.approx(2 * point - float(high))
    assert all(math.isnan(float(x)) for x in cr2_t(r[:1], w[:1], np.array(0.5), 0.9))  # one document: none


def test_cr2_t_covers_a_ratio_of_unequal_documents() -> None:
    """Documents of unequal lengths (lognormal, sigma 0.8: Kish's n_eff about 21 of 40), rates with a document
    effect: 94-97.5% over 2000 corpora. (Under 10 effective documents it is conservative here, 97-99%, and on
    pydoc's own documents it is not enough: benchmarks/RESULTS.md.)"""
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(2000):
        n = np.ceil(rng.lognormal(5.0, 0.8, 40))
        rate = np.clip(0.3 + rng.normal(0, 0.08, 40), 0, 1)
        hits = rng.binomial(n.astype(int), rate)
        low, high, _ = cr2_t(hits / n, n / n.sum(), np.array(hits.sum() / n.sum()), 0.95)
        covered += bool(low <= 0.3 <= high)
    assert 0.94 <= covered / 2000 <= 0.975


def test_ratio_test_of_equal_documents_is_the_one_sample_t_test() -> None:
    """Equal denominators: CR2's t on Bell and McCaffrey's df is the textbook one-sample t test of the documents'
    rates against 0 (scipy's), and its interval Student's."""
    rates = np.random.default_rng(3).normal(0.05, 0.2, 9)
    got = ratio_test(rates * 40.0, np.full(9, 40.0), 0.95)
    want = stats.ttest_1samp(rates, 0.0)
    assert got.df == pytest.approx(8.0) and got.t == pytest.approx(want.statistic, rel=1e-12)
    assert got.p_value == pytest.approx(want.pvalue, rel=1e-10)
    low, high = stats.t.interval(0.95, 8, loc=rates.mean(), scale=stats.sem(rates))
    assert (got.interval.low, got.interval.high) == (pytest.approx(low), pytest.approx(high))


def test_ratio_test_by_hand_with_unequal_documents() -> None:
    """Four documents of 60%, 20%, 10% and 10% of the tokens: the p of sum n / sum d = 0 by hand (the CR2 variance
    term by term, df from the eigenvalues of A^1/2 (I - 1 w')(I - w 1') A^1/2, scipy's t distribution), and
    p < 1 - level exactly when the interval leaves out 0, over shifts of the rates across the boundary."""
    d = np.array([600.0, 200.0, 100.0, 100.0])
    w = d / d.sum()
    lam = np.linalg.eigvalsh(np.diag(np.sqrt(w**2 / (1 - w))) @ (np.eye(4) - np.outer(np.ones(4), w))
                            @ (np.eye(4) - np.outer(w, np.ones(4))) @ np.diag(np.sqrt(w**2 / (1 - w))))  # fmt: skip
    df = lam.sum() ** 2 / (lam**2).sum()
    r = np.array([0.5, -0.2, 0.3, -0.1])
    for shift in np.linspace(-0.8, 0.8, 161):
        rates = r + shift
        point = float(w @ rates)
        variance = sum(w[u] ** 2 * (rates[u] - point) ** 2 / (1 - w[u]) for u in range(4))
        t = point / math.sqrt(variance)
        got = ratio_test(rates * d, d, 0.9)
        assert got.df == pytest.approx(df, rel=1e-12) and got.t == pytest.approx(t, rel=1e-10)
        assert got.p_value == pytest.approx(2 * stats.t.sf(abs(t), df), rel=1e-9)
        assert (got.p_value < 0.1) == (got.interval.low > 0 or got.interval.high < 0), shift
    assert 1.0 < df < 3.0  # one dominant document: far fewer than 3
    one = ratio_test(np.array([5.0, 0.0]), np.array([10.0, 0.0]), 0.9)  # one document with tokens: no test
    assert math.isnan(one.p_value) and math.isnan(one.interval.low)


def test_acceleration_by_hand() -> None:
    # d = mean - value = (0.25, 0.25, 0.25, -0.75): sum d^3 = -0.375, sum d^2 = 0.75
    assert acceleration(np.array([0.0, 0.0, 0.0, 1.0, np.nan])) == pytest.approx(-0.375 / (6 * 0.75**1.5))
    assert acceleration(np.ones(5)) == 0.0 and acceleration(np.zeros(0)) == 0.0


def test_bca_undoes_a_shift_of_the_replicates() -> None:
    """Replicates theta + b + sigma Z (exact Normal quantiles), no skew: BC's interval is theta - b +- z sigma."""
    b, sigma, estimate = 0.3, 1.0, 10.0
    reps = estimate + b + sigma * special.ndtri((np.arange(20000) + 0.5) / 20000)
    got = bca(reps, estimate, np.array([1.0, -1.0, 1.0, -1.0]), 0.95)
    assert (got.low, got.high) == (pytest.approx(estimate - b - 1.959964, abs=0.01),
                                   pytest.approx(estimate - b + 1.959964, abs=0.01))  # fmt: skip
    assert got.note == "" and got.mc_error < 0.01


def test_bca_reports_no_interval_rather_than_stretching_one() -> None:
    estimate = 1.0
    above = estimate + np.abs(np.random.default_rng(2).normal(0.1, 0.02, 200))
    got = bca(above, estimate, np.zeros(0), 0.95)
    assert math.isnan(got.low) and math.isnan(got.high) and ONE_SIDED in got.note
    shifted = estimate + np.random.default_rng(3).normal(0.5, 1.0, 400)  # z0 about -0.5
    limited = bca(shifted, estimate, np.zeros(0), 0.95, BIAS_LIMIT)
    assert math.isnan(limited.low) and "biased under resampling" in limited.note
    assert bca(shifted, estimate, np.zeros(0), 0.95).low < estimate  # without the limit BC corrects it
    flat = bca(np.full(50, 2.0), 2.0, np.zeros(0), 0.95)
    assert (flat.low, flat.high, flat.mc_error) == (2.0, 2.0, 0.0)  # no spread: the point is its interval


def test_a_bca_interval_always_holds_its_point_strictly() -> None:
    rng = np.random.default_rng(4)
    for _ in range(300):
        reps = rng.lognormal(rng.normal(0, 0.5), rng.uniform(0.1, 1.5), int(rng.integers(20, 300)))
        estimate = float(np.quantile(reps, rng.uniform(0.0, 1.0)))
        got = bca(reps, estimate, rng.normal(0, 1, 30), 0.95)
        assert math.isnan(got.low) or got.low < estimate < got.high


@pytest.mark.parametrize("replicates", [200, 1000])
def test_bca_mc_error_matches_redrawing_the_replicates(replicates: int) -> None:
    """The grouped jackknife's SE of the ends against their SD over 1000 independent draws of B replicates from a
    skewed law (a lognormal about the estimate, z0 and skew both non-zero): the median estimate within 25%."""
    rng = np.random.default_rng(replicates)
    jack = rng.normal(0, 1, 40) ** 3  # some acceleration
    ends, estimates = [], []
    for _ in range(1000):
        got = bca(rng.lognormal(0.05, 0.5, replicates), 1.0, jack, 0.95)
        ends.append((got.low, got.high))
        estimates.append(got.mc_error)
    ends_array = np.array(ends)
    truth = ends_array.std(axis=0).max() / np.mean(ends_array[:, 1] - ends_array[:, 0])
    assert np.median(estimates) == pytest.approx(truth, rel=0.25)


VOCAB, DOCUMENTS = 400, 24


def small_run(lengths: np.ndarray, replicates: int = 60) -> tuple[list[Summary], Replicates, dict[str, np.ndarray]]:
    """One model's summary of a discrete-lognormal rank array over documents of `lengths` tokens, as the workflow
    computes it (the bootstrap and the jackknife of its documents included)."""
    doc = np.repeat(np.arange(lengths.size), lengths).astype(np.uint32)
    pos = np.concatenate([np.arange(1, n + 1) for n in lengths]).astype(np.uint32)
    rank = sample_discrete_lognormal(2.5, 2.0, VOCAB, doc.size, seed=7).astype(np.uint32)
    rank[doc == 0] = np.minimum(rank[doc == 0], 3)  # one document far easier than the rest
    arrays = RankArrays(rank, (-np.log(rank) - 0.1).astype(np.float32), doc, pos, np.zeros(doc.size, np.uint32))
    settings = SummarySettings(4, [1, 10], [1], [1], [1, 10], replicates, 0, True, replicates,
                               StrataSettings([], {}, [1]))  # fmt: skip
    meta = {"vocab_size": VOCAB, "model": "m", "dataset": "d", "S": 10**6, "ties": "ge", OWN_SHA: "m"}
    resampling = Resampling.for_dataset(np.arange(lengths.size), lengths.size, replicates, 0, "d")
    info = ModelInfo("f", None, "m", True, None, "m")
    summary, _, boot = summarize(arrays, meta, settings, resampling, info, WindowSpec(64, None, None), None)
    summary = Summary.from_json(summary.to_json())
    totals = Totals({key[4:]: value for key, value in boot.items() if key.startswith("rep_")})
    return [summary], Replicates([summary], [totals], [unit_totals(boot)]), boot


def test_the_jackknife_is_each_document_left_out() -> None:
    lengths = np.array([300, 40, 60, 80, 50, 70])
    _, _, boot = small_run(lengths)
    doc = np.repeat(np.arange(lengths.size), lengths)
    rank = sample_discrete_lognormal(2.5, 2.0, VOCAB, doc.size, seed=7)
    rank[doc == 0] = np.minimum(rank[doc == 0], 3)
    logprob = (-np.log(rank) - 0.1).astype(np.float32).astype(np.float64)

    def plug_in(keep: np.ndarray) -> Any:
        counts = np.bincount(rank[keep], minlength=VOCAB + 1).astype(np.float64)
        sums = np.bincount(rank[keep], weights=logprob[keep], minlength=VOCAB + 1)
        return distribution_statistics(counts, sums, [1, 10], True)

    from scipy import sparse

    from rankscale.unseen_ranks import chao2_confidence

    shape = (VOCAB + 1, lengths.size)  # the documents' rank histograms and summed log-probs, as the summary's
    hist = sparse.csc_matrix((np.ones(doc.size), (rank, doc)), shape=shape)
    sums = sparse.csc_matrix((logprob, (rank, doc)), shape=shape)
    for u in (0, 3):
        keep = doc != u
        want = plug_in(keep)
        # the reported decomposition over the other documents: ee its jackknife, m T - (m - 1) mean T_(-v), and
        # confidence Chao2's estimate with the documents left as the units
        others = [v for v in range(lengths.size) if v != u]
        m = len(others)
        ee = m * want.ee - (m - 1) * np.mean([plug_in(keep & (doc != v)).ee for v in others])
        confidence = float(chao2_confidence(hist, sums, (np.arange(lengths.size) != u)[None, :].astype(float))[0])
        ce = want.ee + want.self_alignment + want.confidence  # the plug-in decomposition sums to CE
        assert boot["jack_ee"][u] == pytest.approx(ee, rel=1e-9)
        assert boot["jack_confidence"][u] == pytest.approx(confidence, rel=1e-9)
        assert boot["jack_self_alignment"][u] == pytest.approx(ce - ee - confidence, rel=1e-9)


def test_uneven_documents_are_marked_unreliable() -> None:
    from rankscale.intervals import unreliable_design

    assert unreliable_design(6.6, 27).startswith("6.6 effective documents")
    assert "design effect 2.4" in unreliable_design(25.0, 60)  # enough documents, but uneven ones
    assert unreliable_design(13.9, 54).startswith("13.9 effective documents")  # pydoc's documents drawn twice over
    assert unreliable_design(23.0, 28) == "" and unreliable_design(130.5, 164) == ""  # HumanEval's


def test_metrics_table_writes_no_point_on_or_outside_its_interval() -> None:
    """A synthetic design of unequal documents: ratios get cr2_t, histogram statistics BCa or no interval with a
    reason; every finite interval holds its point strictly (or is the point itself, with no spread)."""
    lengths = np.random.default_rng(9).integers(20, 200, DOCUMENTS)
    lengths[0] = 2000
    summaries, replicates, _ = small_run(lengths, replicates=200)
    table = metrics_table(summaries, replicates, 0.95)
    finite = table["ci_low"].notna()
    inside = (table["ci_low"] < table["value"]) & (table["value"] < table["ci_high"])
    point = (table["ci_low"] == table["value"]) & (table["ci_high"] == table["value"])
    assert (inside | point)[finite].all()
    assert (table.loc[~finite, "ci_note"].str.len() > 0).all()  # no interval: always a reason
    ratio = table["metric"].isin(["rbp", "ce"])
    assert (table.loc[ratio, "ci_method"] == CR2_T).all() and (table.loc[ratio, "ci_mc_error"] == 0).all()
    # the rank histogram's statistics: BCa or its jackknife t; confidence and self-alignment (Chao2's) the
    # replicates' SD with t
    assert table.loc[~ratio, "ci_method"].isin([BCA, JACKKNIFE_T, BOOTSTRAP_SE_T]).all()
    n_eff = summaries[0].n_eff_documents
    spread = finite & ~point  # (RBP_|V| = 1 in every document: no spread, the point is its interval, exactly)
    assert n_eff < 10 and not table.loc[spread, "ci_reliable"].any()  # one document of 2000 tokens: too few
    assert table.loc[ratio & spread, "ci_note"].str.contains("effective documents").all()
    assert table.loc[point, "ci_reliable"].all()


def test_a_share_near_one_has_its_interval_stop_at_one() -> None:
    """Eight documents whose top-k shares are 0.95-1.0: the cluster-robust t reaches past 1, which no share can;
    clipped to the share's range the upper end is 1 and the lower end is the t interval's own (a clipped end
    changes no coverage: the population share lies inside [0, 1])."""
    from rankscale.intervals import PROBABILITY, ratio_of_sums
    from rankscale.metrics import METRICS

    tokens = np.array([400, 30, 25, 900, 60, 45, 80, 35], dtype=np.float64)
    hits = np.round(tokens * np.array([1.0, 0.9, 0.92, 1.0, 0.95, 0.9, 1.0, 0.94]))
    free, = ratio_of_sums(hits, tokens, 0.95)
    bounded, = ratio_of_sums(hits, tokens, 0.95, PROBABILITY)
    assert free.high > 1.0 and bounded.high == 1.0 and bounded.low == free.low
    assert METRICS["rbp"].bounds == PROBABILITY and METRICS["ce"].bounds[1] == math.inf
