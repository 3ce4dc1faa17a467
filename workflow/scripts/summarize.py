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
from rankscale.token_kinds import check_token_table, load_token_table
from rankscale.tokens import corpus_units

log = setup_logging(snakemake.log[0])
arrays, meta = load_rank_arrays(snakemake.input.ranks, snakemake.input.meta)
tokens_meta = json.loads(Path(snakemake.input.tokens_meta).read_text())
check_provenance(meta, tokens_meta, RankIdentity.from_params(snakemake.params.identity), snakemake.input.ranks)
settings = SummarySettings.from_params(snakemake.params.settings)
dropped = [k for k in settings.k_include if k > meta["vocab_size"]]
written = [k for k in dropped if k not in snakemake.params.default_k]  # the defaults' large k: said, not warned of
if written:
    log.warning("k values above |V| = %d left out for this model: %s", meta["vocab_size"], written)
if len(written) < len(dropped):
    log.info("default k values above |V| = %d left out: %s", meta["vocab_size"], sorted(set(dropped) - set(written)))
info = ModelInfo(**snakemake.params.model)
corpus_meta = json.loads(Path(snakemake.input.corpus_meta).read_text())
if tokens_meta.get("corpus_sha256") not in (None, corpus_meta["sha256"]):
    raise ValueError(f"{snakemake.input.tokens_meta}: tokenized from another corpus than {snakemake.input.corpus_meta}")
resampling = Resampling.for_dataset(
    corpus_units(tokens_meta, snakemake.input.tokens_meta),
    corpus_meta["documents"],
    replicates=settings.replicates,
    seed=settings.seed,
    dataset=snakemake.params.dataset,
)
if resampling.n_units < 20:
    log.warning(
        "the bootstrap resamples only %d documents: with so few, its intervals are rough and often too narrow",
        resampling.n_units,
    )
identity = RankIdentity.from_params(snakemake.params.identity)
token_table = load_token_table(snakemake.input.token_table)  # token kinds (the kind stratum), byte lengths (bpb)
check_token_table(snakemake.input.token_table, meta, snakemake.input.ranks)  # of the rank array's tokenizer
summary, hist, boot = summarize(
    arrays, meta, settings, resampling, info, identity.windows, token_table.kinds, token_table.n_bytes
)
summary = write_summary(summary, hist, boot, SummaryPaths.beside(snakemake.output.summary))
totals = summary.totals()
log.info(
    "%s / %s: CE %.4f (%.4f bits per byte), RBP_1 %.4f, lognormal mu %.3f sigma %.3f, %d documents, "
    "%d bootstrap replicates",
    summary.model,
    summary.dataset,
    METRICS["ce"].compute(totals),
    METRICS["bpb"].compute(totals),
    METRICS["rbp"].compute(totals)[summary.k.index(1)],
    summary.distribution.mu,
    summary.distribution.sigma,
    summary.n_documents,
    resampling.replicates,
)
