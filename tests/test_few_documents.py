"""Few documents: Kish's effective number of documents, and a lack-of-fit test that holds its level when the document
covariance is a bootstrap over few of them (Hotelling's T^2 in place of chi^2).

Each is checked against an independent computation: Kish's number by hand, the T^2 p-value against draws of
z^T W^-1 z with W Wishart (the distribution it claims), and the whole path (documents -> bootstrap -> V -> Q) by
simulation at pydoc's token counts (benchmarks/few_documents.py records the full run)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankscale.identity import OWN_SHA
from rankscale.laws.random_effects import hotelling_p, lack_of_fit
from rankscale.lognormal import sample_discrete_lognormal
from rankscale.rankfile import RankArrays
from rankscale.strata import StrataSettings
from rankscale.summary import MODEL_COLUMNS, ModelInfo, Resampling, SummarySettings, kish_documents, summarize
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
    q, dof, p = lack_of_fit(X, y, V, documents_df=9.0)
    L = np.linalg.qr(X, mode="complete")[0][:, 2:]
    z = L.T @ y
    assert q == pytest.approx(float(z @ np.linalg.solve(L.T @ V @ L, z)), rel=1e-9)
    assert dof == 4 and p == pytest.approx(stats.f.sf(q * 6 / 36, 4, 6), rel=1e-9)
    assert lack_of_fit(X, y, V)[2] == pytest.approx(stats.chi2.sf(q, 4), rel=1e-9)


def test_noise_reads_the_fewest_effective_documents_of_its_rows() -> None:
    rows = pd.DataFrame({"model": ["a", "b"], "family": "f", "dataset": "d", "n_eff_documents": [6.6, 7.0]})
    assert Noise.of(rows, 10, None).documents_df == pytest.approx(5.6)
    assert Noise.of(rows.drop(columns="n_eff_documents"), 10, None).documents_df == math.inf
    assert covariance_df([float("nan"), 7.0]) == math.inf


def test_at_pydocs_counts_the_lack_of_fit_test_holds_its_level() -> None:
    """The workflow's path at pydoc's 27 documents (n_eff 6.6), no size scatter: chi^2 rejects too often, Hotelling's
    T^2 about 5% (120 simulations: 5% is 6 +/- 2.4; the full run is in benchmarks/RESULTS.md)."""
    module = few_documents_module()
    result = module.simulate(np.array(module.PYDOC), sims=120, replicates=300, seed=11)
    assert result.n_eff == pytest.approx(6.57, abs=0.01) and result.untestable == 0.0
    assert result.hotelling_rejects <= 10.0 < result.chi2_rejects, result
