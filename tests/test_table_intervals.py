"""One model's intervals in the tables beside metrics.csv (token trajectories, emergence, the rank tests): a ratio
of document sums takes the cluster-robust t over the documents' own ratios (`rankscale.intervals.ratio_of_sums`),
other smooth statistics BCa with the jackknife over documents, and no point ever sits on or outside its own
interval (an interval stretched to reach its estimate is how a biased statistic showed before)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankscale.bca import leave_one_out
from rankscale.bootstrap import interval
from rankscale.intervals import ratio_of_sums
from rankscale.tables import TableSettings, build_table
from rankscale.trajectories import load, save
from tests.test_table_headers import default_like
from tests.test_token_trajectories import DOCS, KS, PER_DOC, family, lognormal_family, run

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TOKEN_TABLES = ("token_churn", "token_learning", "token_slopes", "rank_transitions")


def points_off_their_interval(frame: pd.DataFrame) -> list[str]:
    """Every cell whose point lies outside its interval or on one end of an interval of some width (`X` beside
    `X_ci_low`, `X_ci_high` or `X_ci_low_documents`, `X_ci_high_documents`, or `value` beside `ci_low`, `ci_high`);
    an interval of no width is its point. A share observed as 0 (1) in every document has a one-sided bound [0, u]
    ([l, 1]) with the point on its end, which its row's note says (`rankscale.intervals.boundary_bound`)."""
    found = []
    notes = [c for c in ("note", "ci_note") if c in frame]
    one_sided = frame[notes].fillna("").astype(str).apply(lambda c: c.str.contains("one-sided")).any(axis=1)
    for low in (c for c in frame.columns if c.endswith("ci_low") or c.endswith("ci_low_documents")):
        name = low.split("_ci_low")[0] if not low.startswith("ci_low") else "value"
        high = low.replace("ci_low", "ci_high")
        if name not in frame or high not in frame:
            continue
        point, lo, hi = (pd.to_numeric(frame[c], errors="coerce") for c in (name, low, high))
        known = point.notna() & lo.notna() & hi.notna()
        bound = one_sided & (((point == 0.0) & (lo == 0.0)) | ((point == 1.0) & (hi == 1.0)))
        bad = known & ((point < lo) | (point > hi) | ((lo < hi) & ((point == lo) | (point == hi)) & ~bound))
        bad |= known & (lo == hi) & (point != lo)
        found += [f"{name} row {i}: {point[i]} [{lo[i]}, {hi[i]}]" for i in np.flatnonzero(bad)]
    return found


def rank_tests_off_their_interval(frame: pd.DataFrame, level: float = 0.95) -> list[str]:
    """Every row of rank_distribution_tests whose p disagrees with its interval of mean_llr (p < 1 - level but the
    interval holds 0, or the reverse), or whose `better` is not the side the interval lies on ('undecided' where it
    holds 0; 'not identified' where a fit is at a bound, whatever the interval)."""
    from rankscale.tables.distribution import LOGNORMAL, NOT_IDENTIFIED, UNDECIDED

    found = []
    for i, row in frame.iterrows():
        low, high, p = row["mean_llr_ci_low"], row["mean_llr_ci_high"], row["p_value"]
        excludes = bool(low > 0 or high < 0)
        if (p < 1 - level) != excludes:
            found.append(f"row {i}: p {p} against [{low}, {high}]")
        side = LOGNORMAL if low > 0 else row["alternative"] if high < 0 else UNDECIDED
        if row["better"] not in (side, NOT_IDENTIFIED):
            found.append(f"row {i}: better {row['better']} against [{low}, {high}]")
    return found


def test_the_rank_test_check_catches_a_token_level_verdict() -> None:
    """The review's pydoc row (token-level p 7.6e-84 while the interval holds 0, better = lognormal) fails the
    check on both counts; the same row by documents passes."""
    row = {"alternative": "loglogistic", "mean_llr_ci_low": -0.00023, "mean_llr_ci_high": 0.0036}
    frame = pd.DataFrame([{**row, "p_value": 7.6e-84, "better": "lognormal"}, {**row, "p_value": 0.07,
                                                                               "better": "undecided"}])  # fmt: skip
    assert rank_tests_off_their_interval(frame) == ["row 0: p 7.6e-84 against [-0.00023, 0.0036]",
                                                    "row 0: better lognormal against [-0.00023, 0.0036]"]  # fmt: skip


