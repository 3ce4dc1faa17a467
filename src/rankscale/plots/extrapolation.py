"""Fig. 9, the out-of-sample test of the laws, drawn as extrapolation.csv judges it.

Predicted against observed on log axes put every point on the diagonal, and errors of a few per cent, with the
intervals that judge them, could not be seen. The figure plots each held-out prediction's relative error,
observed / predicted - 1, with its paired interval turned the same way (observed / bound - 1): the interval
holds 0 exactly where the table says the observed value is `covered`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import ticker

from rankscale.metrics import METRICS
from rankscale.plots.common import (
    FigureData,
    FigureSettings,
    clipped_errorbar,
    colors,
    grid,
    legend_below,
    save,
)
from rankscale.tables.selection import without_notes

MARKERS = {1: "o", 2: "^"}  # the largest size held out, the two largest
MISSED = "#d62728"  # an interval that excludes 0: the law missed beyond its noise (covered = False)


def relative_errors(table: pd.DataFrame) -> pd.DataFrame:
    """extrapolation.csv's rows with the relative error observed / predicted - 1 and its interval, observed /
    bound - 1 (low from the upper bound), which holds 0 where the observed value lies inside (`covered`)."""
    rows = table[table[["predicted", "predicted_ci_low", "predicted_ci_high", "observed"]].notna().all(axis=1)]
    rows = rows[(rows["predicted"] > 0) & (rows["observed"] > 0)].copy()
    with np.errstate(divide="ignore"):
        rows["error"] = rows["observed"] / rows["predicted"] - 1.0
        rows["error_low"] = rows["observed"] / rows["predicted_ci_high"] - 1.0
        rows["error_high"] = np.where(rows["predicted_ci_low"] > 0, rows["observed"] / rows["predicted_ci_low"] - 1.0,
                                      np.inf)  # fmt: skip
    # which held-out size: 1 for the largest (fitted on all but one), 2 for those fitted on all but two
    rows["held_out"] = (rows.groupby(["family", "dataset"])["n_fit"].transform("max") - rows["n_fit"] + 1).astype(int)
    return rows


def quantity(metric: str, k: Any) -> str:
    return METRICS[metric].axis_label(None if pd.isna(k) else int(k), law=False)


def fig_extrapolation(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """Each held-out prediction's relative error with its paired interval, per quantity, against zero."""
    table = without_notes(data.tables["extrapolation"])  # note rows: families with nothing to hold out
    errors = relative_errors(table) if len(table) else pd.DataFrame()
    fig, axes = grid(1, len(data.datasets), w=5.2, h=4.2)
    palette = colors(sorted(set(errors["family"]))) if len(errors) else {}
    for j, dataset in enumerate(data.datasets):
        ax = axes[0, j]
        sel = errors[errors["dataset"] == dataset] if len(errors) else errors
        if not len(sel):  # every family has fewer than three sizes here (extrapolation.csv's notes)
            ax.axis("off")
            ax.text(0.5, 0.5, f"{dataset}: too few sizes to hold one out", transform=ax.transAxes, ha="center",
                    fontsize=8, color="0.25")  # fmt: skip
            continue
        quantities = list(dict.fromkeys(quantity(m, k) for m, k in sel[["metric", "k"]].itertuples(index=False)))
        groups = sel.groupby(["family", "held_out", "held_out_model"], sort=True)
        width = 0.7 / max(len(groups), 1)
        for g, ((family, held_out, _), part) in enumerate(groups):
            x = np.array([quantities.index(quantity(m, k)) for m, k in part[["metric", "k"]].itertuples(index=False)])
            x = x - 0.35 + width * (g + 0.5)
            for covered, face in ((True, palette[family]), (False, "none")):
                rows = part["covered"].astype(bool).to_numpy() == covered
                if rows.any():
                    clipped_errorbar(ax, x[rows], part["error"].to_numpy()[rows], part["error_low"].to_numpy()[rows],
                                     part["error_high"].to_numpy()[rows], marker=MARKERS.get(int(held_out), "s"),
                                     color=palette[family] if covered else MISSED, mfc=face, ms=6)  # fmt: skip
        ax.axhline(0.0, color="k", lw=0.9, label="observed = predicted")
        ax.set_xticks(range(len(quantities)), quantities, fontsize=8)
        ax.set_xlim(-0.6, len(quantities) - 0.4)
        ax.yaxis.set_major_formatter(ticker.PercentFormatter(xmax=1.0, decimals=None))
        ax.set_ylabel("observed / predicted − 1")
        noise = ", ".join(sorted(set(sel["noise"].dropna().astype(str)))) if "noise" in sel else ""
        ax.set_title(f"{dataset}" + (f" (interval includes: {noise})" if noise else ""), fontsize=9)
        for family in sorted(set(sel["family"])):
            ax.plot([], [], "o", color=palette[family], label=f"{family}: interval holds 0 (covered)")
        ax.plot([], [], "o", color=MISSED, mfc="none", label="interval excludes 0 (not covered)")
        for held_out in sorted(set(sel["held_out"])):
            name = "the largest size" if held_out == 1 else "the two largest sizes"
            ax.plot([], [], MARKERS.get(int(held_out), "s"), color="0.4", label=f"fitted without {name}")
        legend_below(ax, fontsize=7, ncol=2)
        ax.grid(True, axis="y", alpha=0.3)
    save(fig, png)
