"""Fits at a bound are marked, never reported as numbers.

A model that puts most of its rank mass at rank 1 drives the discrete lognormal's maximum-likelihood fit to
its optimizer's bound (mu -> -inf, sigma growing: the fit runs towards a power law), and the alternatives'
scale parameters with it. Where the search stopped is not an estimate: the fits say which parameters sit at
a bound, the tables show no value for them (with a note), the trends leave such models out and the figures
say what they did not draw. A regular lognormal is recovered and not marked.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from rankscale.bootstrap import resample_counts
from rankscale.conjecture import (
    decomposition,
    distribution_replicates,
    distribution_statistics,
    error_entropy,
    lognormal_rbp_name,
)
from rankscale.identity import OWN_SHA
from rankscale.laws import FORMS
from rankscale.lognormal import _nll_and_gradient, fit_lognormal, sample_discrete_lognormal
from rankscale.plots import lognormal as lognormal_figures
from rankscale.plots.common import FigureData, FigureSettings, save
from rankscale.plots.entries import lognormal as lognormal_entries
from rankscale.rankdist import FAMILIES, SCALE_BOUNDS, ZIPF_BOUNDS, fit_family
from rankscale.rankfile import RankArrays
from rankscale.statistics import Totals, rank_histogram
from rankscale.strata import StrataSettings
from rankscale.summary import ModelInfo, Resampling, Summary, SummarySettings, summarize, unit_totals
from rankscale.tables import Replicates, TableSettings, build_table, read_table
from rankscale.tables.distribution import NOT_IDENTIFIED
from rankscale.windows import WindowSpec

VOCAB = 5000
DOCUMENTS, PER_DOCUMENT = 100, 200
TOKENS = DOCUMENTS * PER_DOCUMENT
REPLICATES = 40
LAW_K = [1, 10]
NO_STRATA = StrataSettings([], {}, LAW_K)  # these tests are of the rank distribution


def spike_and_tail(p1: float, exponent: float, n: int, vocab: int = VOCAB) -> np.ndarray:
    """Exact counts[r], r = 0..|V|: a share p1 of n at rank 1, the rest on 2..|V| as r^-exponent (floored;
    rank 1 takes the remainder, so the counts sum to n)."""
    r = np.arange(2, vocab + 1, dtype=np.float64)
    tail = r**-exponent
    counts = np.zeros(vocab + 1, dtype=np.int64)
    counts[2:] = np.floor((1 - p1) * n * tail / tail.sum())
    counts[1] = n - counts[2:].sum()
    return counts


def zipf_counts(a: float, n: int, vocab: int = VOCAB) -> np.ndarray:
    """Exact counts[r] of a truncated Zipf P(R = r) ∝ r^-a on 1..|V| (rounded to the nearest integer)."""
    p = np.arange(1, vocab + 1, dtype=np.float64) ** -a
    counts = np.zeros(vocab + 1, dtype=np.int64)
    counts[1:] = np.rint(n * p / p.sum())
    return counts


def zipf_mle(hist: np.ndarray) -> float:
    """The Zipf exponent maximising the likelihood of `hist`, by brute force on a fine grid (no optimizer)."""
    r = np.nonzero(hist)[0]
    c = hist[r].astype(np.float64)
    log_r = np.log(np.arange(1, len(hist)))
    grid = np.arange(1.0, 6.0, 1e-4)
    log_z = np.logaddexp.reduce(-grid[:, None] * log_r[None, :], axis=1)
    loglik = -grid * (c @ np.log(r)) - c.sum() * log_z
    return float(grid[np.argmax(loglik)])


# (a) a regular lognormal


def test_a_regular_lognormal_is_recovered_and_not_marked() -> None:
    hist = rank_histogram(sample_discrete_lognormal(2.0, 1.5, VOCAB, 200_000, seed=7), VOCAB)
    fit = fit_lognormal(hist, truncate=True)
    assert fit.mu == pytest.approx(2.0, abs=0.05) and fit.sigma == pytest.approx(1.5, abs=0.05)
    assert fit.at_bound == () and fit.bound_note() == ""
    stats = distribution_statistics(hist.astype(np.float64), -np.log1p(hist.astype(np.float64)), LAW_K, True)
    assert stats.note == "" and stats.mu == fit.mu and math.isfinite(stats.ee_lognormal)
    for name in ["lognormal", *FAMILIES]:  # every family fits inside its box: nothing is marked
        assert fit_family(name, hist, truncate=True).at_bound == (), name


# (b) ranks mostly at 1: the lognormal and the two-parameter alternatives run to their bounds


@pytest.fixture(scope="module")
def spike() -> np.ndarray:
    return spike_and_tail(0.95, 1.3, 200_000)


def test_mass_at_rank_one_runs_the_lognormal_to_its_bound(spike: np.ndarray) -> None:
    assert spike[1] / spike.sum() == pytest.approx(0.955, abs=0.005) and np.count_nonzero(spike) > 300
    fit = fit_lognormal(spike, truncate=True)
    assert fit.at_bound == ("mu",) and fit.mu == -50.0
    assert "mu at its lower bound -50" in fit.bound_note()
    # not a result: past the bound the likelihood keeps improving, along mu / sigma^2 held at the fit's value
    r = np.nonzero(spike)[0]
    c = spike[r].astype(np.float64)
    slope = fit.mu / fit.sigma**2
    farther = [
        _nll_and_gradient(np.array([m, 0.5 * math.log(m / slope)]), r, c, VOCAB, True)[0] for m in (-500.0, -5000.0)
    ]
    assert farther[0] < fit.nll_per_token - 1e-3 and farther[1] < farther[0]


def test_a_fit_at_a_bound_gives_no_numbers_and_says_why(spike: np.ndarray) -> None:
    """distribution_statistics: the fit and everything derived from it NaN, with a note; the measured
    quantities stay; the bootstrap replicates of the fit are NaN too (no one-step refit from a bound)."""
    counts = spike.astype(np.float64)
    logprob_sums = -0.5 * counts * np.log(np.arange(VOCAB + 1) + 1.0)
    stats = distribution_statistics(counts, logprob_sums, LAW_K, truncate=True)
    derived = ["mu", "sigma", "ee_lognormal", "neg_log_p1_lognormal", "ce_appendix_b", "neg_log_p1_appendix_b"]
    derived += [lognormal_rbp_name(k) for k in LAW_K]
    values = stats.values()
    assert all(math.isnan(values[name]) for name in derived)
    assert "mu at its lower bound -50" in stats.note and "power-law limit" in stats.note
    assert (stats.ee, stats.ee_mm) == error_entropy(counts)
    assert (stats.self_alignment, stats.confidence) == decomposition(counts, logprob_sums)[1:]
    assert stats.ranks_seen == np.count_nonzero(spike)
    # replicates: documents of 200 tokens each, cut from the same ranks
    ranks = np.repeat(np.arange(VOCAB + 1), spike)
    row = np.random.default_rng(0).permutation(ranks.size) % 1000
    by_row = sparse.csr_matrix((np.ones(ranks.size), (ranks, row)), shape=(VOCAB + 1, 1000))
    logprobs = sparse.csr_matrix((-0.5 * np.log(ranks + 1.0), (ranks, row)), shape=(VOCAB + 1, 1000))
    blocks = [b.astype(np.float64) for b in resample_counts(1000, 20, 0, "f", "d")]
    reps = distribution_replicates(by_row, logprobs, blocks, stats, LAW_K, True)
    assert set(reps) == set(values)
    assert all(np.isnan(reps[name]).all() for name in derived)
    assert np.isfinite(reps["ee"]).all() and np.std(reps["ee"]) > 0


def test_alternatives_that_run_off_are_marked_and_zipf_is_not(spike: np.ndarray) -> None:
    """The stretched exponential (lam -> 0) and the log-logistic (s -> 0, a likelihood flat all the way there)
    run to their power-law limit; the one-parameter Zipf stays inside its bounds at its maximum likelihood."""
    fits = {name: fit_family(name, spike, truncate=True) for name in ["lognormal", *FAMILIES]}
    assert fits["lognormal"].at_bound == ("mu",)
    assert fits["stretched_exp"].at_bound == ("lam",)
    assert fits["stretched_exp"].params[0] == pytest.approx(math.exp(SCALE_BOUNDS[0]), rel=1e-5)
    assert fits["loglogistic"].at_bound == ("s",)
    assert fits["loglogistic"].params[0] < 1e-5  # (where on the flat stretch the search stopped does not matter)
    assert fits["zipf"].at_bound == ()
    assert fits["zipf"].params[0] == pytest.approx(zipf_mle(spike), abs=2e-4)
    # the log-logistic's limit is the lognormal's limit too (a binned power law): the bounded lognormal is
    # behind it, which the unbounded fits reported as a win of the log-logistic (Vuong z << 0)
    assert fits["loglogistic"].loglik_per_token > fits["lognormal"].loglik_per_token


def test_zipf_recovers_a_planted_exponent_and_is_marked_at_its_own_bound() -> None:
    planted = zipf_counts(4.0, 1_000_000)  # 92% of the mass at rank 1
    assert planted[1] / planted.sum() > 0.9
    fit = fit_family("zipf", planted, truncate=True)
    assert fit.at_bound == () and fit.params[0] == pytest.approx(4.0, abs=0.02)
    uniform = np.r_[0, np.full(VOCAB, 40)]  # no preference for small ranks: a -> 0, below the box
    flat = fit_family("zipf", uniform, truncate=True)
    assert flat.at_bound == ("a",) and flat.params[0] == pytest.approx(ZIPF_BOUNDS[0], abs=1e-5)


# (c) and (d): summaries of synthetic rank arrays, the tables built from them, the figures drawn from the tables

MODELS: dict[str, tuple[str, int, str]] = {  # model: (family, S, ranks)
    "f1": ("f", 10**6, "spike"),
    "f2": ("f", 10**7, "lognormal 3.0"),
    "f3": ("f", 10**8, "lognormal 2.0"),
    "g1": ("g", 10**7, "lognormal 2.5"),
    "h1": ("h", 10**6, "spike"),
    "h2": ("h", 10**7, "lognormal 2.5"),
    "d1": ("d", 10**6, "spike"),
    "d2": ("d", 10**7, "spike 0.97"),
}


def ranks_of(kind: str, seed: int) -> np.ndarray:
    """Per scored token its rank, shuffled: exact spike-and-tail counts, or draws of a discrete lognormal."""
    if kind.startswith("spike"):
        p1 = float(kind.split()[1]) if " " in kind else 0.95
        ranks = np.repeat(np.arange(VOCAB + 1), spike_and_tail(p1, 1.3, TOKENS))
        return np.random.default_rng(seed).permutation(ranks)
    return sample_discrete_lognormal(float(kind.split()[1]), 2.0, VOCAB, TOKENS, seed=seed)


@pytest.fixture(scope="module")
def computed() -> dict[str, tuple[Summary, np.ndarray, Totals, Totals]]:
    """Every model of MODELS summarised as the workflow does (rank tests, replicates): summary, histogram, totals."""
    settings = SummarySettings(4, LAW_K, [1], [1, 2], LAW_K, REPLICATES, 0, True, REPLICATES, NO_STRATA)
    doc = np.repeat(np.arange(DOCUMENTS), PER_DOCUMENT).astype(np.uint32)
    pos = np.tile(np.arange(1, PER_DOCUMENT + 1), DOCUMENTS).astype(np.uint32)
    out = {}
    for i, (model, (family, size, kind)) in enumerate(MODELS.items()):
        rank = ranks_of(kind, i).astype(np.uint32)
        arrays = RankArrays(rank, (-np.log(rank) - 0.05).astype(np.float32), doc, pos, np.zeros(TOKENS, np.uint32))
        meta = {"vocab_size": VOCAB, "model": model, "dataset": "d", "S": size, "ties": "ge", OWN_SHA: model}
        resampling = Resampling(np.arange(DOCUMENTS), DOCUMENTS, REPLICATES, 0, "d")
        info = ModelInfo(family, None, model, True, None, model)
        summary, hist, boot = summarize(arrays, meta, settings, resampling, info, WindowSpec(2048, None, None), None)
        totals = Totals({name[4:]: value for name, value in boot.items() if name.startswith("rep_")})
        # through its JSON form, as read back; the documents' own sums too (the rank tests' t by documents)
        out[model] = (Summary.from_json(summary.to_json()), hist, totals, unit_totals(boot))
    return out


FIGURE_TABLES = ["metrics", "powerlaw_fits", "exponent_contrasts", "lognormal_fits", "conjecture",
                 "rank_distribution_tests", "lognormal_trends"]  # fmt: skip


def tables_of(computed: dict[str, tuple[Summary, np.ndarray, Totals, Totals]], models: list[str], tmp: Path) -> dict[str, Any]:
    """The tables the lognormal figures read, built from the models' summaries, written and read back as CSV."""
    summaries = [computed[m][0] for m in models]
    replicates = Replicates(summaries, [computed[m][2] for m in models], [computed[m][3] for m in models])
    settings = TableSettings(level=0.95, law_k=LAW_K, law_form="power_law", forms=None, refits=20, seed=0)
    tables: dict[str, pd.DataFrame] = {}
    for name in FIGURE_TABLES:
        path = tmp / f"{name}.csv"
        build_table(name, summaries, tables, settings, replicates).to_csv(path, index=False)
        tables[name] = read_table(path)
    return {"tables": tables, "replicates": replicates, "hists": {(m, "d"): computed[m][1] for m in models}}


