"""A figure as declared: its name, the tables and settings it reads, its caption and place in the report, and where
its plot function lives; and the settings its job is drawn with.

Planning (the Snakefile, `rankscale check`, share) reads every figure's declaration; only the figure's own job
imports its plot function, and with it matplotlib. This module imports neither matplotlib nor scipy nor pandas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from rankscale.registry import resolve
from rankscale.sections import subcategory

if TYPE_CHECKING:
    from rankscale.laws import FitForm

CLIP_NOTE = (
    "An interval bound that is unbounded (infinite or missing), cannot sit on the axis (not positive on a log "
    "axis) or lies beyond the panel is not drawn: its bar goes on dotted to the panel's edge and ends there in "
    "an arrowhead instead of a cap. A degenerate interval (zero width, or no bounds at all) gets no bar and a "
    "hollow marker in a grey ring, so it never looks like a precise point."
)

@dataclass(frozen=True)
class FigureSettings:
    """What one figure job is drawn with, typed once from its params (`rankscale.plan.figure_settings` makes them
    from the validated configuration): the `figures:` keys the figure declares (`Figure.settings`; the others
    are None here), the datasets and models it draws, the law form, and its bands' level, refits and seed. A new
    `figures:` key is a field here, with its default in workflow/schemas/config.schema.yaml."""

    rbp_k: list[int] | None = None  # figures.rbp_k: the k of Fig. 4
    large_k: list[int] | None = None  # figures.large_k: the k of Fig. 5
    emergence_extrapolate: float | None = None  # figures.emergence_extrapolate: decades Fig. 7b draws beyond
    snr_threshold: float | None = None  # figures.snr_threshold: Fig. 6 marks the k below it
    datasets: list[str] = field(default_factory=list)  # the run's datasets, in order (the figure's columns)
    models: list[str] = field(default_factory=list)  # models whose histograms or replicates it reads
    law_form: str | None = None  # analysis.law_form, for a figure that draws fits
    level: float | None = None  # analysis.bootstrap.level, for a figure with bands
    refits: int | None = None  # analysis.bootstrap.refits
    seed: int | None = None  # analysis.bootstrap.seed

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FigureSettings:
        unknown = set(params) - {f.name for f in fields(cls)}
        if unknown:
            raise KeyError(f"figure settings {sorted(unknown)} are not fields of FigureSettings")
        return cls(**params)

    def get(self, name: str) -> Any:
        """A `figures:` setting the figure declared (`Figure.settings`); reading an undeclared one is a bug, said so."""
        value = getattr(self, name)
        if value is None:
            raise KeyError(f"this figure reads figures setting {name!r} but does not declare it in Figure.settings")
        return value

    @property
    def form(self) -> FitForm | None:
        """The `FitForm` `law_form` names, which powerlaw_fits.csv holds, for a figure that draws fits (None for the
        others)."""
        from rankscale.laws import FORMS  # the fits' code: a figure job's, never planning's

        return FORMS[self.law_form] if self.law_form else None



@dataclass(frozen=True)
class Figure:
    name: str  # results/<run>/figures/<name>.png and .pdf
    # where its plot function `(data, settings, png path)` lives, "module:function": imported only by the job that
    # draws it (`plotter`), so planning never loads matplotlib and a figure job only its own topic module
    plot: str
    caption: str  # plain text with ``literal`` spans, escaped for the report (rankscale.report.captions)
    tables: tuple[str, ...]  # results/<run>/tables/<name>.csv it reads
    section: str  # the analysis the report lists it under (rankscale.sections)
    number: str  # its figure number ("8b"): the report lists a section's figures in this order
    title: str  # a few words, shown beside the number in the report's list (no braces: Snakemake expands them)
    settings: tuple[str, ...] = ()  # keys of `figures:` it reads (changing one reruns this figure only)
    k_settings: tuple[str, ...] = ()  # those of `settings` that hold k values: they join the k grid
    hists: bool = False  # reads every model x dataset rank histogram
    resampled: bool = False  # reads every summary and its bootstrap replicates (bands, intervals)
    needs: str | None = None  # "checkpoints" or "seeds": a run without any leaves it out (`rankscale.plots.left_out`)

    @property
    def subcategory(self) -> str:
        """The report's subcategory: the figure's section, numbered in paper order."""
        return subcategory(self.section)

    def labels(self) -> dict[str, str]:
        """The report's entry for it: number and title, so entries read and sort in paper order. One label only:
        Snakemake's report turns a second label with two values, each on half the entries (two figures with two
        titles), into a toggle between them, which fails to open either."""
        return {"figure": f"Fig. {self.number}: {self.title}"}

    @property
    def reads_fits(self) -> bool:
        """Draws fitted laws of powerlaw_fits.csv: it needs to know their form."""
        return "powerlaw_fits" in self.tables

    def plotter(self) -> Callable[..., None]:
        """Its plot function, imported (the figure's job alone does this)."""
        return resolve(self.plot)
