"""The tables of rankscale.tables.laws, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import LAWS
from rankscale.tables.declaration import LAW_SETTINGS, Table

TABLES = [
    Table(
        name="powerlaw_fits",
        section=LAWS,
        build="rankscale.tables.laws:build_powerlaw_fits",
        needs=("metrics",),
        summaries=False,
        resampled=True,
        settings=LAW_SETTINGS,
        caption=(
            "Power-law fits ``y = C S^-alpha`` per family, dataset and k, by ordinary least squares of "
            "log y on log S (``analysis.law_form`` can name another form of ``rankscale.laws.FORMS``; its "
            "parameters are then the columns). ``metric = neg_log_rbp`` fits y = -log RBP_k; ``metric = ce`` fits "
            "the cross-entropy. R² is computed in log space. ``*_ci_low``, ``*_ci_high``: percentile intervals "
            "of the parameters refitted on every replicate, which carry every source of noise ``noise`` names: "
            "documents (the same resample for every model), seeds where a size has several, and sizes: the "
            "models' scatter around their law beyond documents and seeds, a random effect per size whose "
            "variance ``tau2`` (log space) is estimated by REML with the replicates' full covariance; the interval "
            "carries every tau2 the sizes' residuals allow, weighted as they allow it (tau2's generalized pivotal "
            "quantity), and ``df`` states it as Student's t at the estimated ``tau2`` (empty: no wider than "
            "Normal). ``lof_q``: the lack-of-fit "
            "statistic r'V^-1 r of the generalised least-squares residuals with documents (and seeds) alone, "
            "chi-square on ``lof_df`` under the law, ``lof_p`` its p-value: a small one says the sizes scatter "
            "more than documents explain; where the documents' per-unit sums are loaded, ``lof_q`` is the law's "
            "residual sum of squares in log space and ``lof_p`` its sign-flip test over the documents' own errors. "
            "``lof_n_eff``: the effective number of documents (Kish) the test rests on; under 20 the lack of fit "
            "is not testable, whichever test the law takes (every law here, the histogram statistics' included): "
            "``lof_p`` is empty, ``lof_q`` still reported. ``ci_note``: why a fitted law has no intervals (every "
            "``*_ci_*`` and ``ci_mc_error`` empty): some model's statistic has no interval of its own in "
            "metrics.csv (its replicates biased under resampling, the per-model rule), and the law's refits read "
            "those same replicates; it names the models. ``alpha_ci_*_documents``: the interval documents (and seeds) alone "
            "give, for comparison. A law of as many sizes as parameters has no size level (``noise`` says so). "
            "``snr``: standard deviation of log y across the sizes over the "
            "mean bootstrap standard deviation of log y of one model; below ``figures.snr_threshold`` the law "
            "is hard to tell from noise. A row whose ``note`` is set could not be fitted (fewer than two "
            "sizes, or RBP_k = 1 for some model)."
        ),
    ),
    Table(
        name="exponent_contrasts",
        section=LAWS,
        build="rankscale.tables.laws:build_exponent_contrasts",
        needs=("metrics", "powerlaw_fits"),
        summaries=False,
        resampled=True,
        settings=LAW_SETTINGS,
        caption=(
            "Exponents compared over the same models, paired: the difference of two OLS exponents is the exponent "
            "of the law of the ratio of the two quantities, fitted with its own document covariance (of the "
            "replicate-by-replicate ratios), its own scatter of sizes ``tau2`` and lack of fit (``lof_*``, as in "
            "powerlaw_fits.csv); percentile interval of its refits and a two-sided bootstrap p-value for a "
            "difference of zero, both including that scatter (``noise``). The paper's "
            "coincidence (alpha of -log RBP_k minus alpha of cross-entropy, every k), and the laws of the error "
            "entropy and of the fitted lognormal's entropy and -log P(R = 1) against cross-entropy and "
            "-log RBP_1 (``versus``, ``versus_k``), and every calibration law of nucleus_fits.csv against -log RBP_1. A family of one size has no law: one row per dataset says so "
            "in ``note``. Where either law's fit has no interval (powerlaw_fits.csv's ``ci_note``: some model's "
            "statistic biased under resampling), the contrast has none either (``ci_low``, ``ci_high``, ``p_value`` "
            "empty) and ``note`` says why."
        ),
    ),
    Table(
        name="form_comparison",
        section=LAWS,
        build="rankscale.tables.laws:build_form_comparison",
        needs=("metrics",),
        summaries=False,
        settings=("forms", "law_k"),
        caption=(
            "Functional forms compared per family, dataset, metric (and k of ``analysis.law_k``): the pure power "
            "law ``C S^-alpha`` against ``E + C S^-alpha`` (E >= 0, Huber loss on log y from a grid of starts, as "
            "Hoffmann et al. 2022). ``loo_rmse``: leave-one-out error in log space; ``aicc``: corrected Akaike "
            "criterion (log space; infinite when there are too few sizes for the form); ``preferred``: the lowest "
            "AICc, ties to the simpler form, so with few sizes the pure law wins unless the data demand a floor. "
            "``not_identified``: a parameter at a bound of its domain (the floor E at 0: the data show no floor), "
            "whose value is where the optimizer stopped, not an estimate."
        ),
    ),
]
