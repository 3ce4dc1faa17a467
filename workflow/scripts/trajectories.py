"""Rule trajectories: a family's rank arrays on one dataset -> every scored token followed across its sizes,
checkpoints and seeds, counted per document and bootstrapped (rankscale.trajectories)."""

import json
import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

from rankscale.bootstrap import Resampling
from rankscale.identity import RankIdentity
from rankscale.logs import setup_logging
from rankscale.rankfile import check_provenance, load_rank_arrays, read_sidecar
from rankscale.token_kinds import check_token_table, load_token_table
from rankscale.tokens import corpus_units
from rankscale.trajectories import TrackedModel, TrajectorySettings, save, trajectories

log = setup_logging(snakemake.log[0])
family, dataset = snakemake.wildcards.family, snakemake.wildcards.dataset
settings = TrajectorySettings.from_params(snakemake.params.settings)
entries = snakemake.params.models
inputs = snakemake.input
metas = [read_sidecar(r, p) for r, p in zip(inputs.ranks, inputs.meta, strict=True)]
tokens_metas = [json.loads(Path(p).read_text()) for p in inputs.tokens_meta]
models = [TrackedModel.of(e["name"], e["info"], meta["S"]) for e, meta in zip(entries, metas, strict=True)]
identities = [RankIdentity.from_params(e["identity"]) for e in entries]


def read(i):
    """Model i's rank array, checked against its sidecar and against what the configuration says it scores."""
    arrays, meta = load_rank_arrays(inputs.ranks[i], inputs.meta[i])
    check_provenance(meta, tokens_metas[i], identities[i], inputs.ranks[i])
    return arrays, meta


# the reference the others align with (rankscale.trajectories.align): its token file maps documents to the corpus
ref = sorted(range(len(models)), key=lambda i: (not models[i].final, models[i].S, models[i].name))[0]
corpus_meta = json.loads(Path(inputs.corpus_meta).read_text())
bootstrap = Resampling.for_dataset(
    corpus_units(tokens_metas[ref], inputs.tokens_meta[ref]),
    int(corpus_meta["documents"]),
    settings.replicates,
    settings.seed,
    dataset,
)
vocab = min(int(m["vocab_size"]) for m in metas)
ks = [k for k in settings.ks if k <= vocab]
table = load_token_table(inputs.token_table[ref])
for i in range(len(models)):  # each model's token table is its rank array's tokenizer's
    check_token_table(inputs.token_table[i], metas[i], inputs.ranks[i])
result = trajectories(family, dataset, models, read, bootstrap, ks, settings.strata,
                      identities[ref].windows, table.kinds)  # fmt: skip
save(result, snakemake.output.counts, snakemake.output.meta)
for note in result.notes:
    log.warning("%s / %s: %s", family, dataset, note)
log.info("%s / %s: %d models aligned over %d tokens, %d sizes x %d chain(s), %d pairs of checkpoints or seeds",
         family, dataset, len(result.models), result.n_tokens, len(result.sizes), result.n_chains, len(result.pairs))  # fmt: skip
