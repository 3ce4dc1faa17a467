"""Rule summarize: one rank array -> totals, per-document statistics and bootstrap replicates, histogram."""

import json
import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

from rankscale.identity import RankIdentity
from rankscale.logs import setup_logging
from rankscale.metrics import METRICS
from rankscale.rankfile import check_provenance, load_rank_arrays
from rankscale.summary import ModelInfo, Resampling, SummaryPaths, SummarySettings, summarize, write_summary
from rankscale.token_kinds import load_kind_table
from rankscale.tokens import corpus_units

log = setup_logging(snakemake.log[0])
arrays, meta = load_rank_arrays(snakemake.input.ranks, snakemake.input.meta)
tokens_meta = json.loads(Path(snakemake.input.tokens_meta).read_text())
check_provenance(meta, tokens_meta, RankIdentity.from_params(snakemake.params.identity), snakemake.input.ranks)
settings = SummarySettings.from_params(snakemake.params.settings)
dropped = [k for k in settings.k_include if k > meta["vocab_size"]]
if dropped:
    log.warning("k values above |V| = %d left out for this model: %s", meta["vocab_size"], dropped)
info = ModelInfo(**snakemake.params.model)
family_units = [corpus_units(json.loads(Path(p).read_text()), p) for p in snakemake.input.family_tokens_meta]
resampling = Resampling.for_family(
    corpus_units(tokens_meta, snakemake.input.tokens_meta),
    family_units,
    replicates=settings.replicates,
    seed=settings.seed,
    family_name=info.family,
    dataset=snakemake.wildcards.dataset,
)
if resampling.n_units < 20:
    log.warning(
        "the bootstrap resamples only %d documents: with so few, its intervals are rough and often too narrow",
        resampling.n_units,
    )
identity = RankIdentity.from_params(snakemake.params.identity)
kinds = list(snakemake.input.kinds)  # none where the `kind` stratum is off
kind_table = load_kind_table(kinds[0]) if kinds else None
summary, hist, boot = summarize(arrays, meta, settings, resampling, info, identity.windows, kind_table)
summary = write_summary(summary, hist, boot, SummaryPaths.beside(snakemake.output.summary))
totals = summary.totals()
log.info(
    "%s / %s: CE %.4f, RBP_1 %.4f, lognormal mu %.3f sigma %.3f, %d documents, %d bootstrap replicates",
    summary.model,
    summary.dataset,
    METRICS["ce"].compute(totals),
    METRICS["rbp"].compute(totals)[summary.k.index(1)],
    summary.distribution.mu,
    summary.distribution.sigma,
    summary.n_documents,
    resampling.replicates,
)
