"""What every figure job shares: the data it is drawn from, saving, layout, colours, intervals
that stay inside their panel and legends that stay off the data."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.legend import Legend  # noqa: E402
from matplotlib.transforms import ScaledTranslation  # noqa: E402

from rankscale.atomic import atomic_path  # noqa: E402
from rankscale.laws import FitForm  # noqa: E402
from rankscale.plots.declaration import CLIP_NOTE, Figure, FigureSettings  # noqa: E402, F401  (re-exported)
from rankscale.tables import Replicates  # noqa: E402

S_LABEL = "non-embedding parameters $S$"
CLIPPED_LABEL = "interval runs past the panel (arrow)"
DEGENERATE_LABEL = "degenerate interval (hollow, ringed)"
BELOW = "rankscale:legend-below"  # gid of an axes legend that `save` places under the axes' x label


@dataclass(frozen=True)
class FigureData:
    """What a figure is drawn from: the tables it reads (by name), rank histograms, the run's order,
    and for the figures that draw laws and bands, the fit form and the bootstrap replicates. Its names mean what
    they mean in `FigureSettings`: `form` the `FitForm` (None where the figure draws no fits), never its name
    `law_form`; a figure job makes it from its settings in one step (`drawn_with`)."""

    tables: dict[str, pd.DataFrame]
    datasets: list[str]
    models: list[str]
    form: FitForm | None  # analysis.law_form: the form powerlaw_fits.csv holds (figures that draw fits)
    level: float | None  # coverage of the bands drawn (analysis.bootstrap.level; figures with replicates)
    refits: int | None  # replicates a form without a closed form is refitted on (analysis.bootstrap.refits)
    seed: int | None  # the bootstrap's seed, for the seed level of the bands where sizes have several seeds
    replicates: Replicates | None  # for figures that draw bands (`resampled`)
    hists: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (model, dataset) -> counts

    @classmethod
    def drawn_with(
        cls,
        settings: FigureSettings,
        tables: dict[str, pd.DataFrame],
        replicates: Replicates | None,
        hists: dict[tuple[str, str], np.ndarray],
    ) -> FigureData:
        """A figure job's data: its settings' datasets, models, form, level, refits and seed, with what it read."""
        return cls(tables=tables, datasets=settings.datasets, models=settings.models, form=settings.form,
                   level=settings.level, refits=settings.refits, seed=settings.seed, replicates=replicates,
                   hists=hists)  # fmt: skip

    @property
    def fits_form(self) -> FitForm:
        """`form`, for a figure that draws fits (which always has one)."""
        assert self.form is not None, "a figure that draws fits declares powerlaw_fits among its tables"
        return self.form


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


def _place_legends_below(fig: plt.Figure) -> None:
    """Hang every `legend_below` legend just under its axes' tick labels and x label, as measured now."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or legend.get_gid() != BELOW:
            continue
        labels = ax.xaxis.get_tightbbox(renderer)
        drop = max(ax.bbox.y0 - labels.y0, 0.0) if labels is not None else 0.0  # pixels
        legend.set_bbox_to_anchor(
            (0.5, 0.0), transform=ax.transAxes + ScaledTranslation(0.0, -drop / fig.dpi, fig.dpi_scale_trans)
        )


def save(fig: plt.Figure, png: str | Path) -> None:
    """Lay out `fig` (legends outside the axes included: the file grows to hold them), then write `png` and
    the PDF beside it, each atomically."""
    _unlog_empty_axes(fig)
    _place_legends_below(fig)
    fig.tight_layout()
    _place_legends_below(fig)  # the layout moved the axes; the drop below each stays as measured
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


def _legend_entries(axes: Sequence[Any]) -> tuple[list[Artist], list[str]]:
    """Every labelled artist of `axes`, each label once in the order drawn; the marks of clipped and
    degenerate intervals last."""
    entries: dict[str, Artist] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    order = sorted(entries, key=lambda label: label in (CLIPPED_LABEL, DEGENERATE_LABEL))
    return [entries[label] for label in order], order


