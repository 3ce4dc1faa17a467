"""The figures of rankscale.plots.lognormal, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import CLIP_NOTE, Figure
from rankscale.sections import LOGNORMAL

FIGURES = [
    Figure(
        name="fig8b_derived_laws",
        section=LOGNORMAL,
        number="8b",
        title="Laws derived from the lognormal",
        plot="rankscale.plots.lognormal:fig_derived_laws",
        tables=("metrics", "powerlaw_fits", "exponent_contrasts"),
        resampled=True,
        caption=(
            "Paper Fig. 8b, the unification conjecture: per dataset, the measured cross-entropy and -log RBP_1 "
            "against S with their power laws, beside what the discrete lognormal fitted to each model's ranks "
            "implies for a calibrated model (Appendix B): its entropy (the CE it predicts) and -log P(R = 1) (the "
            "-log RBP_1 it predicts), each with its own law; alphas with intervals in the legend, under each panel. "
            "The legend's heading gives the difference of the implied and measured exponents with its "
            "paired-bootstrap interval: an interval holding 0 means the lognormal reproduces that law's exponent; "
            "the two levels (the lines' heights) differ by how far the model is from calibrated and the ranks from "
            "lognormal. A model whose lognormal has a parameter at its optimizer's bound implies nothing: its implied "
            "points are left out and named above the panel. Error bars: document-bootstrap percentile intervals. "
            + CLIP_NOTE
        ),
    ),
    Figure(
        name="fig8c_mu_sigma",
        section=LOGNORMAL,
        number="8c",
        title="mu/sigma of the rank lognormal against S",
        plot="rankscale.plots.lognormal:fig_mu_sigma",
        tables=("conjecture", "lognormal_trends"),
        caption=(
            "Paper Fig. 8 (right), Hypothesis 2: mu/sigma (top) and mu, sigma (bottom) of the fitted rank "
            "lognormal against S with document-bootstrap intervals, and their least-squares lines in log S "
            "(slopes with intervals in the legend under each panel; lognormal_trends.csv). Under the conjecture a "
            "steady trend in mu/sigma ties the CE and RBP laws together. Models whose fit has a parameter at a bound "
            "(a limit, not an estimate) are left out of the points and the lines and named above the panel. "
            + CLIP_NOTE
        ),
    ),
    Figure(
        name="fig8d_ce_decomposition",
        section=LOGNORMAL,
        number="8d",
        title="Cross-entropy decomposed",
        plot="rankscale.plots.lognormal:fig_decomposition",
        tables=("conjecture", "powerlaw_fits"),
        caption=(
            "Cross-entropy split into its three parts (arXiv 2510.04067, 'What Scales in Cross-Entropy Scaling "
            "Law?'): error entropy (the entropy of the rank distribution), self-alignment KL(p || q) and confidence "
            "-log C, stacked per model (they sum to the measured CE, the black mark, exactly). That paper claims "
            "only the error entropy follows a power law in S while the other two stay roughly flat: the legend "
            "(under each panel) gives each part's fitted exponent with its interval, so the claim can be read off "
            "for this data. Error bars: document-bootstrap intervals of each part, at the top of its segment. "
            + CLIP_NOTE
        ),
    ),
    Figure(
        name="fig8e_rank_histogram",
        section=LOGNORMAL,
        number="8e",
        title="Rank distributions",
        plot="rankscale.plots.lognormal:fig_rank_histogram",
        tables=("lognormal_fits", "rank_distribution_tests"),
        hists=True,
        caption=(
            "The distribution of the correct token's rank for the smallest and largest model of each family, in "
            "logarithmic bins (probability per rank, so sparse tail counts do not dominate), with the fitted "
            "discrete lognormal (solid) and the best-fitting alternative family (dotted; Vuong's t by documents > 0 "
            "favours the lognormal, rank_distribution_tests.csv), both averaged over the same bins. Fits with a parameter at a bound "
            "are limits, not results: they are not drawn (named above the panel), the best alternative is the best "
            "fit inside its bounds, and against a lognormal at a bound it carries no verdict."
        ),
    ),
]