def test_the_check_catches_an_interval_stretched_to_its_estimate() -> None:
    """The percentile interval that reaches for its estimate (what a biased statistic got before) puts the point
    on its end; the check must say so, or it could not fail."""
    replicates = np.random.default_rng(0).normal(1.0, 0.1, 400)  # every replicate above the estimate 0.5
    low, high = interval(replicates, 0.95, 0.5)
    frame = pd.DataFrame({"x": [0.5, 0.9], "x_ci_low": [float(low), 0.8], "x_ci_high": [float(high), 1.0]})
    assert points_off_their_interval(frame) == [f"x row 0: 0.5 [{float(low)}, {float(high)}]"]
    assert points_off_their_interval(frame.assign(x=[0.95, 1.2])) == ["x row 1: 1.2 [0.8, 1.0]"]


def test_a_ratio_of_equally_long_documents_is_student_t_of_their_rates() -> None:
    """Documents of equal length: the CR2 variance is s^2 / n and Bell and McCaffrey's df n - 1, so the interval
    is the textbook t interval of the documents' mean rate, exactly."""
    rng = np.random.default_rng(1)
    hits = rng.binomial(50, rng.beta(2, 8, 12)).astype(np.float64)
    found = ratio_of_sums(hits, np.full(12, 50.0), 0.95)[0]
    rates = hits / 50
    half = stats.t.ppf(0.975, 11) * rates.std(ddof=1) / np.sqrt(12)
    assert (found.low, found.high) == pytest.approx((rates.mean() - half, rates.mean() + half), rel=1e-12)
    assert found.mc_error == 0.0


def test_a_ratio_over_uneven_documents_covers_its_population_value() -> None:
    """2000 corpora of 40 documents of lognormal lengths (n_eff about 25), each with its own rate around 0.2: the
    95% interval of hits / tokens covers the population's ratio 0.2 in 93-97% of them."""
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(2000):
        tokens = np.round(np.exp(rng.normal(4.0, 0.7, 40))) + 1
        hits = rng.binomial(tokens.astype(np.int64), rng.beta(2, 8, 40))
        found = ratio_of_sums(hits, tokens, 0.95)[0]
        covered += found.low <= 0.2 <= found.high
    assert 0.93 <= covered / 2000 <= 0.97


def test_the_token_tables_intervals_are_the_documents_own_and_hold_their_points(tmp_path) -> None:
    """token_churn's share gained between two sizes, from the documents' counts brute-forced off the rank arrays
    (equal documents: Student's t of their shares), read back from a saved result; no point of any token table
    sits on or outside its interval; the slopes' spread has a BCa interval from the jackknife over documents."""
    ranks = lognormal_family(4)
    result = run(*family(ranks), replicates=200)
    save(result, tmp_path / "t.npz", tmp_path / "t.json")
    back = load(tmp_path / "t.npz", tmp_path / "t.json")
    assert back.units.keys() == result.point.keys()
    for name, total in result.point.items():  # the documents' sums add up to the point's
        assert np.allclose(back.units[name].sum(axis=0), total)
        assert np.allclose(leave_one_out(back.units)[name][3], total - back.units[name][3])
    settings = TableSettings(level=0.95, law_k=[1, 10], law_form=None, forms=None, refits=None, seed=None)
    tables = {name: build_table(name, [], {}, settings, None, [back]) for name in TOKEN_TABLES}
    for name, frame in tables.items():
        assert points_off_their_interval(frame) == [], name
    k = KS[0]
    gained = ((ranks[0] > k) & (ranks[1] <= k)).reshape(DOCS, PER_DOC).mean(axis=1)
    half = stats.t.ppf(0.975, DOCS - 1) * gained.std(ddof=1) / np.sqrt(DOCS)
    churn = tables["token_churn"]
    row = churn[(churn["axis"] == "size") & (churn["kind"] == "all") & (churn["k"] == k) & (churn["from"] == "m0")]
    assert row["gained"].item() == pytest.approx(gained.mean(), rel=1e-12)
    assert (row["gained_ci_low"].item(), row["gained_ci_high"].item()) == pytest.approx(
        (gained.mean() - half, gained.mean() + half), rel=1e-9)  # fmt: skip
    slopes = tables["token_slopes"].iloc[0]
    assert slopes["sd_ci_low"] < slopes["sd"] < slopes["sd_ci_high"]
    assert not tables["token_churn"]["note"].fillna("").str.contains("unreliable").any()
    few = dataclasses.replace(back, n_eff_documents=6.6)  # pydoc's: the tables say its intervals do not hold
    churn = build_table("token_churn", [], {}, settings, None, [few])
    assert churn["note"].str.startswith("intervals unreliable: 6.6 effective documents (< 20)").all()


