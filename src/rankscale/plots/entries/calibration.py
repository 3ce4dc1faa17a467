"""The figures of rankscale.plots.calibration, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import CLIP_NOTE, Figure
from rankscale.sections import CALIBRATION

FIGURES = [
    Figure(
        name="fig16_calibration",
        section=CALIBRATION,
        number="16",
        title="Calibration and nucleus coverage",
        plot="rankscale.plots.calibration:fig_calibration",
        tables=("calibration", "metrics", "powerlaw_fits"),
        resampled=True,
        caption=(
            "Calibration across scale, one column per dataset (calibration.csv; final models, one line per size, "
            "light to dark with S; bands: the cluster-robust t interval over documents of each point). Row 1: the "
            "nucleus coverage C(p), the share of truths inside the top-p nucleus that a top-p sampler keeps: a "
            "calibrated model lies on or above the dotted diagonal (on it but for the truth's own probability); "
            "below it the sampler cuts the truth more often than p promises. Row 2: the reliability diagram of the "
            "top-1 probability, 15 bins of equal token mass: below the diagonal overconfident. Row 3: the "
            "randomised PIT's distribution function, exactly the diagonal when calibrated. Rows 4 and 5: the top-1 "
            "calibration error and the PIT's distance from uniform (each root mean square, debiased across "
            "documents) against S with their power laws and intervals: an exponent above 0 means calibration "
            "improves with scale, 0 flat, below 0 inverse scaling. Models whose rank arrays were made before the "
            "calibration fields have no curves. " + CLIP_NOTE
        ),
    ),
]
