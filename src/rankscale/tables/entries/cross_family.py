"""The tables of rankscale.tables.cross_family, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import LAWS
from rankscale.tables.declaration import LAW_SETTINGS, Table

TABLES = [
    Table(
        name="cross_family",
        section=LAWS,
        build="rankscale.tables.cross_family:build_cross_family",
        needs=("metrics", "powerlaw_fits"),
        summaries=False,
        resampled=True,
        settings=(*LAW_SETTINGS, "law_k"),
        caption=(
            "Where a model of a family with fewer than two sizes (``family``, ``model``: e.g. one pretrained model) "
            "sits against the law of another family (``law_family``) on the same dataset: the law "
            "(``analysis.law_form``, fitted to ``law_n_models`` models between ``law_S_min`` and ``law_S_max``) "
            "predicts -log RBP_k (``metric = neg_log_rbp``, k of ``analysis.law_k``), cross-entropy and "
            "cross-entropy in bits per byte (``bpb``, comparable across tokenizers) at the model's "
            "S (``S_over_law_S_max``: how far beyond the law's sizes). ``predicted_ci_*``: percentile interval of the "
            "law refitted on every bootstrap replicate, for a new model's value: the law's sizes' scatter (tau^2) "
            "and a new size's deviation included, and with seeds a new run's; ``observed_ci_*``: the model's "
            "document-bootstrap interval; ``ratio`` = observed / predicted, its interval and ``p_value`` (ratio = "
            "1, two-sided) from the two combined draw by draw. Both families score the same documents, drawn once "
            "for both in every replicate, so the ratio is paired. A ``note`` says why a row has no numbers (no family with a law on the dataset, a law "
            "not fitted). Empty when every family has two or more sizes."
        ),
    ),
]