def test_a_result_without_the_documents_sums_keeps_bias_corrected_intervals(tmp_path) -> None:
    """A trajectories file written before the documents' sums were kept: BCa without acceleration of the
    replicates, still never with its point on or outside the interval."""
    result = run(*family(lognormal_family(3)), replicates=200)
    old = type(result)(**{**result.__dict__, "units": {}})
    settings = TableSettings(level=0.95, law_k=[1, 10], law_form=None, forms=None, refits=None, seed=None)
    frame = build_table("token_churn", [], {}, settings, None, [old])
    assert frame["gained_ci_low"].notna().any()
    assert points_off_their_interval(frame) == []


def test_emergence_and_rank_tests_hold_their_points_and_ratios_are_cluster_robust() -> None:
    """From summaries of synthetic rank arrays (29 documents of 40 tokens): every emergence and rank-test interval
    holds its point; the empirical run rate's interval is Student's t of the documents' own rates, and the
    independent prediction's is RBP_k's to the power N."""
    summaries, replicates = default_like()
    settings = TableSettings(level=0.95, law_k=[1, 10], law_form="power_law", forms=None, refits=200, seed=0)
    fits = build_table("powerlaw_fits", summaries, {"metrics": build_table("metrics", summaries, {}, settings,
                                                                            replicates)}, settings, replicates)  # fmt: skip
    emergence = build_table("emergence", summaries, {"powerlaw_fits": fits}, settings, replicates)
    tests = build_table("rank_distribution_tests", summaries, {}, settings, replicates)
    assert points_off_their_interval(emergence) == [] and points_off_their_interval(tests) == []
    assert tests["mean_llr_ci_low"].notna().all() and (tests["mean_llr_ci_mc_error"] == 0).all()
    assert tests["ci_reliable"].all() and emergence["ci_reliable"].all()  # 29 equal documents: a design that holds
    assert rank_tests_off_their_interval(tests) == [] and tests["p_value"].notna().all()
    for _, row in tests.iterrows():  # 29 equal documents: the test by documents is Student's t of their own means
        units = replicates.units[(row["model"], row["dataset"])]
        means = np.asarray(units[f"llr_{row['alternative']}"]) / np.asarray(units["n"])
        want = stats.ttest_1samp(means, 0.0)
        assert (row["t"], row["df"], row["p_value"]) == (pytest.approx(want.statistic, rel=1e-9), pytest.approx(28),
                                                         pytest.approx(want.pvalue, rel=1e-9))  # fmt: skip
    s = summaries[0]
    units = replicates.units[s.key]
    row = emergence[(emergence["model"] == s.model) & (emergence["k"] == s.emergence_k[-1])
                    & (emergence["N"] == s.emergence_N[0])].iloc[0]  # fmt: skip
    i, j = len(s.emergence_k) - 1, 0
    from rankscale.statistics import RUN_HITS, RUN_WINDOWS, TOKENS

    windows = np.asarray(units[RUN_WINDOWS])[:, j]
    rates = np.asarray(units[RUN_HITS])[:, i, j] / windows
    assert np.ptp(windows) == 0  # equal documents: Student's t of their rates
    half = stats.t.ppf(0.975, len(rates) - 1) * rates.std(ddof=1) / np.sqrt(len(rates))
    assert (row["empirical_ci_low"], row["empirical_ci_high"]) == pytest.approx(
        (rates.mean() - half, rates.mean() + half), rel=1e-9)  # fmt: skip
    k_index = s.k.index(int(row["k"]))
    hits = np.asarray(units["hits"])[:, k_index] / np.asarray(units[TOKENS])
    half = stats.t.ppf(0.975, len(hits) - 1) * hits.std(ddof=1) / np.sqrt(len(hits))
    assert row["predicted_ci_high"] == pytest.approx((hits.mean() + half) ** row["N"], rel=1e-9)


