"""Rule corpus: one dataset entry -> results/corpus/<dataset>-<key>.jsonl (rankscale.layout)."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.atomic import atomic_path, sha256_file, write_json
from rankscale.corpus import CorpusError, write_jsonl
from rankscale.documents import load_corpus, provenance, resolve_revision
from rankscale.identity import OWN_SHA
from rankscale.logs import setup_logging

log = setup_logging(snakemake.log[0])
dataset = snakemake.params.dataset
spec = snakemake.params.entry  # the entry as written (`spec`, the params, holds a local file's digest, not its path)
resolved = resolve_revision(spec, f"datasets.{dataset}")
docs, counts = load_corpus(spec, where=f"datasets.{dataset}", revision=resolved)
if not docs:
    raise CorpusError(f"datasets.{dataset}: the corpus is empty after splitting and limits")
with atomic_path(snakemake.output.corpus) as tmp:
    n = write_jsonl(docs, tmp)
meta = {
    "dataset": dataset,
    **provenance(spec, resolved),
    "documents": n,
    "characters": sum(len(d.text) for d in docs),
    **counts,  # skipped_records: invalid records skipped under skip_invalid_records
    OWN_SHA: sha256_file(snakemake.output.corpus),
}
write_json(snakemake.output.meta, meta)
log.info("%s: %d documents, %d characters, revision %s", dataset, n, meta["characters"], meta["resolved_revision"])
