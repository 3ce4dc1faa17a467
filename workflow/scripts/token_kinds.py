"""Rule token_kinds: what each token id of a tokenizer is (whitespace, word, number, ...): the `kind` stratum."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.logs import setup_logging
from rankscale.models import ModelSource, load_tokenizer
from rankscale.token_kinds import KINDS, kind_table, save_kind_table

log = setup_logging(snakemake.log[0])
source = ModelSource(**snakemake.params.source, tokenizer_revision=None)
tokenizer = load_tokenizer(source, label=f"tokenizer {source.tokenizer_location}")
table = kind_table(tokenizer)
save_kind_table(table, snakemake.output.table, source.tokenizer_location)  # and its .json beside it
log.info("%s: %s", snakemake.wildcards.tok, {k: int((table == i).sum()) for i, k in enumerate(KINDS)})