def test_strata_intervals_are_the_documents_own_and_hold_their_points() -> None:
    """strata.csv from summaries with two stratum kinds: no point on or outside its interval, and a stratum's share
    of the tokens over equally long documents has Student's t interval of the documents' own shares."""
    from rankscale.statistics import STRATA_TOKENS, TOKENS
    from tests.test_table_headers import summaries_of

    summaries, replicates = summaries_of([(name, info, S, mu) for name, info, S, mu in default_like_models()],
                                         ["frequency"])  # fmt: skip
    settings = TableSettings(level=0.95, law_k=[1, 10], law_form="power_law", forms=None, refits=200, seed=0)
    strata = build_table("strata", summaries, {}, settings, replicates)
    assert not strata.empty and points_off_their_interval(strata) == [] and strata["ci_reliable"].all()
    assert strata["ci_low"].notna().mean() > 0.9
    s = summaries[0]
    units = replicates.units[s.key]
    shares = np.asarray(units[STRATA_TOKENS])[:, 0] / np.asarray(units[TOKENS])
    half = stats.t.ppf(0.975, len(shares) - 1) * shares.std(ddof=1) / np.sqrt(len(shares))
    row = strata[(strata["model"] == s.model) & (strata["stratum"] == s.strata_columns[0].label)].iloc[0]
    assert (row["share_ci_low"], row["share_ci_high"]) == pytest.approx(
        (shares.mean() - half, shares.mean() + half), rel=1e-9)  # fmt: skip


def default_like_models() -> list:
    """The default-shaped run's three sizes (`tests.test_table_headers.default_like`), as models."""
    from tests.test_table_headers import final

    return [final(name, "f", S, mu) for name, S, mu in [("a", 10**6, 3.0), ("b", 10**7, 2.6), ("c", 10**8, 2.2)]]


def test_cross_family_observed_value_has_metrics_csv_interval() -> None:
    """cross_family.csv's measured value of a family of one model: metrics.csv's interval of it, carried into the
    law's units (-log RBP_k: ends swapped), its point strictly inside."""
    from rankscale.metrics import METRICS
    from tests.test_table_headers import everything

    summaries, replicates = everything()
    settings = TableSettings(level=0.95, law_k=[1, 10], law_form="power_law", forms=None, refits=100, seed=0)
    metrics = build_table("metrics", summaries, {}, settings, replicates)
    fits = build_table("powerlaw_fits", summaries, {"metrics": metrics}, settings, replicates)
    cross = build_table("cross_family", summaries, {"metrics": metrics, "powerlaw_fits": fits}, settings, replicates)
    rows = cross[cross["observed_ci_low"].notna()]
    assert not rows.empty and points_off_their_interval(cross) == []
    for row in rows.itertuples():
        name = "ce" if row.metric == "ce" else "rbp"
        same = (metrics["model"] == row.model) & (metrics["dataset"] == row.dataset) & (metrics["metric"] == name)
        if name == "rbp":
            same &= metrics["k"] == row.k
        m = metrics[same].iloc[0]
        ends = sorted(METRICS[name].to_law(np.array([m["ci_low"], m["ci_high"]])))
        assert (row.observed_ci_low, row.observed_ci_high) == pytest.approx(tuple(ends), rel=1e-12)


def test_bca_acceleration_is_scale_free_down_to_tiny_rates() -> None:
    """BCa's acceleration does not depend on the statistic's units: the jackknife of a rate of long runs (values
    near 1e-120, where d^3 underflows) gives the same as at order 1, not 0 / 0."""
    from rankscale.bca import acceleration

    jackknife = np.random.default_rng(3).gamma(2.0, 1.0, 40)
    assert acceleration(jackknife * 1e-120) == pytest.approx(acceleration(jackknife), rel=1e-9)
    d = jackknife.mean() - jackknife
    assert acceleration(jackknife) == pytest.approx((d**3).sum() / (6 * (d**2).sum() ** 1.5), rel=1e-12)


def test_an_emergence_interval_left_out_says_why() -> None:
    """Where BCa finds no interval (here: no pair of consecutive hits in any replicate, so no Markov rate), the
    interval is empty and `ci_note` names it with BCa's reason; the other intervals of the row stay."""
    summaries, replicates = default_like()
    settings = TableSettings(level=0.95, law_k=[1, 10], law_form="power_law", forms=None, refits=200, seed=0)
    fits = build_table("powerlaw_fits", summaries, {"metrics": build_table("metrics", summaries, {}, settings,
                                                                            replicates)}, settings, replicates)  # fmt: skip
    from rankscale.statistics import PAIRS_PREV_HIT, Totals

    s = summaries[0]
    totals = replicates.totals[s.key]
    replicates.totals[s.key] = Totals({**totals, PAIRS_PREV_HIT.name: np.zeros_like(totals[PAIRS_PREV_HIT])})
    emergence = build_table("emergence", summaries, {"powerlaw_fits": fits}, settings, replicates)
    mine = emergence[(emergence["model"] == s.model) & (emergence["N"] > 1)]  # N = 1: the rate itself, no pairs
    assert len(mine) > 0
    assert mine["markov_ci_low"].isna().all() and mine["empirical_ci_low"].notna().all()
    assert mine["ci_note"].str.contains("markov: no interval, no finite replicate").all()
    others = emergence[emergence["model"] != s.model]
    assert others["markov_ci_low"].notna().all() and not others["ci_note"].str.contains("markov").any()


