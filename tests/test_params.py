"""Model size S = non-embedding parameters, checked against published counts (docs/science.md).

All models are instantiated on the meta device: no weights are allocated.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2Config, GPTNeoXConfig, OPTConfig, Qwen2Config

from rankscale.params import non_embedding_from_config

# name: (layers, d_model, heads, vocab (padded output columns), published non-embedding count)
PYTHIA = {
    "70m": (6, 512, 8, 50304, 18_915_328),
    "160m": (12, 768, 12, 50304, 85_056_000),
    "410m": (24, 1024, 16, 50304, 302_311_424),
    "1b": (16, 2048, 8, 50304, 805_736_448),
    "1.4b": (24, 2048, 16, 50304, 1_208_602_624),
    "2.8b": (32, 2560, 32, 50304, 2_517_652_480),
    "6.9b": (32, 4096, 32, 50432, 6_444_163_072),
    "12b": (36, 5120, 40, 50432, 11_327_027_200),
}


def pythia_config(layers: int, d: int, heads: int, vocab: int) -> GPTNeoXConfig:
    return GPTNeoXConfig(
        vocab_size=vocab,
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * d,
        rotary_pct=0.25,
        tie_word_embeddings=False,
        max_position_embeddings=2048,
    )


@pytest.mark.parametrize("name", list(PYTHIA))
def test_pythia_published_counts(name: str) -> None:
    layers, d, heads, vocab, published = PYTHIA[name]
    assert layers * (12 * d * d + 13 * d) + 2 * d == published  # the closed form in docs/science.md
    count = non_embedding_from_config(pythia_config(layers, d, heads, vocab))
    assert count.non_embedding == published
    assert count.token_embedding == vocab * d
    assert count.output_head == vocab * d  # untied: the head is removed as well
    assert count.position_embedding == 0  # rotary: no learned positions
    assert count.total == published + 2 * vocab * d


def test_pythia_count_does_not_depend_on_vocab() -> None:
    layers, d, heads, _, published = PYTHIA["70m"]
    counts = {vocab: non_embedding_from_config(pythia_config(layers, d, heads, vocab)) for vocab in (50277, 50304, 7)}
    assert {c.non_embedding for c in counts.values()} == {published}
    assert counts[50304].total - counts[50277].total == 2 * 27 * d


def test_gpt2_small_tied_head_and_learned_positions() -> None:
    count = non_embedding_from_config(GPT2Config())
    assert count.total == 124_439_808  # the published 124M
    assert count.token_embedding == 50257 * 768
    assert count.output_head == 0  # tied to the token embedding: not subtracted twice
    assert count.position_embedding == 1024 * 768  # wpe
    assert count.non_embedding == 85_056_000
    assert count.non_embedding == 12 * (12 * 768**2 + 13 * 768) + 2 * 768


def test_opt_125m_learned_positions_with_offset() -> None:
    d, layers, ffn, vocab, positions = 768, 12, 3072, 50272, 2048
    config = OPTConfig(
        hidden_size=d,
        num_hidden_layers=layers,
        ffn_dim=ffn,
        num_attention_heads=12,
        vocab_size=vocab,
        word_embed_proj_dim=d,
        max_position_embeddings=positions,
    )
    count = non_embedding_from_config(config)
    # OPT's learned positional embedding holds max_positions + 2 rows (offset 2)
    assert count.position_embedding == (positions + 2) * d
    assert count.token_embedding == vocab * d
    assert count.output_head == 0  # OPT ties its head
    assert count.total == 125_239_296  # the published "125M"
    assert count.non_embedding == count.total - vocab * d - (positions + 2) * d
    # hand count: 4 biased projections, 2 layer norms, 2 biased MLP matrices per layer + final norm
    per_layer = 4 * (d * d + d) + 2 * 2 * d + (d * ffn + ffn) + (ffn * d + d)
    assert count.non_embedding == layers * per_layer + 2 * d == 85_056_000


def qwen2_non_embedding(d: int, layers: int, heads: int, kv_heads: int, inter: int) -> int:
    """Biased q/k/v, unbiased o, gated MLP (3 matrices), 2 RMSNorms per layer, final RMSNorm."""
    kv = kv_heads * (d // heads)
    per_layer = (d * d + d) + 2 * (d * kv + kv) + d * d + 3 * d * inter + 2 * d
    return layers * per_layer + d


def test_qwen25_05b_tied() -> None:
    config = Qwen2Config(
        hidden_size=896,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        intermediate_size=4864,
        vocab_size=151936,
        tie_word_embeddings=True,
    )
    count = non_embedding_from_config(config)
    assert count.total == 494_032_768  # Qwen2.5-0.5B, "0.49B" total
    assert count.non_embedding == qwen2_non_embedding(896, 24, 14, 2, 4864) == 357_898_112  # "0.36B"
    assert count.output_head == 0


def test_qwen2_tied_and_untied_differ_by_exactly_the_head() -> None:
    kwargs = dict(
        hidden_size=3584,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        intermediate_size=18944,
        vocab_size=152064,
    )
    untied = non_embedding_from_config(Qwen2Config(**kwargs, tie_word_embeddings=False))
    tied = non_embedding_from_config(Qwen2Config(**kwargs, tie_word_embeddings=True))
    assert untied.total - tied.total == 152064 * 3584
    assert untied.output_head == 152064 * 3584 and tied.output_head == 0
    assert untied.non_embedding == tied.non_embedding == qwen2_non_embedding(3584, 28, 28, 4, 18944)
    assert untied.non_embedding == 6_525_621_760  # Qwen2.5-7B, "6.53B" non-embedding


def test_transformers_exclude_embeddings_keeps_an_untied_head() -> None:
    """Why we count ourselves: `num_parameters(exclude_embeddings=True)` is wrong for Pythia."""
    layers, d, heads, vocab, published = PYTHIA["160m"]
    config = pythia_config(layers, d, heads, vocab)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    theirs = model.num_parameters(exclude_embeddings=True)
    ours = non_embedding_from_config(config).non_embedding
    assert ours == published
    assert theirs == published + vocab * d  # the untied embed_out is still counted
    assert theirs != ours
