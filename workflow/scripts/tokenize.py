"""Rule tokenize: a corpus JSONL -> token ids + offsets for one tokenizer."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


import json

from rankscale.atomic import sha256_file
from rankscale.corpus import read_jsonl
from rankscale.identity import TOKENIZER_COMMIT, token_file_hashes
from rankscale.logs import setup_logging
from rankscale.models import ModelSource
from rankscale.tokenizer_pin import load_pinned
from rankscale.tokens import save_tokens, tokenize_documents, tokenizer_fingerprint

log = setup_logging(snakemake.log[0])
# `load` names where the tokenizer loads from (rankscale.plan.tokenizer_params): a source of its own; `source`, the
# params, what it is (a local tokenizer by its content) with the rank format version, which reruns tokenization
source = ModelSource(**snakemake.params.load, tokenizer_revision=None)
where = f"{source.tokenizer_location}@{source.tokenizer_ref}" if source.tokenizer_ref else source.tokenizer_location
# a hub tokenizer at the commit its model's download pinned, if downloaded yet (rankscale.tokenizer_pin)
tokenizer, commit = load_pinned(
    source, snakemake.params.pin, f"tokenizer of models {snakemake.params.models} ({where})"
)
docs = read_jsonl(snakemake.input.corpus)
corpus, counts = tokenize_documents(docs, tokenizer, add_special_tokens=snakemake.params.add_special_tokens)
if counts["documents"] == 0:
    raise ValueError(f"{snakemake.input.corpus}: no document has two or more tokens")
meta = {
    "tokenizer": source.tokenizer_location,
    "tokenizer_key": snakemake.wildcards.tok,
    **({TOKENIZER_COMMIT: commit} if commit else {}),
    **token_file_hashes(tokenizer_fingerprint(tokenizer), sha256_file(snakemake.input.corpus)),
    "vocab_size": len(tokenizer),
    "dataset": snakemake.params.dataset,
    "dataset_revision": json.loads(open(snakemake.input.corpus_meta).read())["resolved_revision"],
    "add_special_tokens": snakemake.params.add_special_tokens,
    **counts,
}
save_tokens(corpus, snakemake.output.tokens, meta)
log.info(
    "%s / %s: %s",
    snakemake.wildcards.tok,
    snakemake.params.dataset,
    {k: v for k, v in counts.items() if k != "corpus_documents"},
)