@pytest.mark.slow  # the smoke run: two minutes
def test_no_point_of_the_smoke_run_sits_on_or_outside_its_interval(smoke_run) -> None:
    """Every table of the smoke run (tiny models: near-perfect laws, constant metrics at large k): a quantity whose
    refits all lie on one side of it (R² of a near-perfect law) has no interval, never one stretched to reach it."""
    tables = sorted((smoke_run / "results" / "smoke" / "tables").glob("*.csv"))
    assert len(tables) > 20
    off = {path.name: found for path in tables if (found := points_off_their_interval(pd.read_csv(path)))}
    assert off == {}
    fits = pd.read_csv(smoke_run / "results" / "smoke" / "tables" / "powerlaw_fits.csv")
    assert fits["alpha_ci_low"].notna().mean() > 0.8  # the plain percentile interval everywhere else


@pytest.mark.slow  # the smoke run: two minutes
def test_the_smoke_runs_rank_tests_agree_with_their_intervals(smoke_run) -> None:
    """Every row of a finished run's rank_distribution_tests.csv: p < 0.05 exactly when the interval of mean_llr
    leaves out 0, and `better` is the side it lies on."""
    tests = pd.read_csv(smoke_run / "results" / "smoke" / "tables" / "rank_distribution_tests.csv")
    assert len(tests) > 0 and tests["p_value"].notna().all()
    assert rank_tests_off_their_interval(tests) == []


def test_a_law_quantity_off_its_replicates_has_no_interval() -> None:
    """`with_intervals`: inside its replicates' range, the plain percentile interval; on an end or outside (R² of
    a near-perfect law), none; replicates equal to the point but for rounding, the point; replicates constant at
    another value than the point, none (not the point)."""
    from rankscale.tables.base import with_intervals

    reps = np.linspace(0.9, 0.98, 101)
    assert with_intervals(0.95, reps, 0.95, "x") == pytest.approx({"x": 0.95, "x_ci_low": 0.902, "x_ci_high": 0.978})
    for off in (0.99, 0.902, 0.85):
        got = with_intervals(off, reps, 0.95, "x")
        assert math.isnan(got["x_ci_low"]) and math.isnan(got["x_ci_high"])
    rounding = 2.48 * (1 + 1e-15 * np.random.default_rng(0).standard_normal(100))
    assert with_intervals(2.48, rounding, 0.95, "x") == {"x": 2.48, "x_ci_low": 2.48, "x_ci_high": 2.48}
    assert math.isnan(with_intervals(0.7, np.full(100, 0.5), 0.95, "x")["x_ci_low"])


@pytest.mark.slow  # the smoke run: two minutes
def test_the_smoke_runs_ce_decomposition_has_intervals_holding_its_points(smoke_run) -> None:
    """CE's decomposition: the error entropy's jackknife over documents, confidence's Chao2 (the rank errors a sample
    missed, `rankscale.unseen_ranks`), self-alignment CE less both, their replicates recentred on them
    (`rankscale.decomposition_jackknife`). As plug-ins, biased 1-6 SDs, none of the three had an interval in any row;
    now error entropy has one wherever there are 20 effective documents (HumanEval's 34 here), confidence and
    self-alignment the replicates' SD with t (`bootstrap_se_t`), each holding its point; a row without one says it
    is biased under resampling, never an interval beside the point."""
    metrics = pd.read_csv(smoke_run / "results" / "smoke" / "tables" / "metrics.csv")
    rows = metrics[metrics["metric"].isin(["ee", "self_alignment", "confidence"])]
    has = rows["ci_low"].notna() & rows["ci_high"].notna()
    ee = rows[(rows["metric"] == "ee") & (rows["n_eff_documents"] >= 20)]
    assert len(ee) > 0 and has[ee.index].all()
    assert {"ee", "self_alignment", "confidence"} <= set(rows.loc[has, "metric"])
    unseen = rows[has & rows["metric"].isin(["self_alignment", "confidence"])]
    assert (unseen["ci_method"] == "bootstrap_se_t").all()
    held = rows[has]
    assert ((held["ci_low"] < held["value"]) & (held["value"] < held["ci_high"])).all()
    assert rows.loc[~has, "ci_note"].str.contains("biased under resampling").all()
