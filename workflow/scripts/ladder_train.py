"""Rule ladder_train: one model of a ladder run (a final model or a checkpoint), resumed from the run's nearest
earlier saved state; saved with its tokenizer like a hub checkpoint."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

import torch
from transformers import AutoTokenizer

from rankscale.atomic import atomic_dir, sha256_file
from rankscale.ladder import SizeSpec, TrainSpec
from rankscale.logs import setup_logging
from rankscale.schedule import peak_lr
from rankscale.tokens import load_tokens
from rankscale.training import Run, train_model

log = setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
size, train = dict(snakemake.params.size), dict(snakemake.params.train)
tokenizer = AutoTokenizer.from_pretrained(snakemake.input.tokenizer)
corpus = load_tokens(snakemake.input.tokens)  # tokenized once, by the ladder_tokenizer rule
log.info("training corpus: %d documents, %d tokens", len(corpus.offsets) - 1, corpus.ids.size)
train["lr"] = peak_lr(size, train)  # the size's own, or scaled by width (ladder.train.lr_d_ref)
run = Run(
    size=SizeSpec(**{k: v for k, v in size.items() if k != "lr"}),
    train=TrainSpec(**{k: v for k, v in train.items() if k != "lr_d_ref"}),
    vocab_size=len(tokenizer),
    eos_id=tokenizer.eos_token_id,
    tokens_sha256=sha256_file(snakemake.input.tokens),
)
with atomic_dir(snakemake.output[0]) as tmp:
    summary = train_model(
        run,
        corpus,
        tmp,
        state_root=Path(snakemake.params.states),
        stop_at=snakemake.params.stop_at,
        save_at=snakemake.params.save_at,
    )
    tokenizer.save_pretrained(str(tmp))
log.info(
    "%s: %d tokens (%d steps trained here, from step %d) in %.1f s, final loss %.3f",
    snakemake.wildcards.model,
    summary["tokens_seen"],
    summary["trained_steps"],
    summary["resumed_from_step"],
    summary["wall_time_s"],
    summary["final_loss"],
)
