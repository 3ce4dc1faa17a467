"""Calibration metrics, correct by construction: a model scored on text drawn from its own softmax is calibrated.

A tiny random GPT-2 (a head scaled so its next-token distributions are peaked and vary with the context) writes
documents by ancestral sampling (a fixed seed); `extract_ranks` scores them with the same model. Then the
randomised PIT is uniform, C(p) >= p (= p but for the truth's own mass), the top-1 confidence matches the
accuracy, mean entropy matches CE, and the debiased distances are 0 up to noise: each checked within its Monte
Carlo error, computed here over the documents (a document's tokens share their contexts). The same text scored
with the logits sharpened (temperature 0.5) or flattened (2) must show the known sign of miscalibration:
CE - mean H = (E_q[z] - E_p[z]) / T, which is above 0 exactly when T < 1, and max_v q_v against E[max_v p_v].
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2Config

from rankscale import calibration as cal
from rankscale.extract import ExtractionSettings, extract_ranks
from rankscale.metrics import METRICS
from rankscale.statistics import LOGPROB_SUM, TOKENS, Totals
from rankscale.summary.compute import per_document
from rankscale.tokens import TokenizedCorpus
from rankscale.windows import WindowSpec, plan_windows

VOCAB, LENGTH, DOCUMENTS, SIGMAS = 96, 32, 400, 4.0
# documents of unequal length (4 to 32 tokens: a sample cut short is still the model's own): Kish's n_eff < D


def tiny_model(temperature: float = 1.0) -> torch.nn.Module:
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=32, n_layer=2, n_head=4, tie_word_embeddings=False,
                        bos_token_id=0, eos_token_id=0)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():  # peaked, context-dependent distributions; logits z / T exactly through the head
        model.get_output_embeddings().weight.mul_(40.0 / temperature)
    return model


@pytest.fixture(scope="module")
def sampled() -> TokenizedCorpus:
    """DOCUMENTS sequences of LENGTH tokens, each token after the first drawn from the model's own softmax."""
    model, gen = tiny_model(), torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB, (DOCUMENTS, 1), generator=gen)
    past = None
    with torch.no_grad():
        for _ in range(LENGTH - 1):  # one position at a time, the earlier ones from the cache
            out = model(input_ids=ids[:, -1:], past_key_values=past, use_cache=True)
            past = out.past_key_values
            probs = torch.softmax(out.logits[:, -1].double(), dim=-1)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator=gen)], dim=1)
    lengths = 4 + (np.arange(DOCUMENTS) * 7) % (LENGTH - 3)
    kept = np.concatenate([ids[d, :n].numpy() for d, n in enumerate(lengths)]).astype(np.int32)
    return TokenizedCorpus(kept, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


@pytest.fixture(scope="module")
def calibrated(sampled: TokenizedCorpus) -> tuple[Totals, Totals]:
    """The sampled text scored by the model that wrote it."""
    return scored(sampled, 1.0)


def scored(corpus: TokenizedCorpus, temperature: float) -> tuple[Totals, Totals]:
    """(totals, per-document totals) of the calibration statistics, the text scored at this temperature."""
    windows = plan_windows(corpus.doc_lengths(), WindowSpec(LENGTH, None, None))
    settings = ExtractionSettings(ties="ge", head_dtype=None, batch_size=64, head_chunk=None, kernel="chunked")
    arrays = extract_ranks(tiny_model(temperature), corpus, windows, VOCAB, settings)
    _, stats = per_document(arrays, [1], [], [])
    return Totals({k: v.sum(axis=0) for k, v in stats.items()}), Totals(stats)


def mean_and_error(numerator: np.ndarray, tokens: np.ndarray) -> tuple[float, float]:
    """A ratio of document sums and its standard error over documents (the linearised, cluster-robust one)."""
    ratio = numerator.sum() / tokens.sum()
    return float(ratio), float(math.sqrt(((numerator - ratio * tokens) ** 2).sum()) / tokens.sum())


def test_a_model_on_its_own_samples_is_calibrated(calibrated: tuple[Totals, Totals]) -> None:
    totals, docs = calibrated
    n = np.asarray(docs[TOKENS], dtype=np.float64)
    accuracy = float(np.asarray(totals[cal.TOP1_HITS]) / n.sum())
    assert 0.2 < accuracy < 0.8  # peaked but not certain: the checks below have something to check
    # the PIT's distribution function sits on the diagonal at every u of the grid
    deviation = np.asarray(docs[cal.PIT_DEVIATION], dtype=np.float64)
    for j, u in enumerate(cal.U_GRID):
        offset, error = mean_and_error(deviation[:, j] + u * n, n)
        assert abs(offset - u) <= SIGMAS * error, (u, offset, error)
    # confidence against accuracy, mean entropy against CE: equal up to their Monte Carlo error
    over, error = mean_and_error(np.asarray(docs[cal.CONFIDENCE_SUM]) - np.asarray(docs[cal.TOP1_HITS]), n)
    assert abs(over) <= SIGMAS * error and error < 0.02, (over, error)
    gap, error = mean_and_error(-np.asarray(docs[LOGPROB_SUM]) - np.asarray(docs[cal.ENTROPY_SUM]), n)
    assert abs(gap) <= SIGMAS * error and error < 0.05, (gap, error)
    assert METRICS["entropy_gap"].compute(totals) == pytest.approx(gap)
    # C(p) >= p: the truth's own mass only adds to the coverage (it is p for a continuous distribution)
    for p in cal.NUCLEUS_P:
        covered, error = mean_and_error(np.asarray(docs[cal.NUCLEUS_HITS])[:, cal.P_GRID.index(p)], n)
        assert covered >= p - SIGMAS * error, (p, covered, error)
    # the debiased squares: 0 up to their own noise. At delta = 0 the cross products' sum is the noise itself times a
    # chi-square(1) less 1 (mean 0, SD sqrt(2) sum S_d^2), as large as the plug-in's bias: unbiased, not more precise
    # (tests the unbiasedness below, on synthetic documents); the roots stay small beside a miscalibrated model's
    for deviation, squared, count, count_squared in (
        (cal.BIN_DEVIATION, cal.BIN_DEVIATION_SQUARED, cal.BIN_TOKENS, cal.BIN_TOKENS_SQUARED),
        (cal.PIT_DEVIATION, cal.PIT_DEVIATION_SQUARED, TOKENS, cal.TOKENS_SQUARED),
    ):
        n, n_squared = np.asarray(totals[count], dtype=np.float64), np.asarray(totals[count_squared])
        debiased = cal.debiased_square(np.asarray(totals[deviation], dtype=np.float64), np.asarray(totals[squared]),
                                       n, n_squared)  # fmt: skip
        noise = math.sqrt(2) * np.asarray(totals[squared]) / (n**2 - n_squared)
        assert (np.abs(debiased) <= SIGMAS * noise).all(), (deviation.name, debiased, noise)
    assert METRICS["calibration_error"].compute(totals) < 0.03
    assert METRICS["pit_distance"].compute(totals) < 0.01


@pytest.mark.parametrize("temperature, sign", [(0.5, 1.0), (2.0, -1.0)])
def test_a_temperature_shows_the_known_sign(sampled: TokenizedCorpus, calibrated: tuple[Totals, Totals],
                                            temperature: float, sign: float) -> None:  # fmt: skip
    totals, docs = scored(sampled, temperature)
    n = np.asarray(docs[TOKENS], dtype=np.float64)
    over, error = mean_and_error(np.asarray(docs[cal.CONFIDENCE_SUM]) - np.asarray(docs[cal.TOP1_HITS]), n)
    assert sign * over > SIGMAS * error, (temperature, over, error)
    gap, error = mean_and_error(-np.asarray(docs[LOGPROB_SUM]) - np.asarray(docs[cal.ENTROPY_SUM]), n)
    assert sign * gap > SIGMAS * error, (temperature, gap, error)
    assert METRICS["calibration_error"].compute(totals) > 0.05
    assert METRICS["pit_distance"].compute(totals) > 0.02
    star, star_calibrated = (float(METRICS["nucleus_star"].compute(t)) for t in (totals, calibrated[0]))
    # an overconfident model needs a wider nucleus than the calibrated one to cover 90% of the truths (which, for the
    # truth's own mass, is already below 0.9), an underconfident one a narrower
    assert star_calibrated < cal.NUCLEUS_Q and sign * (star - star_calibrated) > 0.05, (temperature, star)


def test_the_debiased_square_is_unbiased_across_unequal_correlated_documents() -> None:
    """delta^2 from ((sum S)^2 - sum S^2) / (n^2 - sum n_d^2): unbiased with documents of unequal length whose tokens
    share a document effect; over n^2 instead it is biased by the factor 1 - 1/n_eff, and the plug-in by the noise.
    And its bootstrap replicates, the squares weighed by the draw counts squared, centre on the point."""
    from rankscale.bootstrap import replicate_totals

    rng = np.random.default_rng(4)
    delta, sims = 0.03, 4000
    n_d = np.array([400, 200, 100, 50, 25, 25, 10, 10, 10, 10], dtype=np.float64)  # uneven: Kish's n_eff 3.3 of 10
    documents = n_d.size
    effect = rng.normal(0.0, 0.05, (sims, documents))  # a document's tokens go together
    s_d = n_d * (delta + effect) + np.sqrt(n_d) * rng.normal(0.0, 0.4, (sims, documents))
    n, n_sq = n_d.sum(), (n_d**2).sum()
    debiased = cal.debiased_square(s_d.sum(1), (s_d**2).sum(1), np.full(sims, n), np.full(sims, n_sq))
    error = debiased.std() / math.sqrt(sims)
    assert abs(debiased.mean() - delta**2) < SIGMAS * error, (debiased.mean(), delta**2, error)
    over_n_squared = debiased * (n**2 - n_sq) / n**2
    assert delta**2 - over_n_squared.mean() > SIGMAS * error  # the normaliser matters where lengths differ
    assert (s_d.sum(1) / n).__pow__(2).mean() - delta**2 > SIGMAS * error  # the plug-in reads the noise
    n_d = rng.geometric(1 / 30, 60).astype(np.float64)  # a sample of 60 documents for the bootstrap
    sample = n_d * (delta + rng.normal(0.0, 0.05, n_d.size)) + np.sqrt(n_d) * rng.normal(0.0, 0.4, n_d.size)
    n, n_sq = n_d.sum(), (n_d**2).sum()
    point = float(cal.debiased_square(sample.sum(), (sample**2).sum(), n, n_sq))
    per_unit = {"s": sample, "s2": sample**2, "n": n_d, "n2": n_d**2}
    for squared, centred in ((("s2", "n2"), True), ((), False)):
        reps = replicate_totals(per_unit, np.arange(n_d.size), n_d.size, 2000, 0, "x", squared=squared)
        mean = float(np.mean(cal.debiased_square(reps["s"], reps["s2"], reps["n"], reps["n2"])))
        plug_in = float((sample.sum() / n) ** 2)
        assert (abs(mean - point) < 0.25 * abs(plug_in - point)) == centred, (squared, mean, point, plug_in)
