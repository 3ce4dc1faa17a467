"""The figures of rankscale.plots.training, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import CLIP_NOTE, Figure
from rankscale.sections import TRAINING_TOKENS

FIGURES = [
    Figure(
        name="fig10_rbp_vs_tokens",
        section=TRAINING_TOKENS,
        number="10",
        title="Against training tokens D",
        plot="rankscale.plots.training:fig_tokens",
        tables=("metrics", "data_fits"),
        needs="checkpoints",
        caption=(
            "Scaling in training tokens: -log RBP_1 (top) and cross-entropy (bottom) against the training tokens D "
            "each checkpoint has seen, one colour per size, with document-bootstrap error bars and each size's "
            "power law in D (its exponent beta with interval in the legend under each panel; data_fits.csv). "
            + CLIP_NOTE
        ),
    ),
    Figure(
        name="fig11_compute_frontier",
        section=TRAINING_TOKENS,
        number="11",
        title="Compute frontier",
        plot="rankscale.plots.training:fig_compute_frontier",
        tables=("metrics", "joint_fits"),
        needs="checkpoints",
        caption=(
            "Size and data traded at a compute budget: every checkpoint at its training compute C = 6 S D, one line "
            "per size, and (dashed) the compute frontier of the joint law y = E + A S^-alpha + B D^-beta fitted to "
            "all of them (joint_fits.csv): at each C the lowest y the law allows, at S_opt = G (C/6)^(beta/(alpha+beta)). "
            "Dashed where S_opt and D_opt = C/(6 S_opt) both lie inside the measured sizes and training tokens; "
            "dotted where the law is extrapolated to an allocation no checkpoint measured (often a smaller model "
            "trained longer), so that part is a prediction, not an observation. A parameter at a bound of its "
            "domain (joint_fits.csv ``not_identified``) is named as not identified instead of given a value. "
            "Legends under each panel."
        ),
    ),
]
