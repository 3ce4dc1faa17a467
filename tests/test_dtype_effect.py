"""benchmarks/dtype_effect.py: the same model in two dtypes compared on the same document draws (paired).

Synthetic per-document statistics with a planted effect, resampled by the package's own bootstrap
(`rankscale.bootstrap.replicate_totals`, the draws every summary makes): a shift planted per token comes back
exactly and with no width, where an interval of each condition alone is wide; with noise on top, the interval is
the brute-force percentile of the replicate-by-replicate differences. A planted change of a law's exponent comes
back exactly from the document draws. And config/bfloat16.yaml is config/pretrained.yaml but for the dtype.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from rankscale.bootstrap import interval, replicate_totals, resample_counts
from rankscale.config import load_yaml, validate
from rankscale.laws import FORMS, Points
from rankscale.tables.noise import Noise
from tests.conftest import REPO, benchmark_module

dtype_effect = benchmark_module("dtype_effect")
B, SEED = 400, 3


def _documents(rng: np.random.Generator, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Scored tokens per document (uneven, as real documents are) and their summed log-loss."""
    tokens = rng.integers(20, 2000, size=n).astype(np.float64)
    nll = tokens * rng.gamma(4.0, 0.5, size=n)  # documents differ in difficulty: a wide interval of CE alone
    return tokens, nll


def _ce_replicates(tokens: np.ndarray, nll: np.ndarray) -> np.ndarray:
    """CE on every replicate, the draws those of dataset 'humaneval' (the same for both conditions)."""
    units = np.arange(len(tokens))
    reps = replicate_totals({"tokens": tokens, "nll": nll}, units, len(tokens), B, SEED, "humaneval")
    return reps["nll"] / reps["tokens"]


def test_a_planted_shift_comes_back_exactly_with_no_width():
    rng = np.random.default_rng(0)
    tokens, nll = _documents(rng)
    shift = 0.002  # nats per token, on every token of every document
    a, b = _ce_replicates(tokens, nll), _ce_replicates(tokens, nll + shift * tokens)
    ce_a, ce_b = nll.sum() / tokens.sum(), (nll.sum() + shift * tokens.sum()) / tokens.sum()
    delta = dtype_effect.paired_delta(ce_a, ce_b, a, b, 0.95)
    assert delta.difference == pytest.approx(shift, abs=1e-12)
    assert delta.low == pytest.approx(shift, abs=1e-12) and delta.high == pytest.approx(shift, abs=1e-12)
    assert delta.excludes_zero
    # a's own interval is CE's document noise, far wider than the shift: unpaired, the shift would be lost in it
    low, high = interval(a, 0.95, ce_a)
    assert (delta.a_low, delta.a_high) == (pytest.approx(float(low)), pytest.approx(float(high)))
    assert delta.width > 20 * shift and not delta.exceeds
    big = dtype_effect.paired_delta(ce_a, ce_a + 2 * delta.width, a, a + 2 * delta.width, 0.95)
    assert big.exceeds  # a shift of twice a's interval is larger than it


def test_with_noise_the_interval_is_the_percentile_of_the_paired_differences():
    rng = np.random.default_rng(1)
    tokens, nll = _documents(rng)
    nll_b = nll + 0.01 * tokens + rng.normal(0.0, 0.05, len(tokens)) * tokens  # a shift and per-document noise
    a, b = _ce_replicates(tokens, nll), _ce_replicates(tokens, nll_b)
    # brute force: draw the documents again, replicate by replicate, and take CE of each condition on the same draw
    diffs = []
    for counts in resample_counts(len(tokens), B, SEED, "humaneval"):
        for row in counts:
            diffs.append(row @ nll_b / (row @ tokens) - row @ nll / (row @ tokens))
    point = nll_b.sum() / tokens.sum() - nll.sum() / tokens.sum()
    expect = np.quantile(np.asarray(diffs), [0.025, 0.975])
    delta = dtype_effect.paired_delta(nll.sum() / tokens.sum(), nll_b.sum() / tokens.sum(), a, b, 0.95)
    assert delta.difference == pytest.approx(point, rel=1e-12)
    assert (delta.low, delta.high) == (pytest.approx(min(expect[0], point)), pytest.approx(max(expect[1], point)))
    assert delta.low < 0.01 < delta.high  # it covers the planted shift
    assert delta.high - delta.low < delta.width  # pairing removes the documents' shared difficulty
    # few effective documents widen it as metrics.csv's intervals are widened
    few = dtype_effect.paired_delta(delta.a, delta.a + point, a, b, 0.95, n_eff=5.0)
    assert few.low < delta.low and few.high > delta.high


def test_a_planted_change_of_the_exponent_comes_back_from_the_document_draws():
    rng = np.random.default_rng(2)
    S = np.array([2.5e4, 1e5, 3e5, 8e5, 1.6e6, 3.2e6])
    points = Points.of(S)
    ya = 3.0 * S**-0.08 * np.exp(rng.normal(0.0, 0.01, S.size))  # a law with some scatter of sizes
    reps_a = ya * np.exp(rng.normal(0.0, 0.02, (B, S.size)))  # document noise
    change = 0.013  # alpha(b) - alpha(a), planted on every replicate: y_b = y_a * 1.1 * S^-change
    factor = 1.1 * S**-change
    noise = Noise([f"m{i}" for i in range(S.size)], None, SEED)
    delta = dtype_effect.law_delta(FORMS["power_law"], points, (ya, ya * factor), (reps_a, reps_a * factor), noise,
                                   ("ladder", "humaneval"), 100, 0.95)  # fmt: skip
    assert delta.difference == pytest.approx(change, abs=1e-10)
    assert delta.low_documents == pytest.approx(change, abs=1e-9)
    assert delta.high_documents == pytest.approx(change, abs=1e-9)
    assert delta.low <= change + 1e-9 and delta.high >= change - 1e-9


def test_the_bfloat16_configuration_is_the_pretrained_one_but_for_the_dtype():
    """The comparison is paired only if the two runs score the same models on the same documents."""
    f32 = validate(load_yaml(REPO / "config/pretrained.yaml"))
    bf16 = validate(load_yaml(REPO / "config/bfloat16.yaml"))
    assert f32["extraction"]["dtype"] == "float32" and bf16["extraction"]["dtype"] == "bfloat16"
    assert bf16["extraction"]["head_dtype"] == "float32"  # how users run large models
    assert all("dtype" not in m and "head_dtype" not in m for m in bf16["models"])  # every model follows
    same = copy.deepcopy(bf16)
    same["extraction"]["dtype"] = "float32"
    same["ladder"]["train"]["checkpoints"] = f32["ladder"]["train"]["checkpoints"]  # the final models are shared
    assert same == f32