def test_tables_show_no_numbers_for_fits_at_a_bound(computed, tmp_path) -> None:
    got = tables_of(computed, ["f1", "f2", "f3", "g1", "h1", "h2"], tmp_path)["tables"]
    at_bound, regular = {"f1", "h1"}, {"f2", "f3", "g1", "h2"}
    fits = got["lognormal_fits"].set_index("model")
    assert fits.loc[sorted(at_bound), ["mu", "sigma", "mu_over_sigma"]].isna().all().all()
    assert fits.loc[sorted(at_bound), "note"].str.contains("mu at its lower bound -50").all()
    assert np.isfinite(fits.loc[sorted(regular), ["mu", "sigma", "mu_over_sigma"]].to_numpy(float)).all()
    assert fits.loc[sorted(regular), "note"].isna().all()

    conjecture = got["conjecture"].set_index("model")
    derived = [f"{q}{end}" for q in ("mu", "sigma", "ee_lognormal", "neg_log_p1_lognormal", "neg_log_rbp1_lognormal",
                                     "ce_appendix_b") for end in ("", "_ci_low", "_ci_high")]  # fmt: skip
    assert conjecture.loc["f1", derived].isna().all()
    assert "mu at its lower bound -50" in conjecture.loc["f1", "note"]
    # the statistics of the histogram itself stand; their intervals are BCa or none, with the reason (ci_note)
    assert np.isfinite(conjecture.loc["f1", ["ee", "self_alignment", "ce", "ce_ci_low", "ce_ci_high"]].to_numpy(float)).all()
    low, high = conjecture.loc["f1", ["ee_ci_low", "ee_ci_high"]].to_numpy(float)
    assert (np.isnan(low) and np.isnan(high)) or low <= conjecture.loc["f1", "ee"] <= high  # none, or around it
    points = [d for d in derived if not d.endswith(("_ci_low", "_ci_high"))]
    assert np.isfinite(conjecture.loc["f2", points].to_numpy(float)).all()
    for q in points:  # each interval BCa or none (a statistic biased under resampling), never one beside its point
        low, high = conjecture.loc["f2", [f"{q}_ci_low", f"{q}_ci_high"]].to_numpy(float)
        assert (np.isnan(low) and np.isnan(high)) or low <= conjecture.loc["f2", q] <= high, q

    tests = got["rank_distribution_tests"]
    assert tests.columns[-1] == "note"
    marked = tests[tests["model"] == "f1"].set_index("alternative")
    assert (marked["better"] == NOT_IDENTIFIED).all()  # no winner, even where the test's p is tiny
    assert (marked["p_value"] < 0.05).any()
    assert marked["note"].str.contains("lognormal mu at its lower bound -50").all()
    assert marked["note"].str.contains("limits the fits ran to").all()
    assert "stretched_exp lam at its lower bound" in marked.loc["stretched_exp", "note"]
    assert "loglogistic s at its lower bound" in marked.loc["loglogistic", "note"]
    assert "zipf" not in marked.loc["zipf", "note"]  # the Zipf itself is identified
    lam, beta = marked.loc["stretched_exp", "alternative_params"].split()
    s, b = marked.loc["loglogistic", "alternative_params"].split()
    assert lam == "nan" and s == "nan" and float(beta) > 0 and float(b) > 0
    assert math.isfinite(float(marked.loc["zipf", "alternative_params"]))
    fine = tests[tests["model"].isin(regular)]
    assert fine["note"].isna().all() and not (fine["better"] == NOT_IDENTIFIED).any()
    assert not fine["alternative_params"].str.contains("nan").any()

    trends = got["lognormal_trends"]
    f = trends[trends["family"] == "f"].set_index("quantity")
    assert (
        (f["n_models"] == 2).all() and f["note"].str.contains("left out").all() and f["note"].str.contains("f1").all()
    )
    x = np.log([1e7, 1e8])
    mu = conjecture.loc[["f2", "f3"], "mu"].to_numpy(float)
    assert f.loc["mu", "slope"] == pytest.approx((mu[1] - mu[0]) / (x[1] - x[0]), rel=1e-9)
    assert np.isfinite(f.loc["mu", ["slope_ci_low", "slope_ci_high"]].to_numpy(float)).all()
    g = trends[trends["family"] == "g"]  # one size: a note row, no error
    assert g["note"].str.contains("needs two sizes").all() and g["slope"].isna().all()
    h = trends[trends["family"] == "h"]  # two sizes, one left out: the same, and it says which
    assert h["note"].str.contains("needs two sizes").all() and h["note"].str.contains("left out.*h1").all()
    assert (h["n_models"] == 1).all() and h["slope"].isna().all()


