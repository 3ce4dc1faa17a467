"""Emergence: the chance that N consecutive tokens all rank inside the top-k (paper Fig. 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import Points
from rankscale.plots.common import (
    S_LABEL,
    FigureData,
    FigureSettings,
    clipped_errorbar,
    cycle_color,
    figure_legend,
    grid,
    readable_log_ticks,
    save,
)
from rankscale.tables import LawKey, finals, select
from rankscale.tables.selection import n_sizes

KINDS = {  # column of the emergence table -> how it is drawn
    "empirical": {"fmt": "o", "label": "measured runs"},
    "predicted": {"fmt": "x", "label": "independent: $\\mathrm{RBP}_k^N$"},
    "markov": {"fmt": "^", "label": "Markov chain of hits"},
}


def _panels(table: pd.DataFrame, datasets: list[str]) -> tuple[list[tuple[str, str]], list[int]]:
    rows = [(d, f) for d in datasets for f in sorted(table.loc[table["dataset"] == d, "family"].unique())]
    return rows, sorted(int(k) for k in table["k"].unique())


def _label_panel(ax: Any, family: str, dataset: str, k: int, rows: pd.DataFrame) -> None:
    """A panel's title; a family of one size has no law to draw, and the title says so, and its one S sits
    inside a decade either side (a log axis around one value has no range of its own)."""
    one_size = len(rows) > 0 and n_sizes(rows["S"]) < 2
    ax.set_title(f"{family} on {dataset}, top-{k}" + (": one size, no law" if one_size else ""))
    if one_size:
        S = float(rows["S"].iloc[0])
        ax.set_xlim(S / 10, S * 10)


def _law_curve(data: FigureData, family: str, dataset: str, k: int, n: int, sizes: np.ndarray, extrapolate: float):
    """S grid and exp(-N C S^-alpha) of the fitted -log RBP_k law, over the data (and `extrapolate` decades beyond)."""
    fit = LawKey(family, dataset, "neg_log_rbp", k).select(data.tables["powerlaw_fits"], data.fits_form)
    if fit is None:
        return None
    s = Points.of(np.geomspace(sizes.min(), sizes.max() * 10**extrapolate, 120))
    return s.S, fit.form.predict(fit.form.scaled(fit.law, n), s)


def fig_emergence(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """-log p_{N,k} vs S, log-log, one colour per N: measured runs (with intervals), independent and Markov
    predictions, and the fitted sequence law N C S^-alpha (paper Fig. 7, in the space where it is a line)."""
    table = finals(data.tables["emergence"])
    rows, ks = _panels(table, data.datasets)
    fig, axes = grid(len(rows), len(ks), w=4.4, h=3.6)
    for i, (dataset, family) in enumerate(rows):
        for j, k in enumerate(ks):
            ax = axes[i, j]
            sel = select(table, dataset=dataset, family=family, k=k)
            ax.set_xscale("log")
            ax.set_yscale("log")
            # the points set the scale: an interval reaching a rate of 0 (-log 0 = inf) is clipped at the edge
            rates = sel[list(KINDS)].to_numpy(float)
            ys = -np.log(rates[(rates > 0) & (rates < 1)])
            ylim = (ys.min() / 1.5, ys.max() * 1.5) if ys.size else None
            for c, (n, group) in enumerate(sel.groupby("N")):
                color, sizes = cycle_color(c), group["S"].to_numpy(float)
                for kind, style in KINDS.items():
                    p = group[kind].to_numpy(float)
                    ok = (p > 0) & (p < 1)
                    if not ok.any():
                        continue
                    with np.errstate(divide="ignore", invalid="ignore"):
                        low, high = (-np.log(group[f"{kind}_ci_{end}"].to_numpy(float)[ok]) for end in ("high", "low"))
                    clipped_errorbar(ax, sizes[ok], -np.log(p[ok]), low, high, ylim=ylim, marker=style["fmt"],
                                     color=color, ms=4, mfc=color if kind == "empirical" else "none", lw=0.8)  # fmt: skip
                curve = _law_curve(data, family, dataset, k, int(n), sizes, 0.0)
                if curve is not None:
                    ax.plot(curve[0], curve[1], "-", color=color, alpha=0.7, lw=1)
                ax.plot([], [], "s", color=color, label=f"N = {n}")
            for style in KINDS.values():
                ax.plot([], [], style["fmt"], color="0.3", mfc="none", label=style["label"])
            ax.plot([], [], "-", color="0.3", label="fitted law $N\\,C\\,S^{-\\alpha}$")
            if ylim is not None:
                ax.set_ylim(ylim)
            ax.set_xlabel(S_LABEL)
            ax.set_ylabel(f"$-\\log p_{{N,k}}$, k = {k}")
            _label_panel(ax, family, dataset, k, sel)
            ax.grid(True, which="both", alpha=0.3)
            readable_log_ticks(ax)
    figure_legend(fig, fontsize=8, ncol=6)
    save(fig, png)


def fig_emergence_probability(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """p_{N,k} itself against S (linear), where emergence looks like a sigmoid: measured runs with intervals and
    the fitted law exp(-N C S^-alpha) over the measured sizes, extended only as far as `emergence_extrapolate`."""
    table = finals(data.tables["emergence"])
    rows, ks = _panels(table, data.datasets)
    decades = float(settings.get("emergence_extrapolate"))
    fig, axes = grid(len(rows), len(ks), w=4.4, h=3.4)
    for i, (dataset, family) in enumerate(rows):
        for j, k in enumerate(ks):
            ax = axes[i, j]
            sel = select(table, dataset=dataset, family=family, k=k)
            top = float(sel["S"].max()) if len(sel) else 1.0
            for c, (n, group) in enumerate(sel.groupby("N")):
                color, sizes = cycle_color(c), group["S"].to_numpy(float)
                low, high = (group[f"empirical_ci_{end}"].to_numpy(float) for end in ("low", "high"))
                clipped_errorbar(ax, sizes, group["empirical"], low, high, ylim=(-0.02, 1.02), color=color, ms=4,
                                 label=f"N = {n}")  # fmt: skip
                curve = _law_curve(data, family, dataset, k, int(n), sizes, decades)
                if curve is not None:
                    inside = curve[0] <= sizes.max() * (1 + 1e-9)
                    ax.plot(curve[0][inside], np.exp(-curve[1][inside]), "-", color=color, alpha=0.8, lw=1)
                    ax.plot(curve[0][~inside], np.exp(-curve[1][~inside]), ":", color=color, alpha=0.8, lw=1)
            if decades > 0:
                ax.axvspan(top, top * 10**decades, color="0.9", zorder=0, lw=0, label="extrapolated (fitted law only)")
            ax.set_xscale("log")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel(S_LABEL)
            ax.set_ylabel(f"$p_{{N,k}}$, k = {k}")
            _label_panel(ax, family, dataset, k, sel)
            ax.grid(True, which="both", alpha=0.3)
    figure_legend(fig, fontsize=8, ncol=8)
    save(fig, png)