def legend_below(ax: Any, **kwargs: Any) -> Legend | None:
    """`ax`'s legend under the panel, below its x label (placed by `save`), so it covers no data."""
    handles, labels = _legend_entries([ax])
    if not handles:
        return None
    legend = ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), **kwargs)
    legend.set_gid(BELOW)
    return legend


def figure_legend(fig: plt.Figure, **kwargs: Any) -> Legend | None:
    """One legend for all panels (each label once), under the lowest row, outside every axes."""
    handles, labels = _legend_entries(fig.axes)
    if not handles:
        return None
    return fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), **kwargs)


def panel_note(ax: Any, text: str, blank: bool = False) -> None:
    """Say in the panel why it holds no data or no law (one size, no checkpoints, ...) instead of leaving it mute;
    `blank`: the panel has nothing else, so no axes either."""
    if blank:
        ax.axis("off")
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, color="0.25")


def _mark_entry(ax: Any, label: str, **style: Any) -> None:
    if label not in ax.get_legend_handles_labels()[1]:
        ax.plot([], [], ls="none", color="0.3", label=label, **style)


def clipped_errorbar(
    ax: Any,
    x: Any,
    y: Any,
    low: Any,
    high: Any,
    *,
    ylim: tuple[float, float] | None = None,
    marker: str = "o",
    color: Any = None,
    ms: float = 5,
    mfc: Any = None,
    lw: float = 1.0,
    capsize: float = 2.0,
    label: str | None = None,
) -> tuple[int, int]:
    """Points (x, y) with their intervals [low, high] (bounds, not offsets), every bar inside the panel.

    A bound that is infinite or missing (NaN), not positive on a log y axis (set the scale first), or beyond
    `ylim` (the panel's y range, when the caller fixes it with `ax.set_ylim(ylim)`) is not drawn: the bar is
    solid up to the point, then dotted to the panel's edge (in axes coordinates, wherever autoscaling puts
    it), where an arrowhead ends it instead of a cap. A degenerate interval, of zero width or with no bound at
    all, gets no bar, a hollow marker and a grey ring. The bounds may come in either order (a decreasing
    transform such as -log swaps them); a missing one lies on the side of y the other does not. Points with y
    not finite (or not positive on a log axis) are left out. The first clipped or degenerate interval on `ax`
    adds a legend entry saying what its mark means. Returns the number of (clipped, degenerate) intervals.
    """
    x, y, low, high = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64).ravel() for v in (x, y, low, high)))
    log = ax.get_yscale() == "log"
    shown = np.isfinite(x) & np.isfinite(y) & ((y > 0) | (not log))
    x, y, low, high = x[shown], y[shown], low[shown], high[shown]
    nan_low, nan_high = np.isnan(low), np.isnan(high)
    swap = np.where(nan_low | nan_high, np.where(nan_low, high < y, low > y) & (nan_low != nan_high), low > high)
    low, high = np.where(swap, high, low), np.where(swap, low, high)
    bottom, top = ylim if ylim is not None else (-np.inf, np.inf)
    low_ok = np.isfinite(low) & (low >= bottom) & ((low > 0) | (not log))
    high_ok = np.isfinite(high) & (high <= top) & ((high > 0) | (not log))
    finite = np.isfinite(low) & np.isfinite(high)
    degenerate = (nan_low & nan_high) | (finite & (np.abs(high - low) <= 1e-12 * np.abs(y)))
    normal = ~degenerate
    marker = "none" if marker in ("", "none", None) else marker
    ax.plot(x[normal], y[normal], marker=marker, ls="none", color=color, ms=ms, mfc=mfc, label=label)
    # solid: the interval's part from a drawn end to the point (all of it if both ends are drawn); dotted: the
    # rest, from there to the bottom (0) or top (1) edge of the panel, where an arrowhead ends it
    solid_low = np.where(low_ok, low, np.where(high_ok, np.fmin(high, y), y))
    solid_high = np.where(high_ok, high, np.where(low_ok, np.fmax(low, y), y))
    bars = normal & (solid_high > solid_low)
    if bars.any():
        ax.vlines(x[bars], solid_low[bars], solid_high[bars], color=color, lw=lw)
    caps = [(x[normal & ok], bound[normal & ok]) for ok, bound in ((low_ok, low), (high_ok, high))]
    cap_x, cap_y = np.concatenate([c[0] for c in caps]), np.concatenate([c[1] for c in caps])
    if cap_x.size:
        ax.plot(cap_x, cap_y, marker="_", ls="none", color=color, ms=2 * capsize, mew=lw)
    clipped = normal & ~(low_ok & high_ok)
    line = {"arrowstyle": "-", "color": color, "lw": 0.8 * lw, "ls": ":", "shrinkA": 0, "shrinkB": 0}
    head = {"arrowstyle": "-|>", "color": color, "lw": lw, "shrinkA": 0, "shrinkB": 0, "mutation_scale": 8}
    for i in np.flatnonzero(clipped):
        for edge, start in ((0.0, solid_low[i]), (1.0, solid_high[i])):
            if (low_ok if edge == 0.0 else high_ok)[i]:
                continue
            where = {"xy": (x[i], edge), "xycoords": ("data", "axes fraction")}
            ax.annotate("", **where, xytext=(x[i], start), textcoords="data", arrowprops=line)
            ax.annotate("", **where, xytext=(0, 9 if edge == 0 else -9), textcoords="offset points", arrowprops=head)
    if degenerate.any():
        ax.plot(x[degenerate], y[degenerate], marker=marker, ls="none", color=color, ms=ms, mfc="none")
        ax.plot(x[degenerate], y[degenerate], "o", ls="none", ms=2.4 * ms, mfc="none", mec="0.5", mew=0.7)
    if clipped.any():
        _mark_entry(ax, CLIPPED_LABEL, marker="$\\uparrow$", ms=7)
    if degenerate.any():
        _mark_entry(ax, DEGENERATE_LABEL, marker="o", ms=7, mfc="none", mec="0.5", mew=0.7)
    return int(clipped.sum()), int(degenerate.sum())


