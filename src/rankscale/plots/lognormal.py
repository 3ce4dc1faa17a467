"""The rank distribution and its discrete truncated lognormal fit (paper Fig. 8, middle and right)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.lognormal import log_pmf
from rankscale.plots.common import S_LABEL, Figure, FigureData, colors, cycle_color, grid, save


def fig_rank_histogram(data: FigureData, settings: Mapping[str, Any], png: Path) -> None:
    """Rank distribution and its discrete lognormal fit, smallest and largest model per family."""
    lognormal = data.tables["lognormal_fits"]
    fig, axes = grid(1, len(data.datasets), w=5.0)
    for j, dataset in enumerate(data.datasets):
        ax = axes[0, j]
        sel = lognormal[lognormal["dataset"] == dataset].sort_values("S")
        chosen = pd.concat([g.iloc[[0, -1]] if len(g) > 1 else g for _, g in sel.groupby("family")])
        for c, row in enumerate(chosen.itertuples()):
            counts = data.hists[(row.model, dataset)]
            r = np.nonzero(counts)[0]
            p = counts[r] / counts.sum()
            color = cycle_color(c)
            ax.loglog(r, p, ".", ms=2, color=color, alpha=0.5)
            ranks = np.unique(np.rint(np.geomspace(1, len(counts) - 1, 300)).astype(int))
            ax.loglog(
                ranks,
                np.exp(log_pmf(ranks, row.mu, row.sigma, len(counts) - 1)),
                "-",
                color=color,
                label=f"{row.model}: $\\mu$={row.mu:.2f}, $\\sigma$={row.sigma:.2f}",
            )
        ax.set_xlabel("rank $R$ of the correct token")
        ax.set_ylabel("$P(R)$")
        ax.set_title(f"{dataset}: ranks (dots) and discrete lognormal fit (lines)")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    save(fig, png)


def fig_mu_sigma(data: FigureData, settings: Mapping[str, Any], png: Path) -> None:
    """mu/sigma (and mu, sigma) of the lognormal fit against S (paper Fig. 8, right)."""
    lognormal = data.tables["lognormal_fits"]
    palette = colors(lognormal["family"].unique())
    fig, axes = grid(2, len(data.datasets))
    for j, dataset in enumerate(data.datasets):
        for family, group in lognormal[lognormal["dataset"] == dataset].groupby("family"):
            group = group.sort_values("S")
            axes[0, j].semilogx(group["S"], group["mu_over_sigma"], "o-", color=palette[family], label=family)
            axes[1, j].semilogx(group["S"], group["mu"], "o-", color=palette[family], label=f"{family} $\\mu$")
            axes[1, j].semilogx(
                group["S"], group["sigma"], "s--", color=palette[family], mfc="none", label=f"{family} $\\sigma$"
            )
        axes[0, j].set_ylabel("$\\mu/\\sigma$ of the rank lognormal")
        axes[1, j].set_ylabel("$\\mu$, $\\sigma$")
        axes[0, j].set_title(dataset)
        for ax in axes[:, j]:
            ax.set_xlabel(S_LABEL)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, png)


FIGURES = [
    Figure(
        name="fig8b_rank_histogram",
        plot=fig_rank_histogram,
        tables=("lognormal_fits",),
        hists=True,
        caption=(
            "Paper Fig. 8 (middle): the distribution of the correct token's rank (dots, log-log) for the "
            "smallest and largest model of each family, with the fitted discrete truncated lognormal "
            "(lines; mu and sigma in the legend)."
        ),
    ),
    Figure(
        name="fig8c_mu_sigma",
        plot=fig_mu_sigma,
        tables=("lognormal_fits",),
        caption=(
            "Paper Fig. 8 (right): mu/sigma (top) and mu, sigma (bottom) of the fitted rank lognormal "
            "against S. Under the lognormal conjecture, a steady trend in mu/sigma ties the CE and RBP laws "
            "together."
        ),
    ),
]
