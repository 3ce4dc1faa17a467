"""Figures mirroring the paper's, from the result tables; each saved as PNG + PDF.

To add a figure: write `plot(data, settings, png)` in the module of its topic (or a new one
listed below) and add a `Figure` to that module's `FIGURES` list, naming the tables and
`figures:` settings it reads and its caption (give new settings a default in
config/schema.yaml). The `figure` rule draws every registered figure in its own job.
"""

from __future__ import annotations

from rankscale.plots import emergence, laws, lognormal, seeds, training
from rankscale.plots.common import Figure, FigureData, save

FIGURES: dict[str, Figure] = {
    f.name: f for module in (laws, emergence, lognormal, training, seeds) for f in module.FIGURES
}

__all__ = ["FIGURES", "Figure", "FigureData", "save"]
