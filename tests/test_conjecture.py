"""The lognormal conjecture and emergence beyond independence, on data with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from rankscale.conjecture import decomposition, distribution_statistics, error_entropy, markov_run_rate, rank_sums
from rankscale.intervals import ratio_test
from rankscale.lognormal import (
    DegenerateRanks,
    appendix_b,
    entropy,
    fit_lognormal,
    implied,
    log_pmf,
    pmf,
    sample_discrete_lognormal,
)
from rankscale.rankdist import FAMILIES, DistributionFit, fit_family, vuong
from rankscale.statistics import hit_pairs, rank_histogram, run_windows, segment_starts
from rankscale.tables.distribution import LOGNORMAL, UNDECIDED, interval_verdict


@pytest.mark.parametrize(("mu", "sigma", "vocab"), [(1.0, 1.0, 4096), (2.5, 2.0, 50277), (4.0, 3.0, 4096)])
def test_entropy_of_a_discrete_lognormal_two_ways(mu: float, sigma: float, vocab: int) -> None:
    """The closed sum over 1..|V| against the plug-in entropy of a large sample (Miller-Madow corrected)."""
    exact = entropy(pmf(mu, sigma, vocab, True))
    sample = rank_histogram(sample_discrete_lognormal(mu, sigma, vocab, 400_000, seed=3), vocab)
    plug_in, corrected = error_entropy(sample.astype(np.float64))
    assert corrected - plug_in == pytest.approx((np.count_nonzero(sample) - 1) / (2 * sample.sum()))
    assert corrected == pytest.approx(exact, abs=0.01)
    assert implied(mu, sigma, vocab, [1], True).entropy == pytest.approx(exact, abs=1e-12)


def exact_appendix_b(mu: float, sigma: float, top: int = 10**7) -> tuple[float, float]:
    """What Appendix B approximates, summed: P(R = r) proportional to the lognormal density at r = 1, 2, ..."""
    r = np.arange(1, top + 1, dtype=np.float64)
    log_f = norm.logpdf(np.log(r), mu, sigma) - np.log(r)
    log_p = log_f - np.logaddexp.reduce(log_f)
    p = np.exp(log_p)
    return float(-log_p[0]), float(-(p @ log_p))


@pytest.mark.parametrize("mu", [0.0, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("sigma", [1.0, 1.5, 2.5])
def test_appendix_b_approximates_its_sum(mu: float, sigma: float) -> None:
    """Within 0.05 nats on this grid (the sum is cut at 10^7, which sigma <= 2.5 never reaches)."""
    neg_log_p1, ce = appendix_b(mu, sigma)
    exact_p1, exact_ce = exact_appendix_b(mu, sigma)
    assert neg_log_p1 == pytest.approx(exact_p1, abs=0.05)
    assert ce == pytest.approx(exact_ce, abs=0.05)
    if mu >= 2:  # away from r = 1 the density is smooth at the integers: the trapezoid rule is close
        assert ce == pytest.approx(exact_ce, abs=0.02)


def test_appendix_b_error_grows_when_the_density_is_sharp() -> None:
    """The trapezoid rule behind the closed form fails for a narrow lognormal (small sigma): the table's
    `ce_appendix_b` next to `ee_lognormal` shows that error instead of hiding it."""
    sharp = abs(appendix_b(0.0, 0.2)[0] - exact_appendix_b(0.0, 0.2, 1000)[0])
    smooth = abs(appendix_b(3.0, 1.5)[0] - exact_appendix_b(3.0, 1.5)[0])
    assert sharp > 0.25 and sharp > 50 * smooth


@pytest.mark.parametrize("generator", ["lognormal", "stretched_exp", "loglogistic", "zipf"])
def test_vuong_picks_the_generating_family(generator: str) -> None:
    vocab, grid = 4096, np.arange(1, 4097)
    thetas = {"stretched_exp": np.log([20.0, 0.4]), "loglogistic": np.log([8.0, 0.9]), "zipf": np.array([1.3])}
    log_p = (
        log_pmf(grid, 1.5, 2.0, vocab, True)
        if generator == "lognormal"
        else FAMILIES[generator].log_pmf(grid, thetas[generator], vocab)
    )
    p = np.exp(log_p - np.logaddexp.reduce(log_p))
    hist = rank_histogram(np.random.default_rng(0).choice(grid, size=20_000, p=p), vocab)
    fits = {name: fit_family(name, hist, truncate=True) for name in ["lognormal", *FAMILIES]}
    best = fits[generator]
    for name, other in fits.items():
        if name == generator:
            continue
        test = vuong(best, other, hist)
        assert test.z > 0, (name, test)
        if generator != "zipf":  # a power law is the limit of the others' tails: they can mimic it
            assert test.p_value < 0.01, (name, test)
    same = vuong(best, fits[generator], hist)
    assert same.z == 0 and same.p_value == 1.0  # identical fits: inconclusive


def test_the_rank_test_follows_the_documents_not_the_tokens() -> None:
    """Ten documents of 500 tokens whose tokens all share a rank, 6 at rank 1 (favouring the first fit) and 4 at
    rank 4 (the second): Vuong's token-level z counts 5000 independent tokens (p ~ 1e-45), but there are ten
    documents, 6 against 4, and the test by documents cannot tell the fits apart. The same tokens dealt to the
    documents at random make every document favour the first fit, and then the documents agree with the tokens."""
    vocab = 4
    first = DistributionFit("a", (), 0.0, np.log(np.array([0.4, 0.3, 0.2, 0.1])))
    second = DistributionFit("b", (), 0.0, np.log(np.array([0.1, 0.2, 0.3, 0.4])))
    ranks = np.repeat([1, 1, 1, 1, 1, 1, 4, 4, 4, 4], 500)
    doc = np.repeat(np.arange(10), 500)
    hist = rank_histogram(ranks.astype(np.uint32), vocab)
    tokens = vuong(first, second, hist)
    assert tokens.z > 10 and tokens.p_value < 1e-40
    llr = first.log_pmf - second.log_pmf

    def by_documents(r: np.ndarray) -> tuple[float, str]:
        got = ratio_test(np.bincount(doc, weights=llr[r - 1]), np.bincount(doc).astype(float), 0.95)
        assert got.estimate == pytest.approx(tokens.mean_llr, rel=1e-12)  # the same ratio, another variance
        return got.p_value, interval_verdict(got.interval.low, got.interval.high, "b")

    p, verdict = by_documents(ranks)
    assert p > 0.3 and verdict == UNDECIDED  # 6 documents against 4: t 0.6 on 9 df
    p, verdict = by_documents(np.random.default_rng(0).permutation(ranks))
    assert p < 1e-5 and verdict == LOGNORMAL


def test_ce_decomposes_exactly() -> None:
    rng = np.random.default_rng(5)
    rank = np.minimum(rng.geometric(0.05, 50_000), 1000).astype(np.uint32)
    logprob = (-rng.gamma(2.0, 1.5, rank.size) - 0.01 * rank).astype(np.float32)
    counts, sums = rank_sums(rank, logprob, 1000)
    ee, self_alignment, confidence = decomposition(counts, sums)
    ce = -np.mean(logprob, dtype=np.float64)
    assert ee + self_alignment + confidence == pytest.approx(ce, abs=1e-9)
    assert ee == pytest.approx(error_entropy(counts)[0], abs=1e-12) and self_alignment >= 0


def test_degenerate_ranks_give_a_note_not_the_starting_point() -> None:
    hist = np.zeros(101)
    hist[1] = 500
    with pytest.raises(DegenerateRanks, match="every scored token has rank 1"):
        fit_lognormal(hist, True)
    stats = distribution_statistics(hist, -0.1 * hist, [1, 10], truncate=True)
    assert math.isnan(stats.mu) and "rank 1" in stats.note and stats.ee == 0.0


def test_untruncated_fit_is_the_authors_option() -> None:
    """Without the cut at |V| the fit moves (heavy tails leak past |V|); the truncated one recovers the truth."""
    vocab = 4096
    hist = rank_histogram(sample_discrete_lognormal(3.0, 3.0, vocab, 100_000, seed=1), vocab)
    truncated, untruncated = fit_lognormal(hist, truncate=True), fit_lognormal(hist, truncate=False)
    assert truncated.mu == pytest.approx(3.0, abs=0.1) and truncated.sigma == pytest.approx(3.0, abs=0.1)
    assert abs(untruncated.sigma - 3.0) > 0.3 and not untruncated.truncated


def markov_hits(rng: np.random.Generator, documents: int, length: int, pi: float, stay: float) -> np.ndarray:
    """A stationary two-state Markov chain of hits per document: P(hit) = pi, P(hit | hit) = stay."""
    enter = pi * (1 - stay) / (1 - pi)  # P(hit | miss) that keeps pi stationary
    chains = np.empty((documents, length), dtype=bool)
    chains[:, 0] = rng.random(documents) < pi
    for t in range(1, length):
        u = rng.random(documents)
        chains[:, t] = np.where(chains[:, t - 1], u < stay, u < enter)
    return chains.ravel()


def test_markov_prediction_is_exact_on_a_markov_chain_and_independence_is_not() -> None:
    rng = np.random.default_rng(11)
    documents, length, pi, stay = 400, 200, 0.3, 0.6
    hit = markov_hits(rng, documents, length, pi, stay)
    doc = np.repeat(np.arange(documents), length)
    pos = np.tile(np.arange(1, length + 1), documents)
    starts = segment_starts(doc, pos)
    row = np.zeros(hit.size, dtype=np.int64)
    ns = [1, 2, 3, 5, 8]
    windows = run_windows(np.ones(hit.size, dtype=bool), starts, row, ns, 1)[0]
    runs = run_windows(hit, starts, row, ns, 1)[0]
    _, prev, both = hit_pairs(hit, starts, row, 1)
    rbp = hit.mean()
    for n, w, r in zip(ns, windows, runs, strict=True):
        empirical = r / w
        markov = float(markov_run_rate(rbp, prev[0], both[0], n))
        truth = pi * stay ** (n - 1)
        assert markov == pytest.approx(truth, rel=0.05) and empirical == pytest.approx(markov, rel=0.08), n
        if n >= 3:
            assert empirical > 2 * rbp**n  # hits cluster: independence underestimates runs


def test_one_step_replicates_match_full_refits() -> None:
    """The lognormal on a bootstrap replicate is one Newton step from the full fit; refitting that replicate
    fully lands on the same (mu, sigma) to a small fraction of the replicates' spread."""
    from scipy import sparse

    from rankscale.bootstrap import resample_counts
    from rankscale.conjecture import distribution_replicates

    vocab, documents = 4096, 300
    rng = np.random.default_rng(4)
    rows, ranks = [], []
    for d in range(documents):  # documents differ in difficulty: mu varies by document
        drawn = sample_discrete_lognormal(2.0 + rng.normal(0, 0.4), 2.2, vocab, 200, seed=d)
        rows.append(np.full(drawn.size, d))
        ranks.append(drawn)
    row, rank = np.concatenate(rows), np.concatenate(ranks)
    counts = sparse.csr_matrix((np.ones(rank.size), (rank, row)), shape=(vocab + 1, documents))
    logprobs = sparse.csr_matrix((-np.log1p(rank.astype(float)), (rank, row)), shape=(vocab + 1, documents))
    point = distribution_statistics(*rank_sums(rank, -np.log1p(rank.astype(float)), vocab), [1, 10], True)
    blocks = [b.astype(float) for b in resample_counts(documents, 40, 0, "f", "d")]
    reps = distribution_replicates(counts, logprobs, blocks, point, [1, 10], True)
    spread = np.std(reps["mu"])
    assert spread > 0.005
    for b, weights in enumerate(np.concatenate(blocks)[:8]):
        hist = np.asarray(counts @ weights).ravel()
        full = fit_lognormal(hist, truncate=True, start=(point.mu, point.sigma))
        assert abs(full.mu - reps["mu"][b]) < 0.1 * spread and abs(full.sigma - reps["sigma"][b]) < 0.1 * np.std(
            reps["sigma"]
        )
        exact_ee = error_entropy(hist)[0]
        assert reps["ee"][b] == pytest.approx(exact_ee, abs=1e-12)  # histogram statistics are exact, not linearised


