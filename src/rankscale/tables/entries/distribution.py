"""The tables of rankscale.tables.distribution, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale import sections
from rankscale.limits import BIAS_LIMIT
from rankscale.tables.declaration import Table

TABLES = [
    Table(
        name="lognormal_fits",
        section=sections.LOGNORMAL,
        build="rankscale.tables.distribution:build_lognormal_fits",
        caption=(
            "Discrete truncated lognormal fits of the rank distribution, per model and dataset, by "
            "maximum likelihood over the rank histogram: P(R = r) is proportional to F(r + 1/2) - F(r - 1/2) "
            "on r = 1..|V|, F the lognormal CDF with parameters mu, sigma of log R (``truncated = False``: "
            "normalised over r = 1..inf instead, ``analysis.lognormal.truncate``). Intervals: conjecture.csv. A fit with "
            "a parameter at its optimizer's bound (mu at -50: ranks mostly at 1, the fit running towards a power law) "
            "is where the search stopped, not an estimate: mu, sigma and mu_over_sigma are empty and ``note`` says "
            "which parameter is at which bound."
        ),
    ),
    Table(
        name="conjecture",
        section=sections.LOGNORMAL,
        build="rankscale.tables.distribution:build_conjecture",
        resampled=True,
        settings=("level",),
        caption=(
            "The lognormal conjecture, per model and dataset: measured cross-entropy ``ce``; the error entropy "
            "``ee`` of the empirical rank distribution and CE's exact decomposition ce = ee + self_alignment + "
            "confidence (arXiv 2510.04067): ee the jackknife over documents of its plug-in value, confidence Chao2's "
            "estimate with the rank errors a sample missed, self_alignment ce less both (``ee_mm``: the "
            "plug-in's Miller-Madow correction, for comparison); the fitted lognormal "
            "``mu``, ``sigma`` and what it implies for a calibrated model (the paper's Appendix B): its entropy "
            "``ee_lognormal`` (the CE it predicts), ``neg_log_p1_lognormal`` (the -log RBP_1 it predicts), "
            "-log RBP_k at the ``analysis.law_k``, and the paper's closed-form approximation "
            "``ce_appendix_b`` / ``neg_log_p1_appendix_b``. Intervals: ``ce``'s as metrics.csv's (a cluster-robust t "
            "over documents); the others BCa over a document bootstrap with ``replicates`` replicates "
            "(``analysis.lognormal.replicates``; the lognormal refitted by one Newton step) and the jackknife over "
            "documents where BCa is stable under a redraw of the replicates, else the jackknife t over documents "
            "(as metrics.csv's ``jackknife_t``; ``ci_note`` names it), empty where the statistic is biased under "
            f"resampling beyond {2 * BIAS_LIMIT:g} of an SE (for ee, self_alignment and confidence the replicates "
            "are their estimators' recentred on them, and the bias is the estimators' residual bias; confidence "
            "and self_alignment take metrics.csv's ``bootstrap_se_t``, the replicates' SD with t), with "
            "``ci_note`` saying which and why; ``ci_mc_error``: the "
            "largest Monte Carlo standard error of the row's interval ends, as a share of that interval's width "
            "(how far another draw of as many replicates would move them; for BCa the delta method at its adjusted "
            "levels, 0 for the jackknife t). Where the lognormal is at "
            "a bound of its optimizer (or cannot be fitted), mu, sigma and everything derived from the fit are empty, "
            "values and intervals, and ``note`` says why; the measured quantities stay."
        ),
    ),
    Table(
        name="rank_distribution_tests",
        section=sections.LOGNORMAL,
        build="rankscale.tables.distribution:build_rank_distribution_tests",
        resampled=True,
        settings=("level",),
        caption=(
            "Is the rank distribution lognormal? Per model and dataset, maximum-likelihood fits on 1..|V| of "
            "the discrete truncated lognormal and of each alternative (a truncated discrete power law "
            "``zipf``, a discrete stretched exponential ``stretched_exp``, a discrete truncated "
            "``loglogistic``): log-likelihood per token, and the mean log-likelihood ratio per token ``mean_llr`` "
            "(lognormal - alternative: > 0 favours the lognormal) with its interval over documents, the cluster-robust "
            "t of the documents' own means as metrics.csv's ratios (``mean_llr_ci_mc_error``: the Monte Carlo "
            "standard error of its ends as a share of its width, 0 for this exact interval; ``ci_reliable`` / "
            "``ci_note`` as in metrics.csv). Vuong's test by documents: ``t`` = mean_llr / its cluster-robust "
            "standard error, on ``df`` degrees of freedom (Bell and McCaffrey's, the interval's), and the two-sided "
            "``p_value`` from them, so p < 1 - level exactly when the interval leaves out 0 (tokens of one document "
            "are not independent: Vuong's token-level variance claimed certainty the documents do not give). "
            "``better``: the family on whose side the interval lies (``lognormal`` above 0, the alternative below), "
            "or 'undecided' where it holds 0. A fit with a parameter at its "
            "optimizer's bound shows it as nan in ``alternative_params``; ``note`` (the last column) says which "
            "fit has which parameter at which bound: the row then compares the limits the fits ran to, not "
            "fitted distributions, and ``better`` is 'not identified'."
        ),
    ),
    Table(
        name="lognormal_trends",
        section=sections.LOGNORMAL,
        build="rankscale.tables.distribution:build_lognormal_trends",
        resampled=True,
        settings=("level", "seed"),
        caption=(
            "Hypothesis 2 of the paper: mu, sigma and mu/sigma of the fitted lognormal against log S, per family "
            "and dataset: slope, intercept and R² of the least-squares line, with intervals from refitting "
            "on every bootstrap replicate, which carry the sizes' scatter around the line too (``tau2``, in the "
            "quantity's units, by REML with the replicates' full covariance; ``lof_q``, ``lof_df``, ``lof_p``, "
            "``lof_n_eff``: lack of fit against documents alone, not testable (``lof_p`` empty) under 20 effective "
            "documents; ``df``: the interval as Student's t; as in "
            "powerlaw_fits.csv; ``ci_mc_error``: the largest Monte Carlo standard error of the three intervals' ends "
            "as a share of the interval's width). Models without an identified lognormal (a parameter at a bound, or "
            "none fitted) are left out, and ``note`` names them; ``n_models`` counts the models fitted. Fewer "
            "than two sizes left: a note row."
        ),
    ),
]
