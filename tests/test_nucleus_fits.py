"""nucleus_fits.csv: each calibration law's fit beside its paired contrast with -log RBP_1, read from the two tables
that hold them (a view, no second fit): the right rows joined, notes kept, a form without an exponent handled."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from rankscale.laws import FORMS
from rankscale.metrics import CALIBRATION_METRICS
from rankscale.tables.calibration import nucleus_fits_table
from rankscale.tables.laws import CONTRASTS

POWER_LAW = FORMS["power_law"]
LAWS = [m.law for m in CALIBRATION_METRICS]


def fit(dataset: str, metric: str, alpha: float, k: float = math.nan, note: str | None = None) -> dict:
    return {"family": "f", "dataset": dataset, "metric": metric, "k": k, "n_models": 4, "S_min": 1e4, "S_max": 1e6,
            "alpha": math.nan if note else alpha, "alpha_ci_low": alpha - 0.01, "alpha_ci_high": alpha + 0.01,
            "r2": 0.9, "tau2": 0.0, "lof_p": 0.5, "lof_n_eff": 40.0, "noise": "documents", "ci_note": None,
            "note": note}  # fmt: skip


def contrast(dataset: str, metric: str, versus: str, versus_k: float, difference: float) -> dict:
    return {"family": "f", "dataset": dataset, "metric": metric, "k": math.nan, "versus": versus,
            "versus_k": versus_k, "alpha": 0.0, "alpha_versus": 0.04, "difference": difference,
            "ci_low": difference - 0.02, "ci_high": difference + 0.02, "p_value": 0.3, "note": None}  # fmt: skip


@pytest.fixture
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    fits = pd.DataFrame([fit("d", "neg_log_rbp", 0.04, k=1.0), fit("d", "ce", 0.02),
                         *(fit("d", law, 0.001 * (i + 1)) for i, law in enumerate(reversed(LAWS)) if law != "brier"),
                         fit("d", "brier", 0.0, note="a power-law fit needs S > 0 and finite y > 0")])  # fmt: skip
    # every calibration law against -log RBP_1, and a decoy against CE the view must not read
    contrasts = pd.DataFrame([*(contrast("d", law, "ce", math.nan, -9.0) for law in LAWS),
                              *(contrast("d", law, "neg_log_rbp", 1.0, 0.1 * (i + 1)) for i, law in enumerate(LAWS)
                                if law != "brier")])  # fmt: skip
    return fits, contrasts


def test_each_calibration_law_is_joined_with_its_contrast_against_rbp1(tables) -> None:
    fits, contrasts = tables
    got = nucleus_fits_table(fits, contrasts, POWER_LAW)
    assert list(got["metric"]) == LAWS  # the calibration laws only, in the registry's order: C(p) by p first
    for i, law in enumerate(LAWS):
        row = got.iloc[i]
        if law == "brier":
            assert np.isnan(row["alpha"]) and np.isnan(row["difference"]) and "finite y > 0" in row["note"]
            continue
        assert row["alpha"] == fits.loc[fits["metric"] == law, "alpha"].item()
        assert row["difference"] == pytest.approx(0.1 * (i + 1))  # the RBP_1 contrast, never the CE decoy
        assert row["difference_ci_low"] == pytest.approx(0.1 * (i + 1) - 0.02) and row["alpha_rbp1"] == 0.04
    nucleus = got[got["metric"].str.startswith("neg_log_nucleus_")]
    assert list(nucleus["p"]) == [0.5, 0.8, 0.9, 0.95, 0.99] and got.loc[~got.index.isin(nucleus.index), "p"].isna().all()


def test_every_calibration_law_is_contrasted_with_rbp1() -> None:
    """exponent_contrasts.csv holds what nucleus_fits.csv reads: each calibration law against -log RBP_1."""
    assert {law for law, versus, k in CONTRASTS if (versus, k) == ("neg_log_rbp", 1)} >= set(LAWS)


def test_tables_without_a_note_column_are_read(tables) -> None:
    """A table none of whose rows has a note is written without the column (`optional_columns`)."""
    fits, contrasts = tables
    got = nucleus_fits_table(fits, contrasts.drop(columns=["note"]), POWER_LAW)
    assert len(got) == len(LAWS) and got.loc[got["metric"] == "brier", "note"].str.contains("finite y > 0").all()
    assert (got.loc[got["metric"] != "brier", "note"] == "").all()


def test_a_form_without_an_exponent_has_no_exponent_columns(tables) -> None:
    fits, contrasts = tables
    no_exponent = dataclasses.replace(POWER_LAW, name="no_exponent", exponent=None)
    got = nucleus_fits_table(fits.drop(columns=["alpha", "alpha_ci_low", "alpha_ci_high"]), contrasts, no_exponent)
    assert not {"alpha", "difference", "alpha_rbp1"} & set(got.columns) and len(got) == len(LAWS)


def test_no_calibration_laws_leave_the_header() -> None:
    fits = pd.DataFrame([fit("d", "ce", 0.02)])
    got = nucleus_fits_table(fits, pd.DataFrame([contrast("d", "ce", "neg_log_rbp", 1.0, 0.0)]), POWER_LAW)
    assert got.empty and {"metric", "p", "alpha", "difference", "note"} <= set(got.columns)
