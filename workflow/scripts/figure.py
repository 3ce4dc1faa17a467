"""Rule figure: the tables (rank histograms, bootstrap replicates) it reads -> one figure of rankscale.plots.FIGURES."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

from rankscale.logs import setup_logging
from rankscale.plots import FIGURES, FigureSettings
from rankscale.plots.common import FigureData
from rankscale.summary import SummaryPaths, load_histogram, load_replicates, read_summary
from rankscale.tables.base import Replicates, read_table

log = setup_logging(snakemake.log[0])
entry = FIGURES[snakemake.wildcards.figure]
plot = entry.plotter()  # its topic module alone (rankscale.plots.<topic>), with matplotlib
settings = FigureSettings.from_params(snakemake.params.settings)
summaries = [read_summary(path) for path in snakemake.input.summaries]
paths = [SummaryPaths.beside(path) for path in snakemake.input.summaries]
data = FigureData.drawn_with(
    settings,
    tables={Path(path).stem: read_table(path) for path in snakemake.input.tables},
    replicates=Replicates(summaries, [load_replicates(s, p) for s, p in zip(summaries, paths, strict=True)])
    if snakemake.input.replicates
    else None,
    hists={s.key: load_histogram(s, p) for s, p in zip(summaries, paths, strict=True)} if snakemake.input.hists else {},
)
plot(data, settings, Path(snakemake.output.png))
log.info("wrote %s", snakemake.output.png)