def readable_log_ticks(ax: Any, axis: str = "y") -> None:
    """Tick labels a reader can use on a log axis: under a decade, a few evenly spaced ticks labelled with
    the digits they need; up to three decades, 1, 2, 3 and 5 of each as plain numbers (20, not 2 x 10^1);
    beyond, matplotlib's powers of ten."""
    low, high = ax.get_ylim() if axis == "y" else ax.get_xlim()
    target = ax.yaxis if axis == "y" else ax.xaxis
    if low <= 0:
        return
    if high / low < 10:
        target.set_major_locator(ticker.MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
        target.set_minor_locator(ticker.NullLocator())
        target.set_major_formatter(ticker.ScalarFormatter(useOffset=False))
    elif high / low <= 1e3:  # 1, 2, 3, 5 in every decade, as plain numbers (0.2, not 2 x 10^-1)
        target.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
        target.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        target.set_minor_formatter(ticker.NullFormatter())


def say_left_out(ax: Any, what: str, models: Sequence[str]) -> None:
    """Say on the panel which models' fits are not drawn: a fit at a bound is a limit, not a result, and a
    reader must not take its absence for missing data. The text sits between the panel's title (call this after
    setting it) and its top edge, so it covers no point."""
    if not len(models):
        return
    lines = textwrap.wrap(what + ", ".join(models), width=80)
    ax.text(0.5, 1.01, "\n".join(lines), transform=ax.transAxes, ha="center", va="bottom", fontsize=6, color="0.2")
    ax.set_title(ax.get_title(), pad=6.0 + 7.5 * len(lines))


def nothing_to_draw(ax: Any, why: str) -> None:
    """An empty panel that says why (one model per family, every fit at a bound), rather than a blank or a crash."""
    ax.axis("off")
    ax.text(0.5, 0.5, f"nothing to draw: {why}", transform=ax.transAxes, ha="center", va="center", fontsize=8,
            wrap=True)  # fmt: skip
