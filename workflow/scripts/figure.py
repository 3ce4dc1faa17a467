"""Rule figure: the tables (rank histograms, bootstrap replicates) it reads -> one figure of rankscale.plots.FIGURES."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

from rankscale.laws import FORMS
from rankscale.logs import setup_logging
from rankscale.plots import FIGURES, FigureData
from rankscale.summary import SummaryPaths, load_histogram, load_replicates, read_summary
from rankscale.tables import Replicates, read_table

log = setup_logging(snakemake.log[0])
settings = snakemake.params.settings
datasets, models = settings["datasets"], settings["models"]
summaries = [read_summary(path) for path in snakemake.input.summaries]
paths = [SummaryPaths.beside(path) for path in snakemake.input.summaries]
data = FigureData(
    tables={Path(path).stem: read_table(path) for path in snakemake.input.tables},
    datasets=datasets,
    models=models,
    form=FORMS[settings["law_form"]] if settings["law_form"] else None,
    level=settings["level"],
    refits=settings["refits"],
    seed=settings["seed"],
    hists={s.key: load_histogram(s, p) for s, p in zip(summaries, paths, strict=True)} if snakemake.input.hists else {},
    replicates=Replicates(summaries, [load_replicates(s, p) for s, p in zip(summaries, paths, strict=True)])
    if snakemake.input.replicates
    else None,
)
FIGURES[snakemake.wildcards.figure].plot(data, settings, Path(snakemake.output.png))
log.info("wrote %s", snakemake.output.png)
