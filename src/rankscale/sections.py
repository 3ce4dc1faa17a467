"""The analyses the report groups figures and tables by, in the paper's order.

Snakemake's report lists subcategories by name (JavaScript `localeCompare`), so each one's name starts with
its place in `SECTIONS`, two digits wide: "01. Laws in S" comes before "02. The k axis", and "10. Calibration"
after "09. Bits per byte" (one digit would sort "10." before "2."), whatever the titles.
"""

from __future__ import annotations

LAWS = "Laws in S"
K_AXIS = "The k axis"
EMERGENCE = "Emergence"
LOGNORMAL = "Lognormal conjecture"
OUT_OF_SAMPLE = "Out of sample"
TRAINING_TOKENS = "Training tokens"
SEEDS = "Seeds"
STRATA = "Strata"
BITS_PER_BYTE = "Bits per byte"
CALIBRATION = "Calibration"

SECTIONS = (LAWS, K_AXIS, EMERGENCE, LOGNORMAL, OUT_OF_SAMPLE, TRAINING_TOKENS, SEEDS, STRATA, BITS_PER_BYTE,
            CALIBRATION)  # fmt: skip


def subcategory(section: str) -> str:
    """The report's subcategory of `section`: its number and name ("04. Lognormal conjecture")."""
    if section not in SECTIONS:
        raise KeyError(f"{section!r} is not a report section ({', '.join(SECTIONS)})")
    return f"{SECTIONS.index(section) + 1:02d}. {section}"
