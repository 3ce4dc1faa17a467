"""Emergence: the chance that N consecutive tokens all rank inside the top-k (paper Fig. 7)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rankscale.laws import FORMS
from rankscale.plots.common import S_LABEL, Figure, FigureData, cycle_color, grid, save


def fig_emergence(data: FigureData, settings: Mapping[str, Any], png: Path) -> None:
    """p_{N,k} vs S: RBP_k^N (filled), empirical N-runs in top-k (hollow), fitted law (line)."""
    emergence, fits = data.tables["emergence"], data.tables["powerlaw_fits"]
    k = settings["emergence_k"]
    available = sorted(emergence["k"].unique())
    k = min(available, key=lambda a: abs(np.log(a) - np.log(k))) if available else k
    families = sorted(emergence["family"].unique())
    fig, axes = grid(len(families), len(data.datasets))
    for i, family in enumerate(families):
        for j, dataset in enumerate(data.datasets):
            ax = axes[i, j]
            sel = emergence[(emergence["family"] == family) & (emergence["dataset"] == dataset) & (emergence["k"] == k)]
            fit = fits[
                (fits["family"] == family)
                & (fits["dataset"] == dataset)
                & (fits["metric"] == "neg_log_rbp")
                & (fits["k"] == k)
            ]
            for c, (n, group) in enumerate(sel.groupby("N")):
                color = cycle_color(c)
                ax.semilogx(group["S"], group["predicted"], "o", color=color)
                ax.semilogx(group["S"], group["empirical"], "s", mfc="none", color=color)
                if len(fit) and np.isfinite(fit["alpha"].iloc[0]):
                    law = FORMS["power_law"].from_row(fit.iloc[0])
                    s = np.geomspace(group["S"].min() / 30, group["S"].max() * 300, 200)
                    ax.semilogx(s, np.exp(-law.scaled(n).predict(s)), "-", color=color, alpha=0.7)
                ax.plot([], [], "o-", color=color, label=f"N = {n}")
            ax.plot([], [], "ko", label="$\\mathrm{RBP}_k^N$")
            ax.plot([], [], "ks", mfc="none", label="empirical runs")
            ax.set_xlabel(S_LABEL)
            ax.set_ylabel(f"$p_{{N,k}}$, k = {k}")
            ax.set_title(f"{family} on {dataset}")
            ax.set_ylim(-0.02, 1.02)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    save(fig, png)


FIGURES = [
    Figure(
        name="fig7_emergence",
        plot=fig_emergence,
        tables=("emergence", "powerlaw_fits"),
        settings=("emergence_k",),
        caption=(
            "Paper Fig. 7: emergence. Probability p_{N,k} that N consecutive tokens all rank inside the "
            "top-k, against S, for several N. Filled circles: RBP_k^N (independent positions); hollow "
            "squares: the measured fraction of N-token runs; lines: exp(-N C S^-alpha) from the fitted law, "
            "extended beyond the measured sizes. Larger N gives a sharper, later, sigmoid-looking rise."
        ),
    ),
]
