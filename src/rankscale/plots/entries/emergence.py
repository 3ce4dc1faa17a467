"""The figures of rankscale.plots.emergence, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import CLIP_NOTE, Figure
from rankscale.sections import EMERGENCE

FIGURES = [
    Figure(
        name="fig7_emergence",
        section=EMERGENCE,
        number="7",
        title="−log p(N, k) against S",
        plot="rankscale.plots.emergence:fig_emergence",
        tables=("emergence", "powerlaw_fits"),
        caption=(
            "Paper Fig. 7, tested: -log p_{N,k} against S on log-log axes, one panel per k of "
            "``analysis.emergence_k`` (rows: dataset and family), one colour per run length N. Filled circles: "
            "the measured fraction of N consecutive scored tokens all inside the top-k, with document-bootstrap "
            "intervals; crosses: RBP_k^N (independent positions); triangles: a first-order Markov chain of hits; "
            "lines: the paper's sequence law N C S^-alpha from the fitted -log RBP_k law. Where the circles lie "
            "below the crosses, hits cluster (a hit makes the next one likelier) and independence underestimates "
            "the runs. Rates of 0 or 1 have no place on a log axis and are left out (emergence.csv has them); the "
            "points set each panel's range, so an interval that reaches a rate of 0 (too few runs in some "
            "resamples: -log p unbounded) or runs past the panel ends in an arrowhead at its edge. A degenerate "
            "interval (zero width, or no bounds) has no bar and a hollow marker in a grey ring. A family of one size "
            "has no law: its panels show the measured points, titled so. One legend for all panels, below them."
        ),
    ),
    Figure(
        name="fig7b_emergence_probability",
        section=EMERGENCE,
        number="7b",
        title="N-run rate against S",
        plot="rankscale.plots.emergence:fig_emergence_probability",
        tables=("emergence", "powerlaw_fits"),
        settings=("emergence_extrapolate",),
        caption=(
            "Emergence in probability space: the measured N-run rate p_{N,k} against S (linear axis) with "
            "document-bootstrap intervals, and exp(-N C S^-alpha) from the fitted law over the measured sizes "
            "(solid). Beyond them the law is drawn dotted on a grey band only when ``figures.emergence_extrapolate`` "
            "asks for that many decades; the sigmoid-looking rise of larger N is the paper's picture of emergence. "
            "One legend for all panels, below them. " + CLIP_NOTE
        ),
    ),
]
