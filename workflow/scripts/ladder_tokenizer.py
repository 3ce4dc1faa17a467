"""Rule ladder_tokenizer: train the ladder's byte-level BPE tokenizer; count the training text's tokens."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.atomic import atomic_dir, write_json
from rankscale.corpus import read_jsonl
from rankscale.ladder import stream_length, train_tokenizer
from rankscale.logs import setup_logging
from rankscale.tokens import save_tokens, tokenize_documents

log = setup_logging(snakemake.log[0])
docs = read_jsonl(snakemake.input[0])
with atomic_dir(snakemake.output.tokenizer) as tmp:
    tok = train_tokenizer(docs, snakemake.params.vocab_size, tmp)
log.info("trained tokenizer with %d tokens", len(tok))
# what ladder_train will cut into seq_len rows: the plan refuses a seq_len it cannot fill once
corpus, counts = tokenize_documents(docs, tok, add_special_tokens=False)  # the text as written
save_tokens(corpus, snakemake.output.tokens, {"tokens": stream_length(corpus), **counts})
write_json(snakemake.output.counts, {"tokens": stream_length(corpus), **counts})
log.info("training text: %d tokens", stream_length(corpus))
