"""Calibration and nucleus coverage across scale (docs/science.md): curves per size, and the miscalibration's law."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rankscale.metrics import metric_for_law
from rankscale.plots.common import (
    S_LABEL,
    FigureData,
    FigureSettings,
    colors,
    grid,
    legend_below,
    readable_log_ticks,
    save,
    say_left_out,
)
from rankscale.plots.law_lines import draw_law
from rankscale.tables import finals
from rankscale.tables.calibration import NO_FIELDS

CURVES = (
    ("coverage", "nucleus p", "coverage C(p)"),
    ("reliability", "mean top-1 probability (bin)", "top-1 accuracy"),
    ("pit", "u", "PIT distribution function F(u)"),
)


def fig_calibration(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """Rows: nucleus coverage against p, the reliability diagram and the PIT's distribution function, one line per
    size (final models; the diagonal is a calibrated model), then the calibration error and the PIT's distance
    against S with their laws. Columns: datasets."""
    table = finals(data.tables["calibration"])
    curves, lacking = table[table["curve"] != NO_FIELDS], table[table["curve"] == NO_FIELDS]
    fig, axes = grid(len(CURVES) + 2, len(data.datasets), w=4.6, h=3.9)
    for j, dataset in enumerate(data.datasets):
        for i, (curve, xlabel, ylabel) in enumerate(CURVES):
            ax = axes[i, j]
            rows = curves[(curves["dataset"] == dataset) & (curves["curve"] == curve)]
            ax.plot([0, 1], [0, 1], ":", color="0.5", label="calibrated")
            sizes = sorted(rows[["family", "model", "S"]].drop_duplicates().itertuples(index=False), key=lambda r: r.S)
            shades = {r.model: c for r, c in zip(sizes, _shades(len(sizes)), strict=True)}
            for row in sizes:
                line = rows[rows["model"] == row.model].sort_values("x")
                x, y = line["x"].to_numpy(float), line["value"].to_numpy(float)
                ax.plot(x, y, "-", color=shades[row.model], lw=1.2, label=f"{row.model} (S {row.S:.2g})")
                ax.fill_between(x, line["ci_low"].to_numpy(float), line["ci_high"].to_numpy(float),
                                color=shades[row.model], alpha=0.15, lw=0)  # fmt: skip
            if rows.empty:
                ax.text(0.5, 0.5, "no calibration fields in these rank arrays", transform=ax.transAxes, ha="center",
                        fontsize=8)  # fmt: skip
            # the reliability diagram spans the confidences the models reach (a small model's stay near 0)
            top = 1.0 if curve != "reliability" or rows.empty else min(1.0, 1.1 * float(rows[["x", "value"]].max().max()))
            ax.set(xlim=(0, top), ylim=(0, top), xlabel=xlabel, ylabel=ylabel, title=f"{dataset}: {curve}")
            ax.grid(True, alpha=0.3)
            legend_below(ax, fontsize=6)
            if i == 0:  # said once per dataset, above its first panel
                say_left_out(ax, "rank arrays without the calibration fields, not drawn: ",
                             sorted(lacking.loc[lacking["dataset"] == dataset, "model"]))  # fmt: skip
        for i, law in enumerate(("calibration_error", "pit_distance"), start=len(CURVES)):
            miscalibration_panel(axes[i, j], data, dataset, law)
    save(fig, png)


def miscalibration_panel(ax: Any, data: FigureData, dataset: str, law: str) -> None:
    """A miscalibration against S, log-log, every family's points, law and band (its exponent in the legend)."""
    metrics = data.tables["metrics"]
    palette = colors(metrics["family"].unique())
    ax.set_xscale("log")
    ax.set_yscale("log")
    if not any([draw_law(ax, data, family, dataset, law, None, palette[family]) for family in sorted(palette)]):
        ax.text(0.5, 0.5, "no calibration fields in these rank arrays", transform=ax.transAxes, ha="center")
    ax.set(xlabel=S_LABEL, ylabel=metric_for_law(law).axis_label(), title=dataset)
    legend_below(ax, fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    readable_log_ticks(ax)


def _shades(n: int) -> list[tuple[float, float, float, float]]:
    """Light to dark with size, one colour map: the curves' order is the sizes'."""
    from matplotlib import colormaps

    return [colormaps["viridis"](v) for v in np.linspace(0.9, 0.1, max(n, 1))[:n]]
