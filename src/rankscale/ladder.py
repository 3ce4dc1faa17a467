"""The offline model ladder: a BPE tokenizer, GPT-NeoX configurations of increasing size, the training text.

Training itself is `rankscale.training` (resumable runs). Everything is seeded; on one machine and
thread count the checkpoints are bit-identical. The models are ordinary Hugging Face checkpoints
(`save_pretrained`, safetensors) loaded afterwards by exactly the code that loads hub models.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankscale.corpus import Document
from rankscale.tokens import TokenizedCorpus

log = logging.getLogger(__name__)

EOS = "<|endoftext|>"


def train_tokenizer(docs: Iterable[Document], vocab_size: int, out_dir: Path) -> Any:
    """Byte-level BPE (GPT-2 style) trained on `docs`, saved as a fast HF tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((d.text for d in docs), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS, unk_token=EOS)
    fast.save_pretrained(str(out_dir))
    return fast


@dataclass(frozen=True)
class SizeSpec:
    name: str
    layers: int
    d_model: int
    heads: int


@dataclass(frozen=True)
class TrainSpec:
    tokens: int
    seq_len: int
    batch_size: int
    lr: float
    warmup_steps: int
    weight_decay: float
    seed: int


def model_config(size: SizeSpec, vocab_size: int, max_positions: int, eos_id: int) -> Any:
    """A Pythia-style GPT-NeoX config (untied head, rotary on a quarter of each head)."""
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(
        vocab_size=vocab_size,
        hidden_size=size.d_model,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        intermediate_size=4 * size.d_model,
        max_position_embeddings=max_positions,
        rotary_pct=0.25,
        use_parallel_residual=True,
        tie_word_embeddings=False,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )


def stream_length(corpus: TokenizedCorpus) -> int:
    """Tokens in the training stream `training_sequences` cuts: every document plus its EOS."""
    return int(corpus.ids.size) + len(corpus.offsets) - 1


def training_sequences(corpus: TokenizedCorpus, seq_len: int, eos_id: int) -> np.ndarray:
    """Documents joined with EOS and cut into [n, seq_len] rows (the tail is dropped)."""
    parts: list[np.ndarray] = []
    for d in range(len(corpus.offsets) - 1):
        parts.append(corpus.doc(d))
        parts.append(np.array([eos_id], dtype=np.int32))
    stream = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    n = stream.size // seq_len
    if n == 0:
        raise ValueError(
            f"ladder.train.seq_len: the training text has {stream.size} tokens, fewer than one sequence of {seq_len}"
        )
    return stream[: n * seq_len].reshape(n, seq_len)
