"""The document-level paired bootstrap, and the tables built on it, against synthetic data with known truth.

Corpora whose documents differ (a document-level random effect on the hit rate) have tokens that are correlated
inside a document: the bootstrap over documents spreads a rate and a family's exponent as the documents' own
closed-form variances say (paired for the exponent), where resampling tokens would be several times too narrow.
How often its 95% intervals then cover is a Monte Carlo study: benchmarks/document_bootstrap_coverage.py
(RESULTS.md).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

from rankscale.bootstrap import (
    Resampling,
    interval,
    interval_mc_error,
    p_value,
    replicate_totals,
    resample_counts,
    spread_to_noise,
)
from rankscale.laws import FORMS, Points, PowerLaw, compare_forms, fit_power_law
from rankscale.plots.common import FigureData, FigureSettings
from rankscale.plots.extrapolation import fig_extrapolation
from rankscale.statistics import Totals
from rankscale.tables import Replicates
from rankscale.tables.extrapolation import TWO_SIZES, extrapolation_table
from rankscale.tables.laws import contrasts_table, fits_table
from rankscale.tables.metrics import metrics_table
from tests.conftest import benchmark_module
from tests.synthetic import summary

POWER_LAW = FORMS["power_law"]


def fit_power_law_replicates(size: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    return PowerLaw.fit_replicates(Points.of(size), y, None, 0)


SIZES = np.array([1e5, 4e5, 1.6e6, 6.4e6, 2.56e7])


def test_resampling_is_multinomial_seeded_and_paired() -> None:
    blocks = list(resample_counts(50, 130, 0, "fam", "data"))
    counts = np.concatenate(blocks)
    assert counts.shape == (130, 50) and (counts.sum(axis=1) == 50).all()
    assert np.array_equal(counts, np.concatenate(list(resample_counts(50, 130, 0, "fam", "data"))))
    assert not np.array_equal(counts, np.concatenate(list(resample_counts(50, 130, 0, "fam", "other"))))
    assert not np.array_equal(counts, np.concatenate(list(resample_counts(50, 130, 1, "fam", "data"))))
    assert abs(counts.mean() - 1.0) < 0.02  # each document drawn once per replicate on average
    # two models of one family, each computing its replicates alone, see the same resample
    stats_a, stats_b = {"x": np.arange(50.0)}, {"x": np.ones(50)}
    a = replicate_totals(stats_a, np.arange(50), 50, 130, 0, "fam", "data")["x"]
    b = replicate_totals(stats_b, np.arange(50), 50, 130, 0, "fam", "data")["x"]
    np.testing.assert_array_equal(a, counts @ np.arange(50.0))
    np.testing.assert_array_equal(b, np.full(130, 50.0))
    # a model that scored only some documents: the others weigh zero, the draw stays the family's
    partial = replicate_totals({"x": np.ones(3)}, np.array([4, 7, 9]), 50, 130, 0, "fam", "data")["x"]
    np.testing.assert_array_equal(partial, counts[:, [4, 7, 9]].sum(axis=1))


def test_interval_p_value_and_snr() -> None:
    values = np.arange(1, 1001, dtype=float)
    low, high = interval(values, 0.9)
    assert low == pytest.approx(50.95) and high == pytest.approx(950.05)
    low, high = interval(values, 0.9, estimate=990.0)  # an estimate outside is included
    assert high == 990.0
    low, high = interval(np.full((5, 2), np.nan), 0.95, estimate=np.array([1.0, 2.0]))
    assert np.isnan(low).all() and np.isnan(high).all()
    assert p_value(np.random.default_rng(0).normal(0, 1, 4000)) > 0.5
    assert p_value(np.random.default_rng(0).normal(3, 1, 4000)) < 0.01
    assert p_value(np.full(999, 2.0)) == pytest.approx(2 / 1000)
    assert spread_to_noise([1.0, 2.0, 4.0], [np.full(10, 1.0) + 0.01 * np.arange(10)] * 3) > 10


@pytest.mark.parametrize("replicates", [200, 1000])
def test_interval_mc_error_is_the_ends_own_spread(replicates: int) -> None:
    """Against brute force: draw B replicates 2000 times from a skewed law (lognormal: its upper end's error is the
    larger every time) and compare the SD of the upper percentile end, over the draws, with the mean estimate."""
    rng = np.random.default_rng(replicates)
    ends, estimates = [], []
    for _ in range(2000):
        values = rng.lognormal(0.0, 0.8, replicates)
        ends.append(interval(values, 0.95))
        estimates.append(interval_mc_error(values, 0.95))
    ends_array = np.array(ends)
    truth = ends_array[:, 1].std() / (ends_array[:, 1] - ends_array[:, 0]).mean()
    assert np.mean(estimates) == pytest.approx(truth, rel=0.1)
    assert 0.14 < truth < 0.18 if replicates == 200 else 0.06 < truth < 0.08  # 200 replicates: ~a sixth of a width
    assert math.isnan(interval_mc_error(np.ones(50), 0.95)) and math.isnan(interval_mc_error(np.array([1.0]), 0.95))


def simulate_documents(rng: np.random.Generator, p: np.ndarray, documents: int, tokens: int,
                       effect: float) -> np.ndarray:  # fmt: skip
    """Hits per document (rows) and model (columns): document d has hit rate p * (1 + u_d), u_d uniform
    (benchmarks/document_bootstrap_coverage.py's corpora)."""
    return benchmark_module("document_bootstrap_coverage").simulate_documents(rng, p, documents, tokens, effect)


def test_the_document_bootstrap_spreads_a_rate_as_its_documents_do() -> None:
    """120 documents of 40 tokens, hit rates 0.3 (1 + u_d): over 4000 replicates the rate's variance is the
    multinomial draw's over documents, n var(h_d) / N^2 (0.5% off here; the MC error of a variance of 4000 is
    2.2%), which is 2.6 times the binomial p (1 - p) / N a token bootstrap gives."""
    rng = np.random.default_rng(123)
    documents, tokens = 120, 40
    hits = simulate_documents(rng, np.array([0.3]), documents, tokens, 0.6)[:, 0]
    n = np.full(documents, tokens)
    reps = replicate_totals({"n": n, "hits": hits}, np.arange(documents), documents, 4000, 0, "doc")
    total = documents * tokens
    closed = documents * float(hits.var()) / total**2
    assert float(np.var(reps["hits"] / reps["n"])) == pytest.approx(closed, rel=0.06)
    p = hits.sum() / total
    assert closed > 2.0 * p * (1 - p) / total


def test_the_paired_document_bootstrap_spreads_alpha_as_the_documents_influence_does() -> None:
    """Five sizes scored on the same 150 documents (-log RBP = C S^-alpha for the population, a shared document
    effect): over 4000 paired replicates the refitted alpha's variance is the delta method's over documents,
    sum_d (c^T a_d)^2 with a_dm = (h_dm - p_m n_d) / (N p_m log p_m) each document's influence on log(-log RBP_m)
    and c the OLS slope's row (0.4% off here). Drawing each size's documents on their own would give
    sum_m c_m^2 sum_d a_dm^2, 2.3 times as much; a token bootstrap 0.27 of it."""
    rng = np.random.default_rng(2)
    alpha, c, documents, tokens = 0.15, 4.0, 150, 80
    hits = simulate_documents(rng, np.exp(-c * SIZES ** (-alpha)), documents, tokens, 0.35)
    n = np.full(documents, tokens)
    reps = replicate_totals({"n": n, "hits": hits}, np.arange(documents), documents, 4000, 0, "doc")
    refitted = fit_power_law_replicates(SIZES, -np.log(reps["hits"] / reps["n"][:, None]))["alpha"]
    total = documents * tokens
    p = hits.sum(axis=0) / total
    influence = (hits - p[None, :] * n[:, None]) / (total * p * np.log(p))[None, :]
    slope = np.linalg.pinv(np.stack([np.ones(len(SIZES)), np.log(SIZES)], axis=1))[1]
    paired = float(((influence @ slope) ** 2).sum())
    assert float(np.var(refitted)) == pytest.approx(paired, rel=0.06)
    assert float((slope**2 * (influence**2).sum(axis=0)).sum()) > 2.0 * paired
    assert float((slope**2 * p * (1 - p) / total / (p * np.log(p)) ** 2).sum()) < 0.5 * paired


def histogram_statistics(size: float) -> dict[str, float]:
    """Rank-histogram statistics a summary carries besides its sums (error entropy, the lognormal's laws)."""
    return {
        "ee": 4.0 * size**-0.01,
        "self_alignment": 0.3 * size**-0.1,
        "confidence": 0.2 * size**-0.1,
        "ee_lognormal": 4.5 * size**-0.02,
        "neg_log_p1_lognormal": 3.0 * size**-0.05,
    }


def synthetic_family(rbp: dict[int, np.ndarray], ce: np.ndarray, replicates: int = 8, noise: float = 0.0):
    """Summaries and replicate totals of a family whose metrics are exactly `rbp[k]` and `ce` per size."""
    ks = sorted(rbp)
    n = 10**6
    summaries, totals = [], []
    rng = np.random.default_rng(0)
    for m, size in enumerate(SIZES):
        hits = [rbp[k][m] * n for k in ks]
        sums = {"n": n, "sum_logprob": -ce[m] * n, "hits": hits}
        summaries.append(summary(f"m{m}", int(size), sums, ks, histogram=histogram_statistics(size)))
        jitter = 1 + noise * rng.normal(size=(replicates, 1))
        totals.append(
            Totals(
                {
                    "n": np.full(replicates, float(n)),
                    "sum_logprob": np.full(replicates, -ce[m] * n) * jitter[:, 0],
                    "hits": np.tile(hits, (replicates, 1)) * np.minimum(jitter, 1 / max(rbp[k][m] for k in ks)),
                    **{name: np.full(replicates, v) * jitter[:, 0] for name, v in histogram_statistics(size).items()},
                }
            )
        )
    return summaries, Replicates(summaries, totals)


def test_extrapolation_is_exact_on_noise_free_laws() -> None:
    rbp = {1: np.exp(-3.0 * SIZES**-0.1), 10: np.exp(-1.5 * SIZES**-0.2)}
    ce = 7.0 * SIZES**-0.05
    summaries, replicates = synthetic_family(rbp, ce)
    metrics = metrics_table(summaries, replicates, 0.95)
    table = extrapolation_table(metrics, replicates, [1, 10], 0.95, POWER_LAW, 0, 0)
    assert set(table["n_fit"]) == {3, 4}  # all but the largest, and all but the two largest (5 sizes)
    assert len(table) == 3 * (1 + 2)  # 3 quantities x (1 + 2 held-out sizes)
    np.testing.assert_allclose(table["predicted"], table["observed"], rtol=1e-9)
    assert (table["rel_error"].abs() < 1e-9).all() and table["covered"].all()
    largest = table[(table["metric"] == "ce") & (table["n_fit"] == 4)].iloc[0]
    assert largest["held_out_model"] == "m4" and largest["observed"] == pytest.approx(ce[-1])


def test_extrapolation_figure_draws_when_no_size_can_be_held_out(tmp_path: Path) -> None:
    """Two sizes leave nothing to fit on once one is held out: the table says so in a note, the figure too."""
    rbp = {1: np.exp(-3.0 * SIZES**-0.1)}
    ce = 7.0 * SIZES**-0.05
    summaries, replicates = synthetic_family(rbp, ce)
    two = [s for s in summaries if s.model in ("m0", "m1")]
    metrics = metrics_table(two, replicates, 0.95)
    table = extrapolation_table(metrics, replicates, [1], 0.95, POWER_LAW, 0, 0)
    assert list(table["note"]) == [TWO_SIZES] and "predicted" not in table
    png = tmp_path / "fig9.png"
    data = FigureData(
        tables={"extrapolation": table},
        datasets=["d"],
        models=["m0", "m1"],
        form=None,
        level=None,
        refits=None,
        seed=None,
        replicates=None,
    )
    fig_extrapolation(data, FigureSettings(), png)
    assert png.stat().st_size > 0 and png.with_suffix(".pdf").stat().st_size > 0


def test_fit_intervals_contrasts_and_snr_on_a_noisy_family() -> None:
    """CE and -log RBP_1 with the same exponent: the contrast's interval holds 0; at k = 10 it does not."""
    rbp = {1: np.exp(-3.0 * SIZES**-0.05), 10: np.exp(-1.5 * SIZES**-0.3)}
    ce = 7.0 * SIZES**-0.05
    summaries, replicates = synthetic_family(rbp, ce, replicates=400, noise=0.002)
    metrics = metrics_table(summaries, replicates, 0.95)
    assert ((metrics["ci_low"] <= metrics["value"]) & (metrics["value"] <= metrics["ci_high"])).all()
    fits = fits_table(metrics, POWER_LAW, replicates, 0.95, 0, 0)
    assert ((fits["alpha_ci_low"] <= fits["alpha"]) & (fits["alpha"] <= fits["alpha_ci_high"])).all()
    assert (fits["snr"] > 3).all()  # sizes far apart relative to the jitter
    noisier = fits_table(metrics, POWER_LAW, synthetic_family(rbp, ce, replicates=400, noise=0.02)[1], 0.95, 0, 0)
    ce_rows = fits["metric"] == "ce"
    assert noisier["snr"][ce_rows].item() == pytest.approx(
        fits["snr"][ce_rows].item() / 10, rel=0.1
    )  # ten times the noise
    contrasts = contrasts_table(metrics, fits, replicates, 0.95, POWER_LAW, 0, 0).set_index("k")
    assert contrasts.loc[1, "difference"] == pytest.approx(0.0, abs=1e-9)
    assert contrasts.loc[1, "ci_low"] <= 0 <= contrasts.loc[1, "ci_high"] and contrasts.loc[1, "p_value"] > 0.05
    assert contrasts.loc[10, "difference"] == pytest.approx(0.25, abs=1e-9) and contrasts.loc[10, "p_value"] < 0.01


def test_form_comparison_picks_the_form_the_data_have() -> None:
    rng = np.random.default_rng(0)
    sizes = np.geomspace(2e4, 3e6, 6)
    noise = np.exp(rng.normal(0, 0.003, sizes.size))
    with_floor = (0.5 + 30 * sizes**-0.3) * noise
    without = 3.0 * sizes**-0.1 * noise
    both = [FORMS["power_law"], FORMS["offset_power_law"]]
    pick = {
        name: next(r["form"] for r in compare_forms(Points.of(sizes), y, both) if r["preferred"])
        for name, y in (("floor", with_floor), ("pure", without))
    }
    assert pick == {"floor": "offset_power_law", "pure": "power_law"}
    floor = next(r for r in compare_forms(Points.of(sizes), with_floor, [FORMS["offset_power_law"]]))
    assert floor["E"] == pytest.approx(0.5, rel=0.1) and floor["alpha"] == pytest.approx(0.3, rel=0.1)
    # three sizes cannot support a three-parameter law plus its noise: the simpler one wins
    rows = compare_forms(Points.of(sizes[:3]), with_floor[:3], both)
    assert [r["preferred"] for r in rows] == [True, False] and math.isinf(rows[1]["aicc"])


def test_replicate_fits_match_one_at_a_time_fits() -> None:
    rng = np.random.default_rng(1)
    y = 2.0 * SIZES**-0.2 * np.exp(rng.normal(0, 0.05, (30, SIZES.size)))
    y[3, 2] = 0.0  # an unfittable replicate
    many = fit_power_law_replicates(SIZES, y)
    assert np.isnan(many["alpha"][3]) and np.isnan(many["r2"][3])
    for b in (0, 7, 29):
        one = fit_power_law(SIZES, y[b])
        assert many["alpha"][b] == pytest.approx(one.alpha, abs=1e-12)
        assert many["C"][b] == pytest.approx(one.C, rel=1e-12)
        assert many["r2"][b] == pytest.approx(one.r2, abs=1e-12)


def test_metrics_table_intervals_are_per_k() -> None:
    rbp = {1: np.exp(-3.0 * SIZES**-0.1), 10: np.exp(-1.5 * SIZES**-0.2)}
    summaries, replicates = synthetic_family(rbp, 7.0 * SIZES**-0.05, replicates=200, noise=0.01)
    metrics = metrics_table(summaries, replicates, 0.9)
    row = metrics[(metrics["model"] == "m0") & (metrics["k"] == 10)].iloc[0]
    # no unit totals loaded: the bias-corrected percentile interval (BC: BCa with no acceleration), by hand
    reps = replicates.at("m0", "d", "rbp", 10)
    z0 = special.ndtri(np.mean(reps < row["value"]) + 0.5 * np.mean(reps == row["value"]))
    low, high = np.quantile(reps, special.ndtr(2 * z0 + special.ndtri([0.05, 0.95])))
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(float(low)), pytest.approx(float(high)))
    assert row["ci_method"] == "bc" and row["ci_low"] < row["value"] < row["ci_high"]
    assert isinstance(metrics, pd.DataFrame) and {"ci_low", "ci_high"} <= set(metrics.columns)


