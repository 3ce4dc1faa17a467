"""The offline model ladder: a BPE tokenizer and GPT-NeoX models of increasing size.

Everything is seeded; on one machine and thread count the checkpoints are bit-identical.
The models are ordinary Hugging Face checkpoints (`save_pretrained`, safetensors) loaded
afterwards by exactly the code that loads hub models.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rankscale.corpus import Document
from rankscale.schedule import lr_factor, tokens_per_step, training_steps
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


def train_model(
    size: SizeSpec,
    train: TrainSpec,
    corpus: TokenizedCorpus,
    vocab_size: int,
    eos_id: int,
    out_dir: Path,
    stop_at: int | None = None,
) -> dict[str, Any]:
    """Train one ladder model for `train.tokens` tokens and save it to `out_dir`.

    `stop_at`: save a checkpoint instead, the same run (schedule, seed, data order) stopped after
    the step that reaches `stop_at` training tokens: bit-identical to that state of the full run.
    """
    from transformers import GPTNeoXForCausalLM

    torch.manual_seed(train.seed)
    rng = np.random.default_rng(train.seed)
    seqs = training_sequences(corpus, train.seq_len, eos_id)
    model = GPTNeoXForCausalLM(model_config(size, vocab_size, train.seq_len, eos_id))
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": train.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=train.lr,
        betas=(0.9, 0.95),
    )
    schedule = {"batch_size": train.batch_size, "seq_len": train.seq_len}
    steps = training_steps(train.tokens, schedule)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, steps, train.warmup_steps))
    order = np.concatenate(
        [rng.permutation(len(seqs)) for _ in range(math.ceil(steps * train.batch_size / len(seqs)) + 1)]
    )
    started = last = time.perf_counter()
    losses: list[float] = []
    per_step = tokens_per_step(schedule)
    run = steps if stop_at is None else min(steps, training_steps(stop_at, schedule))
    for step in range(run):
        idx = order[step * train.batch_size : (step + 1) * train.batch_size]
        batch = torch.from_numpy(seqs[idx].astype(np.int64))
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        now = time.perf_counter()
        if now - last >= 10 or step == run - 1:
            seen = (step + 1) * per_step
            log.info(
                "%s step %d/%d loss %.3f (%.0f tokens/s)",
                size.name,
                step + 1,
                steps,
                np.mean(losses[-20:]),
                seen / (now - started),
            )
            last = now
    model.eval()
    model.save_pretrained(str(out_dir), safe_serialization=True)
    summary = {
        "size": size.__dict__,
        "train": train.__dict__,
        "steps": run,
        "schedule_steps": steps,
        "tokens_seen": run * per_step,
        "epochs": run * train.batch_size / len(seqs),
        "final_loss": float(np.mean(losses[-20:])),
        "wall_time_s": time.perf_counter() - started,
    }
    (out_dir / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
