"""Few documents: Kish's effective number of documents, a lack-of-fit test that holds its level when the document
covariance is a bootstrap over few of them (Q and its null from the documents themselves; Hotelling's T^2 in place
of chi^2 above 30 effective documents), and intervals widened for them
(Hesterberg's expanded percentile).

Each is checked against an independent computation: Kish's number by hand, the T^2 p-value against draws of
z^T W^-1 z with W Wishart (the distribution it claims), the sign-flip p against every sign pattern, the expansion
against its closed form and the expanded percentile of a Normal mean against Student's t. The levels and coverages
these give on the whole path (documents -> bootstrap -> V -> Q, intervals) at pydoc's token counts are Monte Carlo
studies: benchmarks/few_documents.py (RESULTS.md)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankscale.bootstrap import expanded_level, expansion, interval
from rankscale.identity import OWN_SHA
from rankscale.laws.few_documents import Documents, few_documents_test, sign_flips
from rankscale.laws.random_effects import hotelling_p, lack_of_fit
from rankscale.lognormal import sample_discrete_lognormal
from rankscale.metrics import METRICS
from rankscale.rankfile import RankArrays
from rankscale.strata import StrataSettings
from rankscale.summary import (
    MODEL_COLUMNS,
    ModelInfo,
    Resampling,
    SummaryPaths,
    SummarySettings,
    kish_documents,
    load_replicates,
    load_unit_totals,
    summarize,
    write_summary,
)
from rankscale.tables import Replicates
from rankscale.tables.noise import Noise, covariance_df
from rankscale.windows import WindowSpec
from tests.conftest import benchmark_module


def few_documents_module():
    return benchmark_module("few_documents")


def test_kish_documents_by_hand() -> None:
    assert kish_documents(np.full(12, 40.0)) == pytest.approx(12.0)
    assert kish_documents(np.array([1000.0, 1.0, 1.0])) == pytest.approx(1002.0**2 / (1000.0**2 + 2.0))
    pydoc = np.array(few_documents_module().PYDOC, dtype=np.float64)
    assert kish_documents(pydoc) == pytest.approx(pydoc.sum() ** 2 / (pydoc**2).sum()) == pytest.approx(6.57, abs=0.01)
    assert math.isnan(kish_documents(np.zeros(3)))


def test_a_summary_counts_effective_documents_over_its_resampled_units() -> None:
    """Two token-file documents from one corpus document count as one unit; lengths 10, 10, 30 + 50 -> Kish 1.9."""
    doc = np.repeat(np.arange(4), [10, 10, 30, 50]).astype(np.uint32)
    pos = np.concatenate([np.arange(1, n + 1) for n in (10, 10, 30, 50)]).astype(np.uint32)
    rank = sample_discrete_lognormal(2.0, 1.5, 200, len(doc), seed=0).astype(np.uint32)
    arrays = RankArrays(rank, (-np.log(rank)).astype(np.float32), doc, pos, np.zeros(len(doc), np.uint32))
    meta = {"vocab_size": 200, "model": "m", "dataset": "d", "S": 10, "ties": "ge", OWN_SHA: "x"}
    settings = SummarySettings(4, [1], [1], [1, 2], [1], 20, 0, True, 10, StrataSettings([], {}, [1]))
    resampling = Resampling.for_dataset(np.array([0, 1, 2, 2]), 3, 20, 0, "d")  # documents 2 and 3: one unit
    info = ModelInfo("f", None, "m", True, None, "m")
    summary, _, _ = summarize(arrays, meta, settings, resampling, info, WindowSpec(64, None, None), None)
    assert summary.n_documents == 4
    assert summary.n_eff_documents == pytest.approx(100.0**2 / (10**2 + 10**2 + 80**2))
    row = summary.columns()
    assert list(row) == list(MODEL_COLUMNS) and row["n_eff_documents"] == summary.n_eff_documents


def test_hotelling_p_is_uniform_under_its_own_model() -> None:
    """z ~ N(0, S), W ~ Wishart(nu, S) / nu independent: P(T^2 >= z^T W^-1 z) is uniform (its rejections at 5% and
    10% within Monte Carlo error of 20,000 draws), while chi^2 rejects far more; as nu grows it becomes chi^2."""
    rng = np.random.default_rng(7)
    m, nu, draws = 4, 6, 20_000
    A = rng.standard_normal((m, m))
    S = A @ A.T + m * np.eye(m)
    root = np.linalg.cholesky(S)
    z = rng.standard_normal((draws, m)) @ root.T
    g = rng.standard_normal((draws, nu, m)) @ root.T
    W = np.einsum("bki,bkj->bij", g, g) / nu
    q = np.einsum("bi,bi->b", z, np.linalg.solve(W, z[..., None])[..., 0])
    p = np.array([hotelling_p(x, m, nu) for x in q])
    chi2 = np.array([hotelling_p(x, m) for x in q])
    se = math.sqrt(0.05 * 0.95 / draws)
    assert abs((p < 0.05).mean() - 0.05) < 4 * se and abs((p < 0.10).mean() - 0.10) < 4 * math.sqrt(0.09 / draws)
    assert (chi2 < 0.05).mean() > 0.30  # treating W as S: the level the lack-of-fit test had
    assert hotelling_p(9.0, 4, 1e9) == pytest.approx(stats.chi2.sf(9.0, 4), rel=1e-6)
    assert math.isnan(hotelling_p(9.0, 4, 2.9)) and not math.isnan(hotelling_p(9.0, 4, 3.1))  # nu - m + 1 > 0
    assert math.isnan(hotelling_p(1.0, 0, 10.0))


def test_lack_of_fit_is_hotellings_t2_of_the_residual_coordinates() -> None:
    """Q from the GLS residuals equals z^T (L^T V L)^-1 z with z = L^T y (L an orthonormal residual basis), so its
    reference is that of a T^2 of dimension M - p."""
    rng = np.random.default_rng(3)
    x = np.log(np.array([1e5, 3e5, 1e6, 3e6, 1e7, 3e7]))
    X = np.stack([np.ones(6), x], axis=1)
    A = rng.standard_normal((6, 6))
    V = A @ A.T / 6 + 0.1 * np.eye(6)
    y = X @ np.array([1.0, -0.05]) + rng.standard_normal(6) * 0.3
    found = lack_of_fit(X, y, V, documents_df=29.0)
    L = np.linalg.qr(X, mode="complete")[0][:, 2:]
    z = L.T @ y
    assert found.q == pytest.approx(float(z @ np.linalg.solve(L.T @ V @ L, z)), rel=1e-9)
    assert found.df == 4 and found.p == pytest.approx(stats.f.sf(found.q * 26 / (29 * 4), 4, 26), rel=1e-9)
    assert found.n_eff == 30.0
    assert lack_of_fit(X, y, V).p == pytest.approx(stats.chi2.sf(found.q, 4), rel=1e-9)


def test_noise_reads_the_fewest_effective_documents_of_its_rows() -> None:
    rows = pd.DataFrame({"model": ["a", "b"], "family": "f", "dataset": "d", "n_eff_documents": [6.6, 7.0]})
    assert Noise.of(rows, 10, None).documents_df == pytest.approx(5.6)
    assert Noise.of(rows.drop(columns="n_eff_documents"), 10, None).documents_df == math.inf
    assert covariance_df([float("nan"), 7.0]) == math.inf


def test_the_sign_flip_p_is_the_share_of_every_sign_pattern() -> None:
    """Nine units, m = 2: Q is the residual sum of squares |L^T y|^2, the Monte Carlo p of 40,000 random sign
    patterns matches the exact share of all 2^9 patterns whose Q* = |sum s_u e_u|^2 reaches it (brute force, e_u =
    b_u + w_u z), all signs +1 reproduce Q, and a law off by a trend the documents cannot explain is rejected;
    under 20 effective documents the tables' default calls it not testable (p NaN, Q kept)."""
    rng = np.random.default_rng(8)
    tokens = rng.integers(50, 2000, 9).astype(np.float64)
    shares = tokens / tokens.sum()
    L = np.linalg.qr(np.stack([np.ones(4), np.arange(4.0)], axis=1), mode="complete")[0][:, 2:]
    errors = rng.standard_normal((9, 4)) * shares[:, None]
    z_full = errors.sum(axis=0)
    influence = errors - shares[:, None] * z_full[None, :]
    y = z_full  # an exact law (log y = 0 + the documents' error)
    q, p = few_documents_test(L, y, Documents(influence, tokens), draws=40_000, min_documents=0.0)
    assert q == pytest.approx(float(((L.T @ y) ** 2).sum()), rel=1e-12)
    e = influence @ L + shares[:, None] * (L.T @ y)[None, :]
    patterns = np.array(np.meshgrid(*[[-1.0, 1.0]] * 9)).reshape(9, -1).T
    exact = np.array([float(((s[:, None] * e).sum(axis=0) ** 2).sum()) for s in patterns])
    assert exact[-1] == pytest.approx(q, rel=1e-9)  # all +1
    assert p == pytest.approx((exact >= q * (1 - 1e-12)).mean(), abs=0.006)
    ref = sign_flips(e, 10, np.random.SeedSequence(1))
    assert ref.shape == (10,) and np.all(ref > 0)
    bent = y + L @ np.array([40.0, -25.0]) * np.sqrt((influence**2).sum() / 9)
    assert few_documents_test(L, bent, Documents(influence, tokens), min_documents=0.0)[1] < 0.05
    q_default, p_default = few_documents_test(L, y, Documents(influence, tokens))
    assert q_default == q and math.isnan(p_default)  # n_eff under 20: not testable


