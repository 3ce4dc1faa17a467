"""Rule extract: one model x one dataset -> rank array + provenance sidecar."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


import torch

from rankscale.extract_job import run
from rankscale.identity import RankIdentity
from rankscale.logs import setup_logging
from rankscale.rankfile import save_rank_arrays

setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
identity = RankIdentity.from_params(snakemake.params.identity)
arrays, meta = run(snakemake.params.job, identity, snakemake.wildcards.dataset, snakemake.input.tokens)
save_rank_arrays(arrays, snakemake.output.ranks, snakemake.output.meta, meta)
