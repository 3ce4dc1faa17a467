"""Rule figure: the tables (rank histograms, bootstrap replicates) it reads -> one figure of rankscale.plots.FIGURES."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


import json
from pathlib import Path

import numpy as np

from rankscale.logs import setup_logging
from rankscale.plots import FIGURES, FigureData
from rankscale.summary import load_replicates
from rankscale.tables import Replicates, read_table

log = setup_logging(snakemake.log[0])
settings = snakemake.params.settings
datasets, models = settings["datasets"], settings["models"]
hists = {}
keys = [(m, d) for m in models for d in datasets] if snakemake.input.hists else []
for path, key in zip(snakemake.input.hists, keys, strict=True):
    with np.load(path) as data:
        hists[key] = data["counts"]
replicates = None
if snakemake.input.replicates:
    summaries = [json.loads(Path(path).read_text()) for path in snakemake.input.summaries]
    replicates = Replicates(summaries, [load_replicates(path) for path in snakemake.input.replicates])
data = FigureData(
    tables={Path(path).stem: read_table(path) for path in snakemake.input.tables},
    datasets=datasets,
    models=models,
    hists=hists,
    replicates=replicates,
    level=settings["level"] if replicates else 1.0,
)
FIGURES[snakemake.wildcards.figure].plot(data, settings, Path(snakemake.output.png))
log.info("wrote %s", snakemake.output.png)
