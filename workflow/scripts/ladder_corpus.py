"""Rule ladder_corpus: the ladder's training text, text-disjoint from every evaluated dataset."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.atomic import atomic_path
from rankscale.corpus import read_jsonl, write_jsonl
from rankscale.documents import load_corpus
from rankscale.logs import setup_logging
from rankscale.overlap import SPAN, disjoint_training_documents

log = setup_logging(snakemake.log[0])
docs = []
for name, spec in zip(snakemake.params.names, snakemake.params.specs, strict=True):
    part, counts = load_corpus(spec, where=name)
    log.info("%s: %d documents, %d characters, %s", name, len(part), sum(len(d.text) for d in part), counts)
    docs.extend(part)
evaluated = [doc for path in snakemake.input.evaluated for doc in read_jsonl(path)]
docs, report = disjoint_training_documents(docs, evaluated)
log.info("without every %d-character span of the %d evaluated documents: %s", SPAN, len(evaluated), report)
with atomic_path(snakemake.output[0]) as tmp:
    write_jsonl(docs, tmp)
