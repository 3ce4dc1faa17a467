"""One family's law on a panel: its points with clipped error bars, the fitted law (drawn on, dashed, to the
sizes of other families' models) and the law's bootstrap band. Shared by the figures of laws and of the
lognormal conjecture's implied laws."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rankscale.bootstrap import interval
from rankscale.laws import Points
from rankscale.plots.common import FigureData, clipped_errorbar
from rankscale.tables import LawKey
from rankscale.tables.lawkit import LawRefits
from rankscale.tables.selection import LawFit, n_sizes


def draw_law(
    ax: Any,
    data: FigureData,
    family: str,
    dataset: str,
    law: str,
    k: int | None,
    color: str,
    marker: str = "o",
    series: str = "",
    reach: tuple[float, float] | None = None,
    name_points: bool = False,
) -> bool:
    """One family's points with error bars (clipped to the panel: set its log scales first), its fitted law and
    the law's bootstrap band; False if nothing to draw. `reach`: sizes beyond the family's own the law is drawn
    out to (dashed, band included), where other families' models sit. A family of one size has no law: its points
    alone, said so in the legend (and named beside them with `name_points`)."""
    key = LawKey(family, dataset, law, k)
    metric = key.metric
    group = key.points(data.tables["metrics"])
    y = metric.to_law(group["value"].to_numpy(float))
    ok = y > 0
    if not ok.any():
        return False
    with np.errstate(divide="ignore", invalid="ignore"):  # -log of a bound of 0 is unbounded: clipped, marked
        bounds = metric.to_law(group[["ci_low", "ci_high"]].to_numpy(float))
    s_ok = group["S"].to_numpy(float)[ok]
    ms = 10 if marker == "*" else 5  # a star reads as small as a circle at the same size
    clipped_errorbar(ax, s_ok, y[ok], bounds[ok, 0], bounds[ok, 1], marker=marker, color=color, ms=ms)
    upper_limits(ax, group["S"].to_numpy(float), y, bounds, color)
    label = f"{family} {series}".strip()
    if n_sizes(group["S"]) < 2:
        if name_points:
            for s, v, model in zip(s_ok, y[ok], group["model"][ok], strict=True):
                ax.annotate(model, (s, v), xytext=(6, 4), textcoords="offset points", fontsize=7, color=color)
        models = ", ".join(dict.fromkeys(group["model"]))
        label += ("" if models == family else f" ({models})") + f": one size, no law (S = {s_ok.max():.3g})"
        ax.plot([], [], marker, color=color, ms=ms, label=label)
        return True
    fit = key.select(data.tables["powerlaw_fits"], data.fits_form)
    if fit is not None:
        _draw_fit(ax, data, fit, group, color, reach)
        label += exponent_label(fit)
        label += f", $R^2$={fit.value('r2'):.3f}" if "r2" in fit.form.columns else ""
    ax.plot([], [], marker + "-", color=color, label=label)
    return True


def upper_limits(ax: Any, S: np.ndarray, y: np.ndarray, bounds: np.ndarray, color: str) -> None:
    """Points estimated at 0 (a debiased distance read as 0: `rankscale.intervals.clipped_bound`), which a log axis
    cannot show, drawn as what they are: their interval's upper end with a caret pointing down (an upper limit), so
    no model leaves a panel unseen. The first on `ax` says so in the legend."""
    at_zero = (y == 0) & np.isfinite(bounds).all(axis=1) & (bounds.max(axis=1) > 0)
    if not at_zero.any():
        return
    top = bounds[at_zero].max(axis=1)
    first = not any(c.get_label() == UPPER_LIMIT for c in ax.containers)
    ax.errorbar(S[at_zero], top, yerr=0.35 * top, uplims=True, fmt="_", color=color, ms=8, lw=1.0,
                label=UPPER_LIMIT if first else None)  # fmt: skip


UPPER_LIMIT = "estimated at 0: its upper bound (caret)"  # the legend's words for `upper_limits`' marks


def _draw_fit(
    ax: Any, data: FigureData, fit: LawFit, group: pd.DataFrame, color: str, reach: tuple[float, float] | None
) -> None:
    """A fitted law over its sizes (solid), out to `reach` beyond them (dashed), and its bootstrap band over both."""
    low_s, high_s = float(group["S"].min()), float(group["S"].max())
    inside = Points.of(np.geomspace(low_s, high_s, 60))
    spans = [] if reach is None else [(min(reach[0], low_s), low_s), (high_s, max(reach[1], high_s))]
    beyond = [Points.of(np.geomspace(a, b, 30)) for a, b in spans if a < b]
    ax.plot(inside.S, fit.form.predict(fit.law, inside), "-", color=color, alpha=0.85)
    for part in beyond:
        ax.plot(part.S, fit.form.predict(fit.law, part), "--", color=color, alpha=0.85, lw=1.0)
    if data.replicates is None:
        return
    assert data.level is not None and data.refits is not None, "bands need the level and refits"
    everywhere = Points.of(np.unique(np.concatenate([inside.S, *(part.S for part in beyond)])))
    refitted = LawRefits.of(group, data.replicates, fit.form, fit.law, data.refits, data.seed)  # seeds too, if any
    low, high = interval(refitted.band(everywhere), data.level)
    ax.fill_between(everywhere.S, low, high, color=color, alpha=0.18, lw=0)


def exponent_label(fit: LawFit) -> str:
    """': alpha=... [low, high]' for a legend, 'no interval' where the law has none (powerlaw_fits.csv's ci_note:
    some model's statistic biased under resampling), '' for a form without an exponent."""
    if fit.form.exponent is None:
        return ""
    low, high = fit.interval(fit.form.exponent)
    shown = f"[{low:.3f}, {high:.3f}]" if np.isfinite([low, high]).all() else "(no interval)"
    return f": $\\alpha$={fit.value(fit.form.exponent):.3f} {shown}"
