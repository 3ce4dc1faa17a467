"""The tables of rankscale.tables.strata, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale import sections
from rankscale.tables.declaration import LAW_SETTINGS, Table

TABLES = [
    Table(
        name="strata",
        section=sections.STRATA,
        build="rankscale.tables.strata:build_strata",
        resampled=True,
        settings=("level",),
        caption=(
            "Metrics by stratum of the scored tokens (``analysis.strata``), per model and dataset: ``kind`` is the "
            "partition (``frequency``: the target's frequency rank among the dataset's scored targets; ``context``: "
            "tokens before the target in its window; ``kind``: what the target token is), ``stratum`` its bin. "
            "``n_stratum`` and ``share``: the stratum's scored tokens and their share of the model's; ``metric = "
            "rbp``: RBP_k at the k of ``analysis.law_k``; ``metric = ce``: cross-entropy (nats). Intervals: the "
            "cluster-robust t of the documents' own ratios, as metrics.csv's (``ci_reliable`` / ``ci_note`` as "
            "there); a value or share observed as 0 (1) in every document has a one-sided upper (lower) bound, "
            "which ``ci_note`` names with how it was derived."
        ),
    ),
    Table(
        name="strata_fits",
        section=sections.STRATA,
        build="rankscale.tables.strata:build_strata_fits",
        resampled=True,
        settings=LAW_SETTINGS,
        caption=(
            "The law of each stratum (``analysis.law_form``, as powerlaw_fits.csv) per family, dataset, stratum "
            "kind, stratum, metric and k: y = -log RBP_k of the stratum's tokens (``metric = neg_log_rbp``) or their "
            "cross-entropy (``metric = ce``) against S, with intervals from refitting on every bootstrap replicate. "
            "``lof_*`` as there: not testable (``lof_p`` empty) under 20 effective documents of the dataset, even "
            "where the stratum's tokens spread evenly over them (``lof_n_eff``: the fewer of the two). "
            "A ``note`` says why a row was not fitted (one size, or RBP_k = 1 in the stratum)."
        ),
    ),
    Table(
        name="strata_contrasts",
        section=sections.STRATA,
        build="rankscale.tables.strata:build_strata_contrasts",
        resampled=True,
        settings=LAW_SETTINGS,
        caption=(
            "Do strata scale differently? Per family, dataset, stratum kind and law: the exponent of each stratum "
            "minus that of the kind's ``reference`` stratum (the most frequent tokens, the shortest contexts, "
            "words): the exponent of the law of the ratio of the two strata's quantities over the same models, "
            "with its own document covariance and scatter of sizes (``tau2``, as in exponent_contrasts.csv): "
            "percentile interval and two-sided p-value, the sizes' scatter included (``noise``). Compare the rows of ``metric = neg_log_rbp`` with those of ``metric = ce`` to see whether the "
            "relative-based and the absolute metric disagree by stratum."
        ),
    ),
]
