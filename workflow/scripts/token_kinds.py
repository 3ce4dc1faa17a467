"""Rule token_kinds: what each token id of a tokenizer is (whitespace, word, number, ...: the `kind` stratum) and
the UTF-8 byte length of its text (what cross-entropy in bits per byte divides by)."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.identity import TOKENIZER_SHA
from rankscale.logs import setup_logging
from rankscale.models import ModelSource
from rankscale.token_kinds import KINDS, TOKENIZER_COMMIT, save_token_table, token_table
from rankscale.tokenizer_pin import load_pinned
from rankscale.tokens import tokenizer_fingerprint

log = setup_logging(snakemake.log[0])
source = ModelSource(**snakemake.params.source, tokenizer_revision=None)
# a hub tokenizer at the commit its model's download pinned, if downloaded yet (rankscale.tokenizer_pin)
tokenizer, commit = load_pinned(source, snakemake.params.pin, f"tokenizer {source.tokenizer_location}")
table = token_table(tokenizer)
provenance = {TOKENIZER_SHA: tokenizer_fingerprint(tokenizer), **({TOKENIZER_COMMIT: commit} if commit else {})}
save_token_table(table, snakemake.output.table, source.tokenizer_location, provenance)  # and its .json beside it
log.info("%s: %s; text bytes per token: max %d, %d tokens of none (special)", snakemake.wildcards.tok,
         {k: int((table.kinds == i).sum()) for i, k in enumerate(KINDS)}, int(table.n_bytes.max(initial=0)),
         int((table.n_bytes == 0).sum()))  # fmt: skip
