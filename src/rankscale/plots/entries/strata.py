"""The figures of rankscale.plots.strata, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import CLIP_NOTE, Figure
from rankscale.sections import STRATA

FIGURES = [
    Figure(
        name="fig13_strata",
        section=STRATA,
        number="13",
        title="Exponent of each stratum",
        plot="rankscale.plots.strata:fig_strata",
        tables=("strata_fits",),
        caption=(
            "Which tokens carry the law: the exponent alpha of each stratum's law, -log RBP_k = C S^-alpha for k = "
            "1, 10 and 100 (those of ``analysis.law_k``) and the same law of the stratum's cross-entropy, one column "
            "per stratum kind of ``analysis.strata`` (target frequency rank, context length, what the token is), "
            "one row per family and dataset with laws. Strata on the x axis in their table order; the four laws "
            "side by side at each stratum; the line at 0 is no scaling. Error bars: percentile intervals of the "
            "exponent refitted on every bootstrap replicate of the documents (strata_fits.csv; seeds too where "
            "sizes have several). A stratum whose law could not be fitted (one size, or RBP_k of 0 or 1 at some "
            "size: strata_fits.csv's note) is left out and named above its panel; a family and dataset without "
            "any law is named in the legend; with no strata or no law at all the figure says so. The paired "
            "differences between strata, with p-values, are in strata_contrasts.csv. " + CLIP_NOTE
        ),
    ),
    Figure(
        name="fig13b_frequency",
        section=STRATA,
        number="13b",
        title="−log RBP₁ by target frequency",
        plot="rankscale.plots.strata:fig_frequency",
        tables=("strata", "strata_fits"),
        caption=(
            "-log RBP_1 (RBP_1: greedy-decoding accuracy) of the tokens of each target-frequency bin against "
            "non-embedding parameters S, log-log, one colour per bin (the most frequent tokens darkest), one panel "
            "per dataset and one row per family. Points: each size's final model with its document-bootstrap "
            "interval (strata.csv). Lines: each bin's fitted law (strata_fits.csv, ``analysis.law_form``) over the "
            "sizes it was fitted to; the legend gives its alpha with its interval. A bin with RBP_1 = 0 or 1 at "
            "some size has no law and such points have no place on the axes (the legend says how many); a family "
            "of one size shows its points alone; with no frequency strata the figure says so. " + CLIP_NOTE
        ),
    ),
]
