"""Rule ladder_tokenizer: train the ladder's byte-level BPE tokenizer."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.atomic import atomic_dir
from rankscale.corpus import read_jsonl
from rankscale.ladder import train_tokenizer
from rankscale.logs import setup_logging

log = setup_logging(snakemake.log[0])
with atomic_dir(snakemake.output[0]) as tmp:
    tok = train_tokenizer(read_jsonl(snakemake.input[0]), snakemake.params.vocab_size, tmp)
log.info("trained tokenizer with %d tokens", len(tok))