def figure_data(computed, models: list[str], tmp: Path) -> FigureData:
    """What the figure rule gives the lognormal figures: the tables as read back, replicates and histograms."""
    built = tables_of(computed, models, tmp)
    return FigureData(built["tables"], ["d"], models, form=FORMS["power_law"], level=0.95, refits=20, seed=0,
                      replicates=built["replicates"], hists=built["hists"])  # fmt: skip


def draw_all(data: FigureData, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, plt.Figure]:
    """Every figure of the module, saved; the figures by name, to read their panels."""
    drawn: dict[str, plt.Figure] = {}
    for figure in lognormal_entries.FIGURES:

        def keep(fig: plt.Figure, png: str | Path, name: str = figure.name) -> None:
            drawn[name] = fig
            save(fig, png)

        monkeypatch.setattr(lognormal_figures, "save", keep)
        png = tmp / f"{figure.name}.png"
        figure.plotter()(data, FigureSettings(), png)
        assert png.exists() and png.with_suffix(".pdf").exists()
    return drawn


def texts(fig: plt.Figure) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_figures_draw_with_one_model_per_family(computed, tmp_path, monkeypatch) -> None:
    """Fig. 8c raised KeyError 'slope' when every family had one model (the trends table then holds note
    rows only); every figure of the module draws."""
    data = figure_data(computed, ["f2", "g1"], tmp_path)
    assert "slope" not in data.tables["lognormal_trends"].columns
    drawn = draw_all(data, tmp_path, monkeypatch)
    mu_sigma = drawn["fig8c_mu_sigma"]
    points = [line for line in mu_sigma.axes[0].lines if np.isfinite(np.asarray(line.get_ydata(), float)).any()]
    assert len(points) == 2  # each family's mu/sigma, no trend line
    assert "nothing to draw" not in texts(mu_sigma)


