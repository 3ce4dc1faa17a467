"""Figures mirroring the paper's, from the result tables; each saved as PNG + PDF.

Each topic module lists its figures in `FIGURES` (a plot function, the tables and `figures:` settings
it reads, its caption); the `figure` rule draws every registered figure in its own job.
`plots.common` is the toolkit they share. CONTRIBUTING.md, "A new figure", says how to add one.
"""

from __future__ import annotations

from rankscale.plots import emergence, extrapolation, laws, lognormal, seeds, strata, tokens, training
from rankscale.plots.common import Figure, FigureData, save
from rankscale.registry import Registry

FIGURES: Registry[Figure] = Registry(
    "figure",
    (f for module in (laws, extrapolation, emergence, lognormal, training, seeds, strata, tokens) for f in module.FIGURES),
    lambda f: f.name,
)

__all__ = ["FIGURES", "Figure", "FigureData", "save"]