def test_with_many_documents_the_test_from_the_documents_is_chi2() -> None:
    """400 equal Gaussian documents: their covariance is nearly sigma^2 I, so the sign-flip null of Q = |z|^2 is
    sigma^2 chi^2_4, and a Q at its 95% point gets p near 0.05."""
    rng = np.random.default_rng(4)
    a, mean = few_documents_module().weighted_documents(rng, np.full(400, 50.0), 6)
    L = np.linalg.qr(np.stack([np.ones(6), np.arange(6.0)], axis=1), mode="complete")[0][:, 2:]
    b = a @ L
    sigma2 = float(np.trace(b.T @ b)) / 4
    y = L @ np.full(4, np.sqrt(sigma2 * stats.chi2.ppf(0.95, 4) / 4))  # Q at sigma^2 chi^2's 95% point
    q, p = few_documents_test(L, y, Documents(a, np.full(400, 50.0)))
    assert q == pytest.approx(sigma2 * stats.chi2.ppf(0.95, 4)) and p == pytest.approx(0.05, abs=0.012)
    assert all(map(math.isnan, few_documents_test(L, y, Documents(a[:4], np.full(4, 50.0)))))  # untestable


def test_unit_influence_reproduces_the_bootstrap_spread(tmp_path) -> None:
    """A summary written and read back as the table jobs read it: each unit's influence on log CE and on
    -log RBP_1 (`Replicates.influence`) sums to 0 and its root sum of squares is the bootstrap's SD of them."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 400, 30)
    doc = np.repeat(np.arange(30), lengths).astype(np.uint32)
    pos = np.concatenate([np.arange(1, n + 1) for n in lengths]).astype(np.uint32)
    rank = sample_discrete_lognormal(1.0, 1.5, 200, len(doc), seed=1).astype(np.uint32)
    logprob = (-np.log(rank) - rng.exponential(0.5, len(doc))).astype(np.float32)
    arrays = RankArrays(rank, logprob, doc, pos, np.zeros(len(doc), np.uint32))
    meta = {"vocab_size": 200, "model": "m", "dataset": "d", "S": 10, "ties": "ge", OWN_SHA: "x"}
    settings = SummarySettings(4, [1], [1], [1, 2], [1], 20, 0, True, 10, StrataSettings([], {}, [1]))
    resampling = Resampling.for_dataset(np.arange(30), 30, 4000, 0, "d")
    info = ModelInfo("f", None, "m", True, None, "m")
    summary, hist, boot = summarize(arrays, meta, settings, resampling, info, WindowSpec(64, None, None), None)
    paths = SummaryPaths.beside(tmp_path / "d-x.json")
    summary = write_summary(summary, hist, boot, paths)
    replicates = Replicates([summary], [load_replicates(summary, paths)], [load_unit_totals(summary, paths)])
    for name, k in (("ce", None), ("rbp", 1)):
        a = replicates.influence("m", "d", name, k)
        assert a is not None and a.shape == (30,) and abs(a.sum()) < 1e-8
        spread = np.log(METRICS[name].to_law(replicates.at("m", "d", name, k))).std()
        assert np.sqrt((a**2).sum()) == pytest.approx(spread, rel=0.05)
    assert replicates.influence("m", "d", "ee") is None  # a histogram statistic: no unit sums


def test_the_expansion_is_hesterbergs_closed_form() -> None:
    """sqrt(n / (n - 1)) t_{n - 1} / z, vanishing as n grows; nothing where n_eff is unknown or at most 2."""
    factor = math.sqrt(6.6 / 5.6) * stats.t.ppf(0.975, 5.6) / stats.norm.ppf(0.975)
    assert expansion(6.6, 0.95) == pytest.approx(factor)
    assert expanded_level(0.95, 6.6) == pytest.approx(2 * stats.norm.cdf(factor * 1.959964) - 1, rel=1e-6)
    assert 0.95 < expanded_level(0.95, 1000.0) < expanded_level(0.95, 100.0) < 0.955
    assert expansion(math.inf, 0.95) == expansion(math.nan, 0.95) == expansion(2.0, 0.95) == 1.0
    assert expanded_level(0.9, math.nan) == 0.9


def test_the_expanded_percentile_of_a_normal_mean_is_students_t() -> None:
    """Replicates of the mean of 8 documents spread exactly as the bootstrap's Normal limit (the mid-quantiles of
    N(mean, s^2 (n - 1) / n^2): the plug-in variance): the expanded percentile interval at n_eff = 8 is Student's t
    interval of the 8 values, mean -/+ t_7 s / sqrt(8) (exact coverage for Normal documents), to the percentiles'
    interpolation; the plain percentile is 0.78 of its width (89% for Normal documents). An expansion on t_8, or
    without sqrt(n / (n - 1)), is 2.5% or 6.5% too narrow."""
    n = 8
    values = np.array([0.31, -1.2, 0.44, 2.1, -0.35, 0.9, -0.05, 1.3])
    mean, s = float(values.mean()), float(values.std(ddof=1))
    draws = 40_000
    reps = mean + s * math.sqrt(n - 1) / n * stats.norm.ppf((np.arange(draws) + 0.5) / draws)
    want = stats.t.interval(0.95, n - 1, loc=mean, scale=s / math.sqrt(n))
    low, high = interval(reps, 0.95, n_eff=float(n))
    assert (float(low), float(high)) == pytest.approx(want, abs=1e-3 * (want[1] - want[0]))
    plain = interval(reps, 0.95)
    assert (plain[1] - plain[0]) / (want[1] - want[0]) == pytest.approx(0.775, abs=0.005)


def test_noise_widens_a_laws_document_deviations_in_log_space() -> None:
    rows = pd.DataFrame({"model": ["a", "b"], "family": "f", "dataset": "d", "n_eff_documents": [6.6, 7.0]})
    noise = Noise.of(rows, 3, None)
    y = np.array([2.0, 1.0])
    reps = np.array([[2.2, 0.9], [1.8, 1.0], [0.0, 1.1]])
    wide = noise.expand(y, reps)
    factor = expansion(6.6, 0.95)
    np.testing.assert_allclose(np.log(wide[:2] / y), factor * np.log(reps[:2] / y), rtol=1e-12)
    assert wide[2, 0] == 0.0 and wide[2, 1] == pytest.approx(np.exp(factor * np.log(1.1)))
    assert Noise.of(rows.drop(columns="n_eff_documents"), 3, None).expand(y, reps) is reps


def test_the_tables_test_a_few_documents_law_from_its_documents() -> None:
    """powerlaw_fits.csv of a run of 29 effective documents (the table headers' default-shaped run): CE's `lof_q`
    is the residual sum of squares in log space and its p the sign flip's over each document's influence on log CE
    in closed form (s_u / S - n_u / N from the per-unit sums); without the per-unit sums, Hotelling's Q over the
    bootstrap's V."""
    from rankscale.statistics import LOGPROB_SUM, TOKENS
    from rankscale.tables import build_table
    from tests.test_table_headers import default_like, settings

    summaries, replicates = default_like()
    metrics = build_table("metrics", summaries, {}, settings("power_law"), replicates)
    fits = build_table("powerlaw_fits", summaries, {"metrics": metrics}, settings("power_law"), replicates)
    plain = Replicates(summaries, [replicates.totals[s.key] for s in summaries])
    hotelling = build_table("powerlaw_fits", summaries, {"metrics": metrics}, settings("power_law"), plain)
    row, before = (f[f["metric"] == "ce"].iloc[0] for f in (fits, hotelling))
    influence = np.stack([replicates.units[s.key][LOGPROB_SUM] / replicates.units[s.key][LOGPROB_SUM].sum()
                          - replicates.units[s.key][TOKENS] / replicates.units[s.key][TOKENS].sum()
                          for s in summaries], axis=1)  # fmt: skip
    ce = np.array([METRICS["ce"].compute(s.totals()) for s in summaries], dtype=np.float64)
    X = np.stack([np.ones(3), np.log([s.S for s in summaries])], axis=1)
    L = np.linalg.qr(X, mode="complete")[0][:, 2:]
    z = L.T @ np.log(ce)
    assert np.linalg.matrix_rank(influence @ L) == 1
    assert row["lof_q"] == pytest.approx(float(z @ z), rel=1e-9)  # the residual sum of squares in log space
    tokens = np.asarray(replicates.units[summaries[0].key][TOKENS], dtype=np.float64)
    assert kish_documents(tokens) > 20.0  # testable: its p is the sign flip's over these documents
    assert row["lof_p"] == few_documents_test(L, np.log(ce), Documents(influence, tokens))[1]
    assert 0.0 < row["lof_p"] <= 1.0 and row["lof_q"] != before["lof_q"]
    assert before["lof_p"] == pytest.approx(hotelling_p(before["lof_q"], 1, 28.0))
