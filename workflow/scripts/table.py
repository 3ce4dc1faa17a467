"""Rule table: summaries, their bootstrap replicates and the tables it needs -> one table of rankscale.tables.TABLES
(CSV), and the page the report shows it in (HTML)."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

from rankscale.logs import setup_logging
from rankscale.report.pages import write_page
from rankscale.summary import SummaryPaths, load_replicates, load_unit_totals, read_summary
from rankscale.tables import Replicates, TableSettings, build_table, read_table, write_table
from rankscale.trajectories import load

log = setup_logging(snakemake.log[0])
summaries = [read_summary(path) for path in snakemake.input.summaries]
tables = {Path(path).stem: read_table(path) for path in snakemake.input.tables}
paths = [SummaryPaths.beside(p) for p in snakemake.input.summaries]
replicates = (
    Replicates(
        summaries,
        [load_replicates(s, p) for s, p in zip(summaries, paths, strict=True)],
        [load_unit_totals(s, p) for s, p in zip(summaries, paths, strict=True)],  # few documents' lack of fit
    )
    if snakemake.input.replicates
    else None
)
settings = TableSettings.from_params(snakemake.params.settings)
tracked = [load(Path(p).with_suffix(".npz"), p) for p in snakemake.input.trajectories]  # token trajectories
df = build_table(snakemake.wildcards.table, summaries, tables, settings, replicates, tracked)
write_table(snakemake.wildcards.table, df, snakemake.output.csv)  # with its header when it has no rows
# the report's page of it, made from the CSV as written (the source of truth)
write_page(snakemake.wildcards.table, snakemake.output.csv, snakemake.output.page, snakemake.params.caption)
log.info("%s: %d rows", snakemake.wildcards.table, len(df))
