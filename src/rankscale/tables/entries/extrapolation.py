"""The tables of rankscale.tables.extrapolation, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import OUT_OF_SAMPLE
from rankscale.tables.declaration import LAW_SETTINGS, Table

TABLES = [
    Table(
        name="extrapolation",
        section=OUT_OF_SAMPLE,
        build="rankscale.tables.extrapolation:build_extrapolation",
        needs=("metrics",),
        summaries=False,
        resampled=True,
        settings=(*LAW_SETTINGS, "law_k"),
        caption=(
            "Out-of-sample test: the law fitted without the largest size (``n_fit`` = all but one) and, "
            "with at least four sizes, without the two largest, predicts the held-out sizes' RBP_k "
            "(``analysis.law_k``) and cross-entropy. ``predicted_ci_*``: the interval for the held-out model's "
            "value on these documents (``judged = paired``): the observed and predicted values share every "
            "document draw, so the document (and seed) variance is that of their difference replicate by "
            "replicate; a held-out size is a new draw of the sizes' scatter around the law, so ``tau2`` (REML on "
            "the fitted sizes) enters too, with every value of it the fitted sizes allow (its generalized pivotal "
            "quantity); ``df``: the interval as Student's t at ``tau2`` (empty: no wider than Normal). ``covered``: "
            "the observed value lies inside; ``rel_error`` = predicted / observed - 1. A family with fewer than three sizes has nothing "
            "to hold out: one row per dataset says so in ``note``."
        ),
    ),
]
