"""Rule summarize: one rank array -> totals, per-document statistics and bootstrap replicates, histogram."""

import json
import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

from rankscale.atomic import write_json, write_npz
from rankscale.identity import RankIdentity
from rankscale.logs import setup_logging
from rankscale.metrics import METRICS
from rankscale.rankfile import check_provenance, load_rank_arrays
from rankscale.summary import Resampling, summarize, summary_totals
from rankscale.tokens import corpus_units

log = setup_logging(snakemake.log[0])
arrays, meta = load_rank_arrays(snakemake.input.ranks, snakemake.input.meta)
tokens_meta = json.loads(Path(snakemake.input.tokens_meta).read_text())
check_provenance(meta, tokens_meta, RankIdentity.from_params(snakemake.params.identity), snakemake.input.ranks)
analysis = snakemake.params.analysis
dropped = [k for k in analysis["k_include"] if k > meta["vocab_size"]]
if dropped:
    log.warning("k values above |V| = %d left out for this model: %s", meta["vocab_size"], dropped)
family_units = [corpus_units(json.loads(Path(p).read_text()), p) for p in snakemake.input.family_tokens_meta]
resampling = Resampling.for_family(
    corpus_units(tokens_meta, snakemake.input.tokens_meta),
    family_units,
    replicates=analysis["bootstrap"]["replicates"],
    seed=analysis["bootstrap"]["seed"],
    family_name=snakemake.params.model["family"],
    dataset=snakemake.wildcards.dataset,
)
if resampling.n_units < 20:
    log.warning(
        "the bootstrap resamples only %d documents: with so few, its intervals are rough and often too narrow",
        resampling.n_units,
    )
summary, hist, boot = summarize(arrays, meta, analysis, resampling, snakemake.params.model)
write_npz(snakemake.output.hist, counts=hist)
write_npz(snakemake.output.boot, **boot)
write_json(snakemake.output.summary, summary)
totals = summary_totals(summary)
log.info(
    "%s / %s: CE %.4f, RBP_1 %.4f, lognormal mu %.3f sigma %.3f, %d documents, %d bootstrap replicates",
    summary["model"],
    summary["dataset"],
    METRICS["ce"].compute(totals),
    METRICS["rbp"].compute(totals)[summary["k"].index(1)],
    summary["lognormal"]["mu"],
    summary["lognormal"]["sigma"],
    summary["n_documents"],
    resampling.replicates,
)
