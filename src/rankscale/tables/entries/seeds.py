"""The tables of rankscale.tables.seeds, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import SEEDS
from rankscale.tables.declaration import Table

TABLES = [
    Table(
        name="seed_variance",
        section=SEEDS,
        build="rankscale.tables.seeds:build_seed_variance",
        needs=("metrics",),
        summaries=False,
        resampled=True,
        settings=("level", "law_k", "seed"),
        caption=(
            "Training-run noise against evaluation noise, per size trained with several seeds (``seeds``), dataset "
            "and metric (cross-entropy, RBP_k at ``analysis.law_k``): ``var_seeds``, the variance of the metric "
            "across the seeds' runs (the same documents), against ``var_documents``, the document-bootstrap "
            "variance of one run's value (their mean over the runs); ``share_seeds`` = var_seeds / (var_seeds + "
            "var_documents). Intervals: the hierarchical bootstrap (runs resampled within the size, their spread "
            "corrected by m / (m - 1), and documents), percentile. With few seeds they are wide: three runs say "
            "little about a variance. Empty when no size has several seeds."
        ),
    ),
    Table(
        name="seed_fits",
        section=SEEDS,
        build="rankscale.tables.seeds:build_seed_fits",
        needs=("metrics", "powerlaw_fits"),
        summaries=False,
        resampled=True,
        settings=("level", "law_k", "law_form", "refits"),
        caption=(
            "The law (``analysis.law_form``) fitted to each seed's final models alone, per family, dataset, metric "
            "(cross-entropy, -log RBP_k at ``analysis.law_k``) and seed, with intervals over documents and that "
            "seed's sizes' scatter around its law (``tau2``, ``lof_*``, ``df``, ``noise``: as powerlaw_fits.csv); "
            "and per "
            "law the spread of the exponent across the seeds (``exponent_seed_*``: mean, standard deviation, "
            "range) beside the pooled fit of powerlaw_fits.csv and its interval (``pooled_noise``: the sources it "
            "includes). A pooled interval that is narrower than the seeds' spread would be blind to training noise. "
            "Empty when no size has several seeds."
        ),
    ),
]
