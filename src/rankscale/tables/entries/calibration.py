"""The tables of rankscale.tables.calibration, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import CALIBRATION
from rankscale.tables.declaration import Table

TABLES = [
    Table(
        name="calibration",
        section=CALIBRATION,
        build="rankscale.tables.calibration:build_calibration",
        resampled=True,
        settings=("level",),
        caption=(
            "Calibration curves, one row per model, dataset, ``curve`` and ``point``: ``coverage`` is the nucleus "
            "coverage C(p) (``value``: the share of scored tokens whose truth lies inside the top-p nucleus, the "
            "tokens ranked at or above it holding less than p of the probability) at ``x`` = p from 0.01 to 0.99; "
            "a calibrated model lies on or above the diagonal (on it but for the truth's own probability). "
            "``reliability``: top-1 accuracy against the mean top-1 probability ``x`` of each of 15 bins of equal "
            "token mass (the diagonal when calibrated; below it overconfident). ``pit``: the randomised probability "
            "integral transform's distribution function F(u) at ``x`` = u (exactly the diagonal when calibrated). "
            "``n``: the tokens a point rests on; ``ci_low``, ``ci_high``: the cluster-robust t interval over "
            "documents, each point a ratio of document sums like RBP_k. The summary metrics (C(p) at 0.5-0.99, "
            "the calibration error, the PIT's distance, overconfidence, the Brier score, CE less the mean "
            "entropy, the calibrated nucleus p*(0.9)) are rows of metrics.csv, their laws in S rows of "
            "powerlaw_fits.csv. A model whose rank arrays were made before the calibration fields has one row, "
            "``curve = none``, whose ``ci_note`` says so (``extraction.refresh_calibration`` re-extracts exactly such "
            "arrays)."
        ),
    ),
    Table(
        name="nucleus_fits",
        section=CALIBRATION,
        build="rankscale.tables.calibration:build_nucleus_fits",
        needs=("powerlaw_fits", "exponent_contrasts"),
        summaries=False,
        settings=("law_form",),
        caption=(
            "The calibration laws in S, one row per family, dataset and law: ``metric`` = ``neg_log_nucleus_<p>`` "
            "fits -log C(p), the nucleus coverage's relative law (``p``: the nucleus), then the calibration error, "
            "the PIT's distance, |overconfidence|, the Brier score, |CE - mean entropy| and p*(0.9). ``alpha`` and "
            "its interval, ``tau2``, ``lof_p``, ``noise`` and ``ci_note`` are powerlaw_fits.csv's row of that law; "
            "``alpha_rbp1``: -log RBP_1's exponent, ``difference`` = alpha - alpha_rbp1 with its paired interval "
            "(``difference_ci_low``, ``difference_ci_high``) and p-value (``difference_p``), exponent_contrasts.csv's "
            "row of that law against -log RBP_1 (the same replicates refitted): whether -log C(p)'s exponent grows "
            "with p as alpha grows with k. A law that could not be fitted (a model's value 0, one size, no "
            "calibration fields) keeps its row with ``note`` saying why; a ``law_form`` without an exponent has no "
            "exponent columns."
        ),
    ),
]
