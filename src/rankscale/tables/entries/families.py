"""The tables of rankscale.tables.families, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import LAWS
from rankscale.tables.declaration import Table

TABLES = [
    Table(
        name="family_contrasts",
        section=LAWS,
        build="rankscale.tables.families:build_family_contrasts",
        needs=("metrics", "powerlaw_fits"),
        summaries=False,
        resampled=True,
        settings=("level", "law_k", "law_form", "seed"),  # no refits: its intervals are t, not refitted
        caption=(
            "Exponents of two families' laws compared on the same dataset and quantity (cross-entropy, -log RBP_k at "
            "``analysis.law_k``, and cross-entropy in bits per byte, ``bpb``, the one that compares across "
            "tokenizers): ``difference`` = alpha(``family``) - alpha(``versus``). Both families score the "
            "same documents and every bootstrap replicate draws them once for both, so the document noise is "
            "paired (``sd_documents``: the difference's document standard deviation, their covariance included); "
            "each family's own scatter of sizes around its law (``tau2``, ``tau2_versus``: REML, log space) adds "
            "its variance, with every value of each family's tau^2 its sizes allow (a generalized pivotal quantity). "
            "Interval and ``p_value`` (difference = 0, two-sided) from that mixture of Normals; ``df``: the "
            "interval as Student's t at the estimated ``tau2`` (empty: no wider than Normal). Empty when fewer than two families have "
            "a law on a dataset."
        ),
    ),
]
