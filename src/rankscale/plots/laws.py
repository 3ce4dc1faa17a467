"""Figures of the scaling laws themselves: a metric against S with its fit (paper Figs. 3-6, 8a)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import ticker

from rankscale.laws import FORMS
from rankscale.metrics import metric_for_law
from rankscale.plots.common import S_LABEL, Figure, FigureData, colors, grid, save


def law_panel(ax: Any, metrics: pd.DataFrame, fits: pd.DataFrame, dataset: str, law: str, k: int | None) -> None:
    """Points of a fitted quantity y(S) per family with the fitted power law; alpha and R^2 in the legend."""
    metric = metric_for_law(law)
    palette = colors(metrics["family"].unique())
    sel = metrics[(metrics["dataset"] == dataset) & (metrics["metric"] == metric.name)]
    if k is not None:
        sel = sel[sel["k"] == k]
    plotted = False
    for family, group in sel.groupby("family"):
        y = metric.to_law(group["value"].to_numpy(float))
        ok = y > 0
        ax.loglog(group["S"][ok], y[ok], "o", color=palette[family])
        fit = fits[(fits["family"] == family) & (fits["dataset"] == dataset) & (fits["metric"] == law)]
        fit = fit[fit["k"].isna()] if k is None else fit[fit["k"] == k]
        label = str(family)
        if len(fit) and np.isfinite(fit["alpha"].iloc[0]):
            law_fit = FORMS["power_law"].from_row(fit.iloc[0])
            s = np.geomspace(group["S"].min(), group["S"].max(), 50)
            ax.loglog(s, law_fit.predict(s), "-", color=palette[family], alpha=0.8)
            label += f": $\\alpha$={law_fit.alpha:.3f}, $R^2$={law_fit.r2:.3f}"
        ax.plot([], [], "o-", color=palette[family], label=label)
        plotted = plotted or bool(ok.any())
    if not plotted:
        ax.text(0.5, 0.5, "no data in range", transform=ax.transAxes, ha="center")
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%.3g"))
    ax.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%.3g"))
    ax.set_xlabel(S_LABEL)
    ax.set_ylabel(metric.axis_label(k))
    ax.set_title(f"{dataset}" + (f", k = {k}" if k is not None else ""))
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)


def rbp_rows(data: FigureData, ks: Sequence[int], png: Path) -> None:
    """-log RBP_k vs S, one row per k, one column per dataset."""
    metrics, fits = data.tables["metrics"], data.tables["powerlaw_fits"]
    shown: list[int | None] = [k for k in ks if (metrics["k"] == k).any()] or [None]
    fig, axes = grid(len(shown), len(data.datasets))
    for i, k in enumerate(shown):
        for j, dataset in enumerate(data.datasets):
            if k is None:
                axes[i, j].text(
                    0.5, 0.5, "no k of this figure fits the vocabulary", transform=axes[i, j].transAxes, ha="center"
                )
                continue
            law_panel(axes[i, j], metrics, fits, dataset, "neg_log_rbp", k)
    fig.tight_layout()
    save(fig, png)


def fig_rbp1(data: FigureData, settings: Mapping[str, Any], png: Path) -> None:
    rbp_rows(data, [1], png)


def fig_rbp_k(data: FigureData, settings: Mapping[str, Any], png: Path) -> None:
    rbp_rows(data, settings["rbp_k"], png)


def fig_large_k(data: FigureData, settings: Mapping[str, Any], png: Path) -> None:
    rbp_rows(data, settings["large_k"], png)


def fig_r2_alpha(data: FigureData, settings: Mapping[str, Any], png: Path) -> None:
    """R^2 and alpha of the -log RBP_k law as functions of k (paper Fig. 6)."""
    fits = data.tables["powerlaw_fits"]
    palette = colors(fits["family"].unique())
    fig, axes = grid(2, len(data.datasets))
    rbp = fits[fits["metric"] == "neg_log_rbp"]
    for j, dataset in enumerate(data.datasets):
        for family, group in rbp[rbp["dataset"] == dataset].groupby("family"):
            group = group[np.isfinite(group["alpha"])].sort_values("k")
            axes[0, j].semilogx(group["k"], group["r2"], ".-", color=palette[family], label=family)
            axes[1, j].semilogx(group["k"], group["alpha"], ".-", color=palette[family], label=family)
        axes[0, j].set_title(dataset)
        axes[0, j].set_ylabel("$R^2$ of the fit (log space)")
        axes[1, j].set_ylabel("exponent $\\alpha$")
        for ax in axes[:, j]:
            ax.set_xlabel("$k$")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, png)


def fig_ce_vs_rbp1(data: FigureData, settings: Mapping[str, Any], png: Path) -> None:
    """CE and -log RBP_1 against S side by side, with their exponents (paper Fig. 8, left)."""
    metrics, fits = data.tables["metrics"], data.tables["powerlaw_fits"]
    fig, axes = grid(2, len(data.datasets))
    for j, dataset in enumerate(data.datasets):
        law_panel(axes[0, j], metrics, fits, dataset, "ce", None)
        law_panel(axes[1, j], metrics, fits, dataset, "neg_log_rbp", 1)
    fig.tight_layout()
    save(fig, png)


LAW_TABLES = ("metrics", "powerlaw_fits")
FIGURES = [
    Figure(
        name="fig3_rbp1",
        plot=fig_rbp1,
        tables=LAW_TABLES,
        caption=(
            "Paper Fig. 3: -log RBP_1 (RBP_1 = greedy-decoding accuracy) against non-embedding parameters "
            "S, one panel per dataset, with the fitted power law -log RBP_1 = C S^-alpha per family; the "
            "legend gives alpha and R² (log space)."
        ),
    ),
    Figure(
        name="fig4_rbp_k",
        plot=fig_rbp_k,
        tables=LAW_TABLES,
        settings=("rbp_k",),
        k_settings=("rbp_k",),
        caption=(
            "Paper Fig. 4: -log RBP_k against S for the k of ``figures.rbp_k`` (rows) and each dataset "
            "(columns), with the fitted power laws, their exponents alpha and R²."
        ),
    ),
    Figure(
        name="fig5_large_k",
        plot=fig_large_k,
        tables=LAW_TABLES,
        settings=("large_k",),
        k_settings=("large_k",),
        caption=(
            "Paper Fig. 5: -log RBP_k against S for large k (those of ``figures.large_k`` that do not "
            "exceed the vocabulary), where the paper sees the law weaken (k of 20,000-30,000 for "
            "50k-150k vocabularies)."
        ),
    ),
    Figure(
        name="fig6_r2_alpha_vs_k",
        plot=fig_r2_alpha,
        tables=("powerlaw_fits",),
        caption=(
            "Paper Fig. 6: R² (top) and exponent alpha (bottom) of the -log RBP_k power-law fit as "
            "functions of k, per dataset and family. The paper finds R² close to 1 for small k and "
            "alpha growing with k."
        ),
    ),
    Figure(
        name="fig8a_ce_vs_rbp1",
        plot=fig_ce_vs_rbp1,
        tables=LAW_TABLES,
        caption=(
            "Paper Fig. 8 (left): cross-entropy (top) and -log RBP_1 (bottom) against S with their power-law "
            "fits, to compare the two exponents."
        ),
    ),
]
