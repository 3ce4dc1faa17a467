"""Rule corpus: one dataset entry -> results/corpus/{dataset}.jsonl."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.atomic import atomic_path
from rankscale.corpus import CorpusError, load_documents, write_jsonl
from rankscale.logs import setup_logging

log = setup_logging(snakemake.log[0])
dataset = snakemake.wildcards.dataset
docs = load_documents(snakemake.params.spec, where=f"datasets.{dataset}")
if not docs:
    raise CorpusError(f"datasets.{dataset}: the corpus is empty after splitting and limits")
with atomic_path(snakemake.output[0]) as tmp:
    n = write_jsonl(docs, tmp)
log.info("%s: %d documents, %d characters", dataset, n, sum(len(d.text) for d in docs))