def test_figures_leave_out_fits_at_a_bound_and_say_so(computed, tmp_path, monkeypatch) -> None:
    """A family with one fit at a bound: the others are drawn, the panel names the one left out."""
    drawn = draw_all(figure_data(computed, ["f1", "f2", "f3"], tmp_path), tmp_path, monkeypatch)
    mu_sigma = drawn["fig8c_mu_sigma"]
    ratio = [np.asarray(line.get_xdata(), float) for line in mu_sigma.axes[0].lines if line.get_marker() == "o"]
    assert sorted(np.concatenate(ratio)) == [1e7, 1e8]
    assert "left out: f1" in texts(mu_sigma)
    assert any("slope" in t.get_text() for t in mu_sigma.axes[0].get_legend().get_texts())  # the trend of f2, f3
    assert "f1 lognormal" in texts(drawn["fig8e_rank_histogram"]) and "left out: f1" in texts(
        drawn["fig8b_derived_laws"]
    )


def test_figures_draw_when_every_fit_is_at_a_bound(computed, tmp_path, monkeypatch) -> None:
    drawn = draw_all(figure_data(computed, ["d1", "d2"], tmp_path), tmp_path, monkeypatch)
    said = texts(drawn["fig8c_mu_sigma"])
    assert "nothing to draw" in said and "d1, d2" in said
    histogram = texts(drawn["fig8e_rank_histogram"])
    for model in ("d1", "d2"):
        assert f"{model} lognormal" in histogram and f"{model} stretched_exp" in histogram
    labels = [t.get_text() for t in drawn["fig8e_rank_histogram"].axes[0].get_legend().get_texts()]
    assert any("best alternative: zipf (against the lognormal's limit" in label for label in labels)
    assert not any(label.startswith("lognormal") for label in labels)
    assert "left out: d1, d2" in texts(drawn["fig8b_derived_laws"])
