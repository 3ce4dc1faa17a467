"""Figures of the scaling laws: a metric against S with its fit and intervals (paper Figs. 3-6, 8a; Fig. 14,
cross-entropy in bits per byte). The out-of-sample test of the laws (Fig. 9) is `plots.extrapolation`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.metrics import metric_for_law
from rankscale.plots.common import (
    S_LABEL,
    FigureData,
    FigureSettings,
    colors,
    cycle_color,
    figure_legend,
    grid,
    legend_below,
    panel_note,
    readable_log_ticks,
    save,
)
from rankscale.plots.law_lines import draw_law
from rankscale.tables import select
from rankscale.tables.selection import single_size, without_notes


def one_size_families(
    metrics: pd.DataFrame, dataset: str, law: str, k: int | None
) -> tuple[set[str], tuple[float, float] | None]:
    """The families of one size on `dataset` (no law of their own), and the sizes (lowest, highest) their models
    span: how far the other families' laws are drawn out to meet them (None without such families)."""
    singles = select(single_size(metrics), dataset=dataset, metric=metric_for_law(law).name, k=k)
    reach = (float(singles["S"].min()), float(singles["S"].max())) if len(singles) else None
    return set(singles["family"]), reach


def law_panel(ax: Any, data: FigureData, dataset: str, law: str, k: int | None) -> None:
    """Every family's fitted quantity y(S) on `dataset`, log-log, with fits, intervals and bands; a family of one
    size (e.g. one pretrained model) as named stars, every other family's law drawn out to them (dashed)."""
    metrics = data.tables["metrics"]
    palette = colors(metrics["family"].unique())
    ax.set_xscale("log")
    ax.set_yscale("log")
    one_size, reach = one_size_families(metrics, dataset, law, k)
    drawn = [
        draw_law(ax, data, family, dataset, law, k, palette[family], "*", name_points=True)
        if family in one_size
        else draw_law(ax, data, family, dataset, law, k, palette[family], reach=reach)
        for family in sorted(palette)
    ]
    if not any(drawn):
        ax.text(0.5, 0.5, "no data in range", transform=ax.transAxes, ha="center")
    ax.set_xlabel(S_LABEL)
    ax.set_ylabel(metric_for_law(law).axis_label(k))
    ax.set_title(f"{dataset}" + (f", k = {k}" if k is not None else ""))
    if one_size and len(one_size) < len(palette):
        ax.plot([], [], "--", color="0.4", label="law extrapolated to another family's model")
    legend_below(ax, fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    readable_log_ticks(ax)


def rbp_rows(data: FigureData, ks: Sequence[int], png: Path) -> None:
    """-log RBP_k vs S, one row per k, one column per dataset."""
    metrics = data.tables["metrics"]
    shown: list[int | None] = [k for k in ks if (metrics["k"] == k).any()] or [None]
    fig, axes = grid(len(shown), len(data.datasets), w=4.6, h=3.9)  # each with its legend under it
    for i, k in enumerate(shown):
        for j, dataset in enumerate(data.datasets):
            if k is None:
                axes[i, j].text(
                    0.5, 0.5, "no k of this figure fits the vocabulary", transform=axes[i, j].transAxes, ha="center"
                )
                continue
            law_panel(axes[i, j], data, dataset, "neg_log_rbp", k)
    save(fig, png)


def fig_rbp1(data: FigureData, settings: FigureSettings, png: Path) -> None:
    rbp_rows(data, [1], png)


def fig_rbp_k(data: FigureData, settings: FigureSettings, png: Path) -> None:
    rbp_rows(data, settings.get("rbp_k"), png)


def fig_large_k(data: FigureData, settings: FigureSettings, png: Path) -> None:
    rbp_rows(data, settings.get("large_k"), png)


def low_snr_spans(k: np.ndarray, snr: np.ndarray, threshold: float) -> list[tuple[float, float]]:
    """Contiguous ranges of k (geometric midpoints as edges) whose law's SNR is below `threshold` or unknown."""
    low = ~(snr >= threshold)
    spans, start = [], None
    edges = np.sqrt(k[:-1] * k[1:]) if len(k) > 1 else np.array([])
    for i, flag in enumerate(low):
        if flag and start is None:
            start = k[0] / 1.2 if i == 0 else edges[i - 1]
        if not flag and start is not None:
            spans.append((start, edges[i - 1]))
            start = None
    if start is not None:
        spans.append((start, k[-1] * 1.2))
    return spans


def fig_r2_alpha(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """R^2 and alpha of the -log RBP_k law as functions of k, with bootstrap bands (paper Fig. 6)."""
    fits = data.tables["powerlaw_fits"]
    palette = colors(fits["family"].unique())
    fig, axes = grid(2, len(data.datasets), w=4.8)
    rbp = fits[fits["metric"] == "neg_log_rbp"]
    for j, dataset in enumerate(data.datasets):
        marked = False
        for family, group in select(rbp, dataset=dataset).groupby("family"):
            if without_notes(group).empty:  # no law at any k (one size): nothing to draw
                continue
            group = group.sort_values("k")
            k = group["k"].to_numpy(float)
            for ax, p in ((axes[0, j], "r2"), (axes[1, j], data.fits_form.exponent)):
                if p is None or p not in group:  # analysis.law_form has no R² or no exponent
                    continue
                ax.semilogx(k, group[p], ".-", color=palette[family], label=family, ms=3)
                ax.fill_between(k, group[f"{p}_ci_low"], group[f"{p}_ci_high"], color=palette[family], alpha=0.2, lw=0)
            if not marked:
                for start, end in low_snr_spans(k, group["snr"].to_numpy(float), settings.get("snr_threshold")):
                    for ax in axes[:, j]:
                        ax.axvspan(start, end, color="0.85", zorder=0, lw=0)
                marked = True
        if not marked:  # no family has a law here: say why (powerlaw_fits.csv's note), without empty axes
            notes = select(rbp, dataset=dataset)["note"].dropna()
            why = f"\n({notes.mode().iloc[0]})" if len(notes) else ""
            for ax in axes[:, j]:
                panel_note(ax, f"{dataset}: no law fitted{why}", blank=True)
            continue
        axes[0, j].set_title(dataset)
        axes[0, j].set_ylabel("$R^2$ of the fit (log space)")
        exponent = data.fits_form.exponent
        axes[1, j].set_ylabel("exponent $\\alpha$" if exponent == "alpha" else f"{data.fits_form.name}: {exponent}")
        axes[0, j].plot([], [], "s", color="0.85", label=f"SNR < {settings.get('snr_threshold'):g}")
        for ax in axes[:, j]:
            ax.set_xlabel("$k$")
            ax.grid(True, which="both", alpha=0.3)
    figure_legend(fig, fontsize=8, ncol=4)
    save(fig, png)


CE_AND_RBP1 = (("ce", None, "o", "CE"), ("neg_log_rbp", 1, "s", "$-\\log\\,\\mathrm{RBP}_1$"))  # Fig. 8a's laws


def fig_ce_vs_rbp1(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """CE and -log RBP_1 against S on shared log axes, so their slopes compare at a glance (paper Fig. 8, left)."""
    metrics = data.tables["metrics"]
    families = sorted(metrics["family"].unique())
    fig, axes = grid(1, len(data.datasets), w=5.2, h=4.0)
    for j, dataset in enumerate(data.datasets):
        ax = axes[0, j]
        ax.set_xscale("log")
        ax.set_yscale("log")
        reach = [one_size_families(metrics, dataset, law, k)[1] for law, k, *_ in CE_AND_RBP1]  # laws meet them
        for i, family in enumerate(families):
            for c, (law, k, marker, series) in enumerate(CE_AND_RBP1):
                draw_law(ax, data, family, dataset, law, k, cycle_color(2 * i + c), marker, series, reach[c])
        ax.set_xlabel(S_LABEL)
        ax.set_ylabel("cross-entropy (nats) and $-\\log \\mathrm{RBP}_1$")
        ax.set_title(dataset)
        legend_below(ax, fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        readable_log_ticks(ax)
    save(fig, png)


def fig_bits_per_byte(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """Cross-entropy in bits per byte of text against S, every family on one panel per dataset: unlike nats per
    token, comparable between families whose tokenizers differ."""
    fig, axes = grid(1, len(data.datasets), w=4.8, h=4.2)
    for j, dataset in enumerate(data.datasets):
        law_panel(axes[0, j], data, dataset, "bpb", None)
    save(fig, png)
