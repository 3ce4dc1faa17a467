"""The result tables (results/tables/<name>.csv), built from per model x dataset summaries.

Each module holds its tables' builders with their captions side by side and lists them in its
`TABLES`; the `table` rule makes every table registered here, each in its own job, so changing
one table's settings reruns that table (and what reads it) only. Every interval is a percentile
interval over the document-level paired bootstrap replicates of the summaries (docs/science.md,
"Uncertainty"); a fit's interval comes from refitting it on every replicate. CONTRIBUTING.md,
"A new table", says how to add one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rankscale.summary import Summary
from rankscale.tables import cross_family, distribution, emergence, laws, metrics, seeds, strata, training
from rankscale.tables.base import Replicates, Table, TableInputs, TableSettings, read_table, typed
from rankscale.tables.selection import FitIndex, LawFit, LawKey, finals, select

TABLES: dict[str, Table] = {
    t.name: t for module in (metrics, laws, cross_family, distribution, emergence, training, seeds, strata) for t in module.TABLES
}


def build_table(
    name: str,
    summaries: Sequence[Summary],
    tables: Mapping[str, pd.DataFrame],
    settings: TableSettings,
    replicates: Replicates | None,
) -> pd.DataFrame:
    """Build table `name` from the summaries, the tables it needs and the bootstrap replicates."""
    table = TABLES[name]
    return table.build(TableInputs(list(summaries), settings, {n: tables[n] for n in table.needs}, replicates))


__all__ = [
    "TABLES",
    "FitIndex",
    "LawFit",
    "LawKey",
    "Replicates",
    "Table",
    "TableInputs",
    "TableSettings",
    "build_table",
    "finals",
    "read_table",
    "select",
    "typed",
]
