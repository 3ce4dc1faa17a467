"""A table as declared: its name, inputs, settings, caption and section, and where its builder lives.

Planning (the Snakefile, `rankscale check`, share) reads every table's declaration; only the table's own job imports
its builder. This module therefore imports neither pandas nor scipy nor any table module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from rankscale.registry import resolve

LAW_SETTINGS = ("level", "law_form", "refits", "seed")  # what a table that fits and refits laws reads


@dataclass(frozen=True)
class TableSettings:
    """The `analysis:` settings tables read (`rankscale.plan.table_settings` gives each table those it
    declares, so changing one reruns only the tables that read it; the others are None here). A new setting is a
    field here, with its default in workflow/schemas/config.schema.yaml and its line in docs/configuration.md; a property of
    `TableInputs` of its name types it (without one a builder gets the value as configured)."""

    # each field names where it sits under `analysis:` (rankscale.plan.settings reads it from there)
    level: float | None = field(metadata={"analysis": "bootstrap.level"})  # coverage of the percentile intervals
    # small k whose laws are tested out of sample and derived from the lognormal
    law_k: list[int] | None = field(metadata={"analysis": "law_k"})
    # the fit form behind powerlaw_fits.csv, contrasts, extrapolation and bands
    law_form: str | None = field(metadata={"analysis": "law_form"})
    forms: list[str] | None = field(metadata={"analysis": "forms"})  # the forms form_comparison.csv compares
    # replicates a form refitted one replicate at a time (offset_power_law) is refitted on
    refits: int | None = field(metadata={"analysis": "bootstrap.refits"})
    # the bootstrap's seed: the seed level of the hierarchical bootstrap draws from it too
    seed: int | None = field(metadata={"analysis": "bootstrap.seed"})

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TableSettings:
        unknown = set(params) - {f.name for f in fields(cls)}
        if unknown:
            raise KeyError(f"table settings {sorted(unknown)} are not fields of TableSettings")
        return cls(**{f.name: params.get(f.name) for f in fields(cls)})

    def get(self, name: str) -> Any:
        """A setting the table declared (`Table.settings`); reading an undeclared one is a bug, said so."""
        value = getattr(self, name)
        if value is None:
            raise KeyError(f"this table reads analysis setting {name!r} but does not declare it in Table.settings")
        return value

    def only(self, names: Sequence[str]) -> TableSettings:
        """These settings alone (a table's `Table.settings`), as the workflow gives them to its job."""
        return TableSettings.from_params({name: self.get(name) for name in names})



@dataclass(frozen=True)
class Table:
    name: str  # results/<run>/tables/<name>.csv
    # where its builder lives, "module:function" (a function of `TableInputs` returning the DataFrame): imported only
    # by the job that builds it (`builder`), so planning never loads pandas, scipy or the table modules
    build: str
    caption: str  # plain text with ``literal`` spans: its page and the report show it (rankscale.report.captions)
    section: str  # the analysis the report lists it under (rankscale.sections)
    needs: tuple[str, ...] = ()  # tables it is built from
    settings: tuple[str, ...] = ()  # the TableSettings it reads: `build` passes them on by name (`inputs.declared()`)
    summaries: bool = True  # reads every model x dataset summary
    resampled: bool = False  # reads every summary's bootstrap replicates
    trajectories: bool = False  # reads every family x dataset's token trajectories (rule `trajectories`)

    def builder(self) -> Callable[[Any], Any]:
        """Its builder, imported (the table's job alone does this)."""
        return resolve(self.build)
