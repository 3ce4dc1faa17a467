"""The tables of rankscale.tables.training, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import TRAINING_TOKENS
from rankscale.tables.declaration import Table

TABLES = [
    Table(
        name="data_fits",
        section=TRAINING_TOKENS,
        build="rankscale.tables.training:build_data_fits",
        needs=("metrics",),
        summaries=False,
        resampled=True,
        settings=("level", "law_k"),
        caption=(
            "Scaling in training tokens: per size (its checkpoints, each with the training tokens D it has "
            "seen), the power law y = C D^-beta of cross-entropy and of -log RBP_k at ``analysis.law_k``, by "
            "least squares in log-log space, with intervals from refitting on every bootstrap replicate, which "
            "carry the checkpoints' scatter around the law too (a deviation per checkpoint: ``tau2``, ``lof_*``, "
            "``df``, ``noise`` as in powerlaw_fits.csv, ``lof_p`` empty under 20 effective documents; three "
            "checkpoints leave one degree of freedom). Empty "
            "when no model declares D (``ladder.train.checkpoints``, or ``D`` on model entries)."
        ),
    ),
    Table(
        name="joint_fits",
        section=TRAINING_TOKENS,
        build="rankscale.tables.training:build_joint_fits",
        needs=("metrics",),
        summaries=False,
        resampled=True,
        settings=("level", "law_k"),
        caption=(
            "Size and training tokens together: y = E + A S^-alpha + B D^-beta over every size and checkpoint, "
            "by least squares on log y (Levenberg-Marquardt from a grid of starts; Hoffmann et al. 2022 used a "
            "Huber loss, which with these residuals is nearly least absolute deviations, an estimator no "
            "least-squares noise model describes). Intervals: every bootstrap replicate refitted, with the scatter "
            "around the law beyond the documents in it, in two parts estimated together by REML: a run's "
            "deviation shared by its checkpoints (``tau2``) and each checkpoint's own (``tau2_checkpoint``); "
            "``df``: the multivariate Satterthwaite degrees of freedom of alpha's variance (t mixture as in "
            "powerlaw_fits.csv); ``lof_*`` as there. ``corner_*``: the law fitted without the largest size at its "
            "largest D predicts that point; ``rmse_log``: the fit's error in log space. ``not_identified``: "
            "parameters at a bound of their domain (E >= 0; exponents in [0, 5]) in the fit or in most refits, "
            "or whose interval spans the whole domain (at least 2.5% of refits at each end): their intervals are "
            "left empty rather than reported as a point or as the domain. ``at_bound``: parameters whose interval "
            "ends at such a bound, naming every such end (at least 2.5% of refits there): that end is the domain's "
            "edge, not a quantile of the noise. Empty when no model declares D."
        ),
    ),
]
