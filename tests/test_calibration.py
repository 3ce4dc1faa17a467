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
    return TokenizedCorpus(ids.flatten().numpy().astype(np.int32), np.arange(DOCUMENTS + 1, dtype=np.int64) * LENGTH)


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


def test_a_model_on_its_own_samples_is_calibrated(sampled: TokenizedCorpus) -> None:
    totals, docs = scored(sampled, 1.0)
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
    # the debiased distances: noise around 0 (a plug-in would read the noise as miscalibration)
    assert METRICS["calibration_error"].compute(totals) < 0.03
    assert METRICS["pit_distance"].compute(totals) < 0.01


@pytest.mark.parametrize("temperature, sign", [(0.5, 1.0), (2.0, -1.0)])
def test_a_temperature_shows_the_known_sign(sampled: TokenizedCorpus, temperature: float, sign: float) -> None:
    totals, docs = scored(sampled, temperature)
    n = np.asarray(docs[TOKENS], dtype=np.float64)
    over, error = mean_and_error(np.asarray(docs[cal.CONFIDENCE_SUM]) - np.asarray(docs[cal.TOP1_HITS]), n)
    assert sign * over > SIGMAS * error, (temperature, over, error)
    gap, error = mean_and_error(-np.asarray(docs[LOGPROB_SUM]) - np.asarray(docs[cal.ENTROPY_SUM]), n)
    assert sign * gap > SIGMAS * error, (temperature, gap, error)
    assert METRICS["calibration_error"].compute(totals) > 0.05
    assert METRICS["pit_distance"].compute(totals) > 0.02
    star = float(METRICS["nucleus_star"].compute(totals))
    # an overconfident model needs a wider nucleus than 0.9 to cover 90% of the truths, an underconfident a narrower
    assert sign * (star - cal.NUCLEUS_Q) > 0, (temperature, star)
