"""Rule ladder_train: train one ladder model; saved with its tokenizer like a hub checkpoint."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


import torch
from transformers import AutoTokenizer

from rankscale.atomic import atomic_dir
from rankscale.ladder import SizeSpec, TrainSpec, train_model
from rankscale.logs import setup_logging
from rankscale.schedule import peak_lr
from rankscale.tokens import load_tokens

log = setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
size_cfg = dict(snakemake.params.size)
train_cfg = dict(snakemake.params.train)
train_cfg["lr"] = peak_lr(size_cfg, train_cfg)
del size_cfg["lr"], train_cfg["lr_d_ref"]
tokenizer = AutoTokenizer.from_pretrained(snakemake.input.tokenizer)
corpus = load_tokens(snakemake.input.tokens)  # tokenized once, by the ladder_tokenizer rule
log.info("training corpus: %d documents, %d tokens", len(corpus.offsets) - 1, corpus.ids.size)
with atomic_dir(snakemake.output[0]) as tmp:
    summary = train_model(
        SizeSpec(**size_cfg),
        TrainSpec(**train_cfg),
        corpus,
        len(tokenizer),
        tokenizer.eos_token_id,
        tmp,
        stop_at=snakemake.params.stop_at,
    )
    tokenizer.save_pretrained(str(tmp))
log.info(
    "trained %s to %d tokens in %.1f s, final loss %.3f",
    snakemake.wildcards.model,
    summary["tokens_seen"],
    summary["wall_time_s"],
    summary["final_loss"],
)
