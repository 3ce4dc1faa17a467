"""The figures of rankscale.plots.laws, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.plots.declaration import CLIP_NOTE, Figure
from rankscale.sections import BITS_PER_BYTE, K_AXIS, LAWS

INTERVAL_NOTE = (
    "Error bars: percentile intervals of a bootstrap over documents (``analysis.bootstrap``); shaded band: "
    "the pointwise interval of the law refitted on every bootstrap replicate. A family of one size (e.g. one "
    "pretrained model) has no law: its model is a star named beside it, and every other family's law is drawn on, "
    "dashed with its band, out to its S (cross_family.csv gives the numbers). " + CLIP_NOTE
)
LAW_TABLES = ("metrics", "powerlaw_fits")

FIGURES = [
    Figure(
        name="fig3_rbp1",
        section=LAWS,
        number="3",
        title="−log RBP₁ against S",
        plot="rankscale.plots.laws:fig_rbp1",
        tables=LAW_TABLES,
        resampled=True,
        caption=(
            "Paper Fig. 3: -log RBP_1 (RBP_1 = greedy-decoding accuracy) against non-embedding parameters "
            "S, one panel per dataset, with the fitted power law -log RBP_1 = C S^-alpha per family; the "
            "legend gives alpha with its bootstrap interval and R² (log space). " + INTERVAL_NOTE
        ),
    ),
    Figure(
        name="fig4_rbp_k",
        section=K_AXIS,
        number="4",
        title="−log RBP_k against S",
        plot="rankscale.plots.laws:fig_rbp_k",
        tables=LAW_TABLES,
        settings=("rbp_k",),
        k_settings=("rbp_k",),
        resampled=True,
        caption=(
            "Paper Fig. 4: -log RBP_k against S for the k of ``figures.rbp_k`` (rows) and each dataset "
            "(columns), with the fitted power laws, their exponents alpha (with intervals) and R². " + INTERVAL_NOTE
        ),
    ),
    Figure(
        name="fig5_large_k",
        section=K_AXIS,
        number="5",
        title="−log RBP_k at large k",
        plot="rankscale.plots.laws:fig_large_k",
        tables=LAW_TABLES,
        settings=("large_k",),
        k_settings=("large_k",),
        resampled=True,
        caption=(
            "Paper Fig. 5: -log RBP_k against S for large k (those of ``figures.large_k`` that do not "
            "exceed the vocabulary), where the paper sees the law weaken (k of 20,000-30,000 for "
            "50k-150k vocabularies). " + INTERVAL_NOTE
        ),
    ),
    Figure(
        name="fig6_r2_alpha_vs_k",
        section=K_AXIS,
        number="6",
        title="R² and alpha against k",
        plot="rankscale.plots.laws:fig_r2_alpha",
        tables=("powerlaw_fits",),
        settings=("snr_threshold",),
        caption=(
            "Paper Fig. 6: R² (top) and exponent alpha (bottom) of the -log RBP_k power-law fit as "
            "functions of k, per dataset and family, with bands from refitting on every bootstrap replicate. "
            "Grey: k whose spread across sizes is less than ``figures.snr_threshold`` times the resampling "
            "noise of one model (``snr`` in powerlaw_fits.csv), where the law cannot be told from noise. The "
            "paper finds R² close to 1 for small k and alpha growing with k. A dataset where no family has a law "
            "(every family of one size) says so instead."
        ),
    ),
    Figure(
        name="fig8a_ce_vs_rbp1",
        section=LAWS,
        number="8a",
        title="Cross-entropy and −log RBP₁ against S",
        plot="rankscale.plots.laws:fig_ce_vs_rbp1",
        tables=LAW_TABLES,
        resampled=True,
        caption=(
            "Paper Fig. 8 (left): cross-entropy (circles) and -log RBP_1 (squares) against S on shared log-log "
            "axes, each with its power-law fit, so the two exponents compare at a glance (the paper finds them "
            "close). " + INTERVAL_NOTE
        ),
    ),
    Figure(
        name="fig14_bits_per_byte",
        section=BITS_PER_BYTE,
        number="14",
        title="Bits per byte against S",
        plot="rankscale.plots.laws:fig_bits_per_byte",
        tables=LAW_TABLES,
        resampled=True,
        caption=(
            "Cross-entropy in bits per byte against S, one panel per dataset, every family on the same axes with "
            "its power law (``metric = bpb`` in metrics.csv and powerlaw_fits.csv): the scored targets' summed "
            "-log p over ln 2 times the UTF-8 bytes of their text, so families whose tokenizers cut the same text "
            "into different tokens compare, which cross-entropy in nats per token does not. A document's first "
            "token is never a target and counts in neither sum; a special token counts no byte. Within a family "
            "scored on the same documents with one tokenizer, bpb is CE times a constant: its exponent is CE's. "
            + INTERVAL_NOTE
        ),
    ),
]
