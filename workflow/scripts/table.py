"""Rule table: summaries, their bootstrap replicates and the tables it needs -> one table of rankscale.tables.TABLES."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


import json
from pathlib import Path

from rankscale.atomic import atomic_path
from rankscale.logs import setup_logging
from rankscale.summary import load_replicates
from rankscale.tables import Replicates, build_table, read_table

log = setup_logging(snakemake.log[0])
summaries = [json.loads(Path(path).read_text()) for path in snakemake.input.summaries]
tables = {Path(path).stem: read_table(path) for path in snakemake.input.tables}
replicates = (
    Replicates(summaries, [load_replicates(path) for path in snakemake.input.replicates])
    if snakemake.input.replicates
    else None
)
df = build_table(snakemake.wildcards.table, summaries, tables, snakemake.params.settings, replicates)
with atomic_path(snakemake.output[0], suffix=".csv") as tmp:
    df.to_csv(tmp, index=False)  # full precision: papers quote these
log.info("%s: %d rows", snakemake.wildcards.table, len(df))
