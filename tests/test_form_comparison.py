"""form_comparison.csv marks a parameter at a bound of its domain as not identified, as every law table does.

The offset law E + C S^-alpha fitted to a pure power law runs its floor E to the optimizer's bound (0, or a
hair above: 1e-10 in the default run). That value is where the search stopped, not an estimate of a floor:
the row says so in `not_identified` (`FitForm.unidentified`, the one rule powerlaw_fits.csv follows too). A
law with a clear floor identifies E and is not marked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankscale.laws import FORMS, Points, compare_forms
from rankscale.tables import read_table, write_table
from rankscale.tables.laws import form_comparison_table

SIZES = np.geomspace(2e4, 3e6, 6).round()  # whole numbers of parameters, as a table holds them
BOTH = [FORMS["power_law"], FORMS["offset_power_law"]]
AT_BOUND = "E at its bound 0 in the fit: not identified"


def jitter(seed: int) -> np.ndarray:
    return np.exp(np.random.default_rng(seed).normal(0, 0.003, SIZES.size))


def offset_row(y: np.ndarray) -> dict:
    return next(r for r in compare_forms(Points.of(SIZES), y, BOTH) if r["form"] == "offset_power_law")


@pytest.mark.parametrize("noise", [None, 4, 5])  # exact, and two draws whose fitted floor lands on 0 too
def test_a_pure_power_law_leaves_the_floor_not_identified(noise: int | None) -> None:
    y = 3.0 * SIZES**-0.1 * (1.0 if noise is None else jitter(noise))
    rows = compare_forms(Points.of(SIZES), y, BOTH)
    pure, offset = rows
    assert offset["E"] <= 1e-6 * np.median(y)  # at the bound: where the search stopped
    assert offset["not_identified"] == AT_BOUND
    assert pure["not_identified"] == "" and pure["preferred"]  # the pure law has no bounded parameter


def test_a_clear_floor_is_identified() -> None:
    y = (0.5 + 30 * SIZES**-0.3) * jitter(0)
    offset = offset_row(y)
    assert offset["E"] == pytest.approx(0.5, rel=0.1) and offset["not_identified"] == "" and offset["preferred"]


def test_a_floor_away_from_its_bound_by_noise_alone_is_not_marked() -> None:
    """The rule is the bound's, not a guess at the truth: a pure law whose noise lifts E off 0 is fitted there."""
    offset = offset_row(3.0 * SIZES**-0.1 * jitter(1))
    assert offset["E"] > 1e-3 and offset["not_identified"] == ""


def test_forms_without_bounds_have_no_such_column() -> None:
    rows = compare_forms(Points.of(SIZES), 3.0 * SIZES**-0.1, [FORMS["power_law"]])
    assert "not_identified" not in rows[0]


def test_a_form_that_cannot_be_fitted_is_not_marked() -> None:
    """Two sizes are too few for the offset law (it needs three): its row has a note and nothing to mark."""
    rows = compare_forms(Points.of(SIZES[:2]), 3.0 * SIZES[:2] ** -0.1, BOTH)
    assert rows[1]["note"] and rows[1]["not_identified"] == ""


def test_the_table_says_which_floor_is_not_identified(tmp_path) -> None:
    """form_comparison.csv, written and read back: the pure family's floor is marked, the floored one's is not."""
    pure, floored = 3.0 * SIZES**-0.1, (0.5 + 30 * SIZES**-0.3) * jitter(0)
    metrics = pd.DataFrame(
        [
            {
                "family": family,
                "dataset": "d",
                "metric": "ce",
                "k": pd.NA,
                "S": int(S),
                "value": float(v),
                "final": True,
            }  # fmt: skip
            for family, y in (("pure", pure), ("floored", floored))
            for S, v in zip(SIZES, y, strict=True)
        ]
    ).astype({"k": "Int64"})
    table = form_comparison_table(metrics, ["power_law", "offset_power_law"], [1])
    write_table("form_comparison", table, tmp_path / "form_comparison.csv")
    back = read_table(tmp_path / "form_comparison.csv").set_index(["family", "form"])
    assert back.loc[("pure", "offset_power_law"), "not_identified"] == AT_BOUND
    assert pd.isna(back.loc[("floored", "offset_power_law"), "not_identified"])  # empty: read back as NaN
    assert back["not_identified"].notna().sum() == 1
