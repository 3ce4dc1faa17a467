"""Rule tables: all summaries -> metrics, power-law, lognormal and emergence CSV tables."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


import json

from rankscale.atomic import atomic_path
from rankscale.logs import setup_logging
from rankscale.tables import emergence_table, lognormal_table, metrics_table, powerlaw_table

log = setup_logging(snakemake.log[0])
summaries = [json.load(open(path)) for path in snakemake.input]
metrics = metrics_table(summaries)
powerlaw = powerlaw_table(metrics)
tables = {
    "metrics": metrics,
    "powerlaw": powerlaw,
    "lognormal": lognormal_table(summaries),
    "emergence": emergence_table(summaries, powerlaw),
}
for name, df in tables.items():
    with atomic_path(snakemake.output[name], suffix=".csv") as tmp:
        df.to_csv(tmp, index=False)  # full precision: papers quote these
    log.info("%s: %d rows", name, len(df))
