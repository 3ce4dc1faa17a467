"""The figures of rankscale.plots.tokens, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import Figure
from rankscale.sections import STRATA

FIGURES = [
    Figure(
        name="fig15_token_trajectories",
        section=STRATA,
        number="15",
        title="Which tokens a larger model gets right",
        plot="rankscale.plots.tokens:fig_token_trajectories",
        tables=("token_churn", "token_learning", "token_slopes", "rank_transitions"),
        caption=(
            "Every scored token followed across the sizes of each family (one row per family and dataset). "
            "First panel: the share of tokens that enter the top k (gained, circles) and leave it (lost, triangles) "
            "between each size and the next smaller one, at k = 1 and 10, against the larger size; dotted, half the "
            "share that flips between two seeds of the same size (the noise floor per direction), where a size has "
            "several seeds. Second: RBP_1 at each size beside the share of tokens ranked first there and at every "
            "larger size (learned and kept); the gap is tokens a larger model loses again. Third: the spread of the "
            "per-token slopes of log rank against log S (quantiles) against the spread noise alone would give "
            "around their mean (seeds, else permutations of the sizes): a pure shift of the rank distribution would "
            "make them equal. Fourth: the transition matrix of rank between the two largest sizes on log bins, each "
            "row the shares of that bin's tokens. Error bars: 95% document-bootstrap intervals (token_churn.csv, "
            "token_learning.csv, token_slopes.csv, rank_transitions.csv)."
        ),
    )
]
