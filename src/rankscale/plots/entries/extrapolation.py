"""The figures of rankscale.plots.extrapolation, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import CLIP_NOTE, Figure
from rankscale.sections import OUT_OF_SAMPLE

FIGURES = [
    Figure(
        name="fig9_extrapolation",
        section=OUT_OF_SAMPLE,
        number="9",
        title="Held-out sizes: relative error of the prediction",
        plot="rankscale.plots.extrapolation:fig_extrapolation",
        tables=("extrapolation",),
        caption=(
            "Out-of-sample test of the laws: the law fitted without the largest size (circles) or without the two "
            "largest (triangles) predicts each held-out size's RBP_k (k of ``analysis.law_k``) and cross-entropy. "
            "Plotted is each prediction's relative error, observed / predicted - 1 (0: predicted exactly), one "
            "point per quantity, held-out model and fit, with its paired interval from extrapolation.csv "
            "(``predicted_ci_low``, ``predicted_ci_high``, shown as observed / bound - 1). The interval is for the "
            "held-out model's value on these documents: observed and predicted share every document draw, so it "
            "includes the document noise of their difference (and the seeds' where a size has several), plus the "
            "sizes' scatter around the law (``tau2``) where the fitted sizes can estimate it, Student's t on "
            "``df``; each panel's title names what its intervals include (column ``noise``). A filled marker: the "
            "interval holds 0, the observed value is covered (``covered``); hollow and red: it is not, the law "
            "missed by more than that noise. A dataset where no family has three sizes says so instead. " + CLIP_NOTE
        ),
    ),
]
