"""What every figure shares: the registry entry, the data it is drawn from, saving, layout, colours."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rankscale.atomic import atomic_path  # noqa: E402
from rankscale.laws import FitForm  # noqa: E402
from rankscale.tables import Replicates  # noqa: E402

S_LABEL = "non-embedding parameters $S$"


@dataclass(frozen=True)
class FigureData:
    """What a figure is drawn from: the tables it reads (by name), rank histograms, the run's order,
    and for the figures that draw laws and bands, the fit form and the bootstrap replicates."""

    tables: dict[str, pd.DataFrame]
    datasets: list[str]
    models: list[str]
    form: FitForm | None  # analysis.law_form: the form powerlaw_fits.csv holds (figures that draw fits)
    level: float | None  # coverage of the bands drawn (analysis.bootstrap.level; figures with replicates)
    refits: int | None  # replicates a form without a closed form is refitted on (analysis.bootstrap.refits)
    replicates: Replicates | None  # for figures that draw bands (`resampled`)
    hists: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (model, dataset) -> counts

    @property
    def law_form(self) -> FitForm:
        assert self.form is not None, "a figure that draws fits declares powerlaw_fits among its tables"
        return self.form


@dataclass(frozen=True)
class Figure:
    name: str  # results/figures/<name>.png and .pdf
    plot: Callable[[FigureData, Mapping[str, Any], Path], None]  # (data, settings, png path)
    caption: str  # reStructuredText, shown in the Snakemake report
    tables: tuple[str, ...]  # results/tables/<name>.csv it reads
    settings: tuple[str, ...] = ()  # keys of `figures:` it reads (changing one reruns this figure only)
    k_settings: tuple[str, ...] = ()  # those of `settings` that hold k values: they join the k grid
    hists: bool = False  # reads every model x dataset rank histogram
    resampled: bool = False  # reads every summary and its bootstrap replicates (bands, intervals)

    @property
    def reads_fits(self) -> bool:
        """Draws fitted laws of powerlaw_fits.csv: it needs to know their form."""
        return "powerlaw_fits" in self.tables


def _unlog_empty_axes(fig: plt.Figure) -> None:
    """A log axis with nothing positive on it cannot be drawn at all (matplotlib raises): such a panel
    (every N-run rate 0, no size left to hold out, ...) turns linear and says so instead of failing the job."""
    for ax in fig.axes:
        empty = False
        for axis, lim, limits in (("x", ax.get_xlim, ax.dataLim.intervalx), ("y", ax.get_ylim, ax.dataLim.intervaly)):
            scale = ax.get_xscale() if axis == "x" else ax.get_yscale()
            if scale == "log" and not (np.all(np.isfinite(limits)) and limits[1] > 0 and lim()[0] > 0):
                ax.set_xscale("linear") if axis == "x" else ax.set_yscale("linear")
                empty = True
        if empty:
            ax.text(0.5, 0.5, "nothing positive to draw on log axes", transform=ax.transAxes, ha="center", fontsize=8)


def save(fig: plt.Figure, png: str | Path) -> None:
    """Lay out `fig`, then write `png` and the PDF beside it, each atomically."""
    _unlog_empty_axes(fig)
    fig.tight_layout()
    png = Path(png)
    for path in (png, png.with_suffix(".pdf")):
        with atomic_path(path, suffix=path.suffix) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], dpi=150, bbox_inches="tight")
    plt.close(fig)


def grid(rows: int, cols: int, w: float = 4.2, h: float = 3.4) -> tuple[plt.Figure, np.ndarray]:
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False)
    return fig, axes


def colors(families: Sequence[str]) -> dict[str, str]:
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {f: cycle[i % len(cycle)] for i, f in enumerate(sorted(families))}


def cycle_color(i: int) -> str:
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return cycle[i % len(cycle)]
