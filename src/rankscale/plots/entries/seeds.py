"""The figures of rankscale.plots.seeds, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import Figure
from rankscale.sections import SEEDS

FIGURES = [
    Figure(
        name="fig12_seeds",
        section=SEEDS,
        number="12",
        title="Training-run noise across seeds",
        plot="rankscale.plots.seeds:fig_seeds",
        tables=("metrics", "powerlaw_fits", "seed_fits"),
        resampled=True,
        needs="seeds",
        caption=(
            "Training-run noise in the laws: for each family with several seeds per size, -log RBP_1 (top) and "
            "cross-entropy (bottom) against S, one colour per seed, with the law fitted to that seed's models alone "
            "(thin; seed_fits.csv), the law pooled over every run (black; powerlaw_fits.csv) and its band from the "
            "hierarchical bootstrap (grey: seeds resampled within each size, then documents). Where the seeds' laws "
            "fan out wider than a documents-only band, an exponent from one training run would be overconfident. "
            "Families with one run per size are left out; with none, the figure says so."
        ),
    ),
]
