"""Rule extract: one model x one dataset -> rank array + provenance sidecar."""

import json
import os
import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment

# compute jobs never reach the Hub (many clusters' compute nodes cannot): hub models were fetched by rule
# `download` on the host that runs snakemake, and load from the cache (set before transformers is imported)
os.environ["HF_HUB_OFFLINE"] = "1"

import torch

from rankscale.extract_job import run
from rankscale.identity import RankIdentity
from rankscale.logs import setup_logging
from rankscale.rankfile import save_rank_arrays

setup_logging(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
identity = RankIdentity.from_params(snakemake.params.identity)
records = snakemake.input.get("downloads", [])
downloads = [json.loads(open(path).read()) for path in ([records] if isinstance(records, str) else records)]
arrays, meta = run(snakemake.params.job, identity, snakemake.params.dataset, snakemake.input.tokens, downloads)
save_rank_arrays(arrays, snakemake.output.ranks, snakemake.output.meta, meta)
