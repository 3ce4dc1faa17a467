"""The tables of rankscale.tables.emergence, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import EMERGENCE
from rankscale.tables.declaration import Table

TABLES = [
    Table(
        name="emergence",
        section=EMERGENCE,
        build="rankscale.tables.emergence:build_emergence",
        needs=("powerlaw_fits",),
        resampled=True,
        settings=("level", "law_form"),
        caption=(
            "Emergence: for a task needing N consecutive tokens inside the top-k, ``empirical`` is the measured "
            "fraction of N-token runs (consecutive scored tokens of one document; ``n_runs`` of them) that lie "
            "entirely inside the top-k; ``predicted`` = RBP_k^N assumes independent positions; ``markov`` = "
            "RBP_k · P(hit | previous hit)^(N-1) a first-order Markov chain of hits; ``fitted`` = "
            "exp(-N C S^-alpha) from the power-law fit; ``ratio_empirical_independent`` how far independence is "
            "off. Intervals over the documents: ``empirical`` by the cluster-robust t of the documents' own run "
            "rates (as metrics.csv's RBP_k), ``predicted`` RBP_k's to the power N, ``markov`` and the ratio by BCa; "
            "``ci_reliable`` / ``ci_note`` as metrics.csv's for the model's documents; an interval left out "
            "(BCa finding no valid interval) is named in ``ci_note`` with why. A run rate of 0 in every document "
            "has no cluster-robust variance: its interval is a one-sided upper bound (Clopper-Pearson on the "
            "effective number of documents as trials), said so in ``ci_note``, and the ratio and a Markov rate of 0 "
            "get upper ends from it (``ci_note`` says how)."
        ),
    ),
    Table(
        name="emergence_laws",
        section=EMERGENCE,
        build="rankscale.tables.emergence:build_emergence_laws",
        needs=("powerlaw_fits",),
        resampled=True,
        settings=("level", "law_form", "refits", "seed"),
        caption=(
            "The paper's emergence law -log p_{N,k} = N C S^-alpha tested on measured run rates: per family, "
            "dataset, k and N, the power law fitted to -log(empirical N-run rate), its exponent "
            "``alpha_runs`` against ``alpha_k`` of -log RBP_k (``difference``: the exponent of the law of their "
            "ratio, with its paired-bootstrap interval and p-value), and ``C_ratio`` = C_runs / (N C), 1 if positions were independent. A family of one size "
            "has no law: one row per dataset says so in ``note``. Every interval includes the sizes' scatter "
            "around the law (``tau2`` of the runs' law, ``tau2_difference`` of the ratio's, ``noise``; "
            "powerlaw_fits.csv says how)."
        ),
    ),
]
