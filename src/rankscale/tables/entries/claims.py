"""The tables of rankscale.tables.claims, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import LAWS
from rankscale.tables.declaration import LAW_SETTINGS, Table

TABLES = [
    Table(
        name="paper_claims",
        section=LAWS,
        build="rankscale.tables.claims:build_paper_claims",
        needs=("metrics", "powerlaw_fits"),
        summaries=False,
        resampled=True,
        settings=LAW_SETTINGS,
        caption=(
            "The paper's published claims (arXiv 2510.20387), checked against this run per family and dataset: "
            "``claim`` names one, ``paper`` says it, ``value`` is this run's (R² of the law of -log RBP_k at ``k``; "
            "alpha; a paired difference of exponents), ``ci_low``, ``ci_high`` its interval as in "
            "powerlaw_fits.csv and exponent_contrasts.csv. ``holds``: yes where the whole interval lies on the "
            "claim's side of its threshold, no where it lies wholly beyond, undecided where it straddles it "
            "(``note`` says when a point is judged without an interval); not testable here where this run has no "
            "law for it (the k is not on its grid or above |V|, a family of one size), with the reason in "
            "``note``."
        ),
    ),
]