def test_resampling_refuses_documents_outside_the_corpus() -> None:
    """The one resampling type (summaries and trajectories alike) checks a token file's documents against its
    corpus: a unit past the corpus would draw a document no other model has, and pairing would silently break."""
    ok = Resampling.for_dataset(np.array([0, 2, 4]), 5, 10, 0, "d")
    assert ok.units.tolist() == [0, 2, 4] and ok.units.dtype == np.int64 and ok.n_units == 5
    for units in ([0, 5], [-1, 2]):
        with pytest.raises(ValueError, match="dataset d: .* outside its corpus of 5"):
            Resampling.for_dataset(np.array(units), 5, 10, 0, "d")


def test_a_law_of_a_statistic_some_model_has_no_interval_of_has_none() -> None:
    """One model's error-entropy replicates all sit 10 SDs above its point (biased under resampling): metrics.csv
    gives that model's ee no interval, and so powerlaw_fits.csv gives the ee law none (every ``*_ci_*`` and
    ``ci_mc_error`` empty, ``ci_note`` naming the model), nor exponent_contrasts.csv its contrasts with ee; the laws
    of CE and of the other histogram statistics keep theirs."""
    rbp = {1: np.exp(-3.0 * SIZES**-0.05)}
    ce = 7.0 * SIZES**-0.05
    summaries, replicates = synthetic_family(rbp, ce, replicates=400, noise=0.002)
    fair = fits_table(metrics_table(summaries, replicates, 0.95), POWER_LAW, replicates, 0.95, 0, 0).set_index("metric")
    assert not fair.loc["ee", "ci_note"] and fair.loc["ee", "alpha_ci_low"] < fair.loc["ee", "alpha_ci_high"]
    totals = [replicates.totals[s.key] for s in summaries]
    biased = Totals({**totals[2], "ee": totals[2]["ee"] * 1.02})  # 10 SDs of 0.002 above its point
    replicates = Replicates(summaries, [biased if i == 2 else t for i, t in enumerate(totals)])
    metrics = metrics_table(summaries, replicates, 0.95)
    ee = metrics[metrics["metric"].eq("ee")].set_index("model")
    assert np.isnan(ee.loc["m2", "ci_low"]) and np.isfinite(ee.drop("m2")["ci_low"]).all()
    fits = fits_table(metrics, POWER_LAW, replicates, 0.95, 0, 0).set_index("metric")
    row = fits.loc["ee"]
    assert "m2" in row["ci_note"] and "1 of 5 models" in row["ci_note"]
    assert all(np.isnan(row[c]) for c in fits.columns if "_ci_" in c or c == "ci_mc_error")
    assert np.isfinite(row["alpha"])  # the law itself is still fitted
    for other in ("ce", "ee_lognormal", "self_alignment"):
        assert not fits.loc[other, "ci_note"] and np.isfinite(fits.loc[other, "alpha_ci_low"])
    contrasts = contrasts_table(metrics, fits.reset_index(), replicates, 0.95, POWER_LAW, 0, 0)
    with_ee = contrasts[contrasts["metric"].eq("ee")]
    assert len(with_ee) and with_ee["ci_low"].isna().all() and with_ee["p_value"].isna().all()
    assert with_ee["note"].str.contains("m2").all()
    assert contrasts[contrasts["metric"].ne("ee")]["ci_low"].notna().all()
