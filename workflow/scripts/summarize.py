"""Rule summarize: one rank array -> RBP grid, CE, lognormal fit, N-token runs, histogram."""

import json
import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.atomic import write_json, write_npz
from rankscale.identity import RankIdentity
from rankscale.logs import setup_logging
from rankscale.metrics import METRICS
from rankscale.rankfile import check_provenance, load_rank_arrays
from rankscale.summary import summarize, summary_totals

log = setup_logging(snakemake.log[0])
arrays, meta = load_rank_arrays(snakemake.input.ranks, snakemake.input.meta)
with open(snakemake.input.tokens_meta) as fh:
    check_provenance(meta, json.load(fh), RankIdentity.from_params(snakemake.params.identity), snakemake.input.ranks)
dropped = [k for k in snakemake.params.analysis["k_include"] if k > meta["vocab_size"]]
if dropped:
    log.warning("k values above |V| = %d left out for this model: %s", meta["vocab_size"], dropped)
summary, hist = summarize(arrays, meta, snakemake.params.analysis, snakemake.params.family)
write_npz(snakemake.output.hist, counts=hist)
write_json(snakemake.output.summary, summary)
totals = summary_totals(summary)
log.info(
    "%s / %s: CE %.4f, RBP_1 %.4f, lognormal mu %.3f sigma %.3f",
    summary["model"],
    summary["dataset"],
    METRICS["ce"].compute(totals),
    METRICS["rbp"].compute(totals)[summary["k"].index(1)],
    summary["lognormal"]["mu"],
    summary["lognormal"]["sigma"],
)
