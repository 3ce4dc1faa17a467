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
]
