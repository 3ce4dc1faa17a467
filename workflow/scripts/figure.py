"""Rule figure: the tables (and rank histograms) it reads -> one figure of rankscale.plots.FIGURES."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

import numpy as np

from rankscale.logs import setup_logging
from rankscale.plots import FIGURES, FigureData
from rankscale.tables import read_table

log = setup_logging(snakemake.log[0])
settings = snakemake.params.settings
datasets, models = settings["datasets"], settings["models"]
hists = {}
for path, key in zip(snakemake.input.hists, [(m, d) for m in models for d in datasets], strict=True):
    with np.load(path) as data:
        hists[key] = data["counts"]
data = FigureData(
    tables={Path(path).stem: read_table(path) for path in snakemake.input.tables},
    datasets=datasets,
    models=models,
    hists=hists,
)
FIGURES[snakemake.wildcards.figure].plot(data, settings, Path(snakemake.output.png))
log.info("wrote %s", snakemake.output.png)
