"""The result tables (results/<run>/tables/<name>.csv), built from per model x dataset summaries.

Each table is declared in `rankscale.tables.entries.<topic>` (its name, inputs, settings, caption, section, and its
builder as "module:function"), and built by a function of the topic module `rankscale.tables.<topic>`, which only the
table's own job imports (`build_table`): planning reads the declarations without pandas or scipy. The `table` rule
makes every table registered here, each in its own job, so changing
one table's settings reruns that table (and what reads it) only. Every interval is a percentile
interval over the document-level paired bootstrap replicates of the summaries (docs/science.md,
"Uncertainty"); a fit's interval comes from refitting it on every replicate. CONTRIBUTING.md,
"A new table", says how to add one.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankscale.atomic import atomic_path
from rankscale.registry import Registry
from rankscale.tables.declaration import Table, TableSettings

if TYPE_CHECKING:
    import pandas as pd

    from rankscale.summary import Summary
    from rankscale.tables.base import Replicates

# the topics, in the order their tables are listed; each declares its tables in rankscale.tables.entries.<topic>
# (imported by name, so that `rankscale.tables.<topic>` stays the topic's implementation module)
TOPICS = (
    "metrics",
    "laws",
    "claims",
    "extrapolation",
    "cross_family",
    "families",
    "distribution",
    "emergence",
    "training",
    "seeds",
    "strata",
    "tokens",
    "calibration",
)
MODULES = tuple(importlib.import_module(f"rankscale.tables.entries.{topic}") for topic in TOPICS)
TABLES: Registry[Table] = Registry("table", (t for module in MODULES for t in module.TABLES), lambda t: t.name)

# what a table job imports, by name, when it asks for it (PEP 562): `import rankscale.tables` stays light
LAZY = {
    "Replicates": "rankscale.tables.base",
    "TableInputs": "rankscale.tables.base",
    "read_table": "rankscale.tables.base",
    "typed": "rankscale.tables.base",
    "FitIndex": "rankscale.tables.selection",
    "LawFit": "rankscale.tables.selection",
    "LawKey": "rankscale.tables.selection",
    "finals": "rankscale.tables.selection",
    "select": "rankscale.tables.selection",
}


def __getattr__(name: str) -> Any:
    if name in LAZY:
        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_table(
    name: str,
    summaries: Sequence[Summary],
    tables: Mapping[str, pd.DataFrame],
    settings: TableSettings,
    replicates: Replicates | None,
    trajectories: Sequence[Any] | None = None,
) -> pd.DataFrame:
    """Build table `name` from the summaries, the tables it needs, the bootstrap replicates and the token
    trajectories (`rankscale.trajectories.TrajectoryResult`, for a table that reads them), with the builder its
    entry names (imported here, by the table's job)."""
    from rankscale.tables.base import TableInputs

    table = TABLES[name]
    declared = settings.only(table.settings)  # what its job gets: the settings it declares alone
    tracked = list(trajectories or []) if table.trajectories else None
    needed = {n: tables[n] for n in table.needs}
    return table.builder()(TableInputs(list(summaries), declared, needed, replicates, tracked))


def write_table(name: str, frame: pd.DataFrame, path: str | Path) -> None:
    """Write table `name` to `path` as CSV, at full precision (papers quote these), under a temporary name renamed
    into place. A table keeps its header when it has no rows: a frame without column names is refused, since its
    file would be one newline, which pandas.read_csv refuses (its builder returns its columns: `base.rows_frame`)."""
    if len(frame.columns) == 0:
        raise ValueError(
            f"table {name!r} has no column names: its builder must give its columns when it has no rows "
            "(rankscale.tables.base.rows_frame), so that its file keeps a header"
        )
    with atomic_path(path, suffix=".csv") as tmp:
        frame.to_csv(tmp, index=False)


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
    "write_table",
]