def test_emergence_figure_draws_a_panel_where_no_run_rate_is_positive(tmp_path) -> None:
    """Tiny models on long runs: every p_{N,k} is 0, so -log p has nothing to put on log axes; the panel
    says so and the job does not fail (it did, on the paper grid with tiny models)."""
    import pandas as pd

    from rankscale.laws import FORMS
    from rankscale.plots.common import FigureData, FigureSettings
    from rankscale.plots.emergence import fig_emergence

    zeros = [c for kind in ("empirical", "predicted", "markov") for c in (kind, f"{kind}_ci_low", f"{kind}_ci_high")]
    rows = [
        dict(family="f", model=m, dataset="d", S=s, final=True, k=1, N=n, **dict.fromkeys(zeros, 0.0))
        for m, s in (("a", 1000), ("b", 8000))
        for n in (2, 5)
    ]
    fits = pd.DataFrame(columns=["family", "dataset", "metric", "k", "alpha", "C", "r2", "note"])
    png = tmp_path / "fig7.png"
    tables = {"emergence": pd.DataFrame(rows), "powerlaw_fits": fits}
    fig_emergence(
        FigureData(
            tables, ["d"], ["a", "b"], form=FORMS["power_law"], level=None, refits=None, seed=None, replicates=None
        ),
        FigureSettings(),
        png,
    )
    assert png.stat().st_size > 0 and png.with_suffix(".pdf").stat().st_size > 0


@pytest.mark.parametrize(("mu", "sigma"), [(2.0, 1.5), (-3.0, 1.0), (-157.0, 20.0), (-157.0, 3.0), (-157.0, 0.5)])
def test_appendix_b_holds_far_in_the_tail(mu: float, sigma: float) -> None:
    """A bootstrap replicate with mu = -157 once raised a math domain error (P and phi underflow to 0 and the
    normaliser's log was taken of 0): the closed form against the same formula in 60-digit arithmetic."""
    import mpmath

    mpmath.mp.dps = 60
    m = mpmath.mpf(mu) / sigma
    big_p, small_phi = mpmath.ncdf(m), mpmath.npdf(m)
    c = big_p + small_phi / (2 * sigma)
    exact_p1 = mpmath.log(mpmath.sqrt(2 * mpmath.pi) * sigma * c) + m * m / 2
    exact_ce = exact_p1 + (big_p * (mu + mpmath.mpf(1) / 2 - m * m / 2) + small_phi * (sigma - m / 2)) / c
    neg_log_p1, ce = appendix_b(mu, sigma)
    assert neg_log_p1 == pytest.approx(float(exact_p1), rel=1e-9)
    assert ce == pytest.approx(float(exact_ce), rel=1e-9, abs=1e-9)
