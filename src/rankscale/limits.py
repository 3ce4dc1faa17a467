"""The thresholds that flag a number (an unreliable interval, a biased BCa, few documents): the code that applies
them needs scipy, the captions that quote them (rankscale.tables.entries) must not, so they live here."""

from __future__ import annotations

# Below this many effective documents (Kish's), or where the documents' lengths are so uneven that Kish's design
# effect n / n_eff exceeds RELIABLE_DESIGN_EFFECT, metrics.csv marks one model's interval `ci_reliable` False. On the
# run's own documents (benchmarks/model_interval_coverage.py) pydoc's (design effect 4.1: one document of a third of
# the tokens) covered 89.6-97.3% at n_eff 7 and 90.7-98.0% at 14, and the few corpora of its documents that pass a laxer
# rule (n_eff >= 10 or 15, design effect <= 2: those that lack its longest documents) covered 62-86%; HumanEval's
# (1.3) covered 94.0-96.1% from n_eff 22 up. A sample cannot see the long documents its population has and it lacks.
RELIABLE_DOCUMENTS = 20.0
RELIABLE_DESIGN_EFFECT = 2.0

# The largest |z0| (the estimate's share of replicates below it, as a Normal quantile) at which a BCa interval of a
# histogram statistic is reported. The plug-in error entropy, self-alignment and confidence sat 1-6 bootstrap SDs
# from the truth on the run's documents, and there BCa covered none of the truths; the summaries now report
# bias-corrected estimators (the error entropy's jackknife over documents, confidence's Chao2) with replicates
# recentred on them (`rankscale.decomposition_jackknife`), whose z0 is the
# estimator's residual bias (benchmarks/histogram_bias.py), and whose leave-one-out values (what
# `rankscale.bca.jackknife_bias` reads) are that estimator's own over the other documents (`corrected_left_out`),
# not the plug-in's. The lognormal's statistics (|z0| < 0.25 in 97% of corpora) covered 94-97%
# (benchmarks/model_interval_coverage.py).
BIAS_LIMIT = 0.25

# Below this many effective documents a dataset is marked `few_documents` in metrics.csv: there the document
# bootstrap's percentile intervals of a model's metrics cover less than 93% of the time (benchmarks/few_documents.py,
# docs/science.md "Few documents"), and a law's lack of fit is tested from the documents themselves
# (`rankscale.laws.few_documents`): Hotelling's T^2 on Kish's n_eff - 1 rejects no exact law at pydoc's 6.6.
FEW_DOCUMENTS = 30.0
