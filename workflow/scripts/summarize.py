"""Rule summarize: one rank array -> RBP grid, CE, lognormal fit, N-token runs, histogram."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.atomic import write_json, write_npz
from rankscale.logs import setup_logging
from rankscale.rankfile import load_rank_arrays
from rankscale.summary import summarize

log = setup_logging(snakemake.log[0])
arrays, meta = load_rank_arrays(snakemake.input.ranks, snakemake.input.meta)
summary, hist = summarize(arrays, meta, snakemake.params.analysis, snakemake.params.family)
write_npz(snakemake.output.hist, counts=hist)
write_json(snakemake.output.summary, summary)
log.info(
    "%s / %s: CE %.4f, RBP_1 %.4f, lognormal mu %.3f sigma %.3f",
    summary["model"],
    summary["dataset"],
    summary["ce"],
    summary["rbp"]["1"],
    summary["lognormal"]["mu"],
    summary["lognormal"]["sigma"],
)
