"""paper_claims.csv: the paper's published claims (arXiv 2510.20387; docs/science.md), checked by every run.

Each claim is judged per family and dataset by its interval, not its point: it holds ("yes") where the whole
interval lies on the claim's side of its threshold, fails ("no") where the whole interval lies beyond it, and is
"undecided" where the interval straddles it; a value without an interval is judged by its point, and says so. A
claim whose k this run did not fit (the grid, |V|, one size) is "not testable here", with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import FitForm
from rankscale.tables.base import Replicates, TableInputs, rows_frame, typed
from rankscale.tables.laws import contrast_row
from rankscale.tables.selection import FitIndex, LawKey, finals

YES, NO, UNDECIDED, UNTESTABLE = "yes", "no", "undecided", "not testable here"
COLUMNS = ("family", "dataset", "claim", "paper", "k", "value", "ci_low", "ci_high", "holds", "note")
R2_KS = (10, 50, 100)  # the paper's "R² >= 0.97 at k = 10, 50, 100"
BREAKDOWN = 0.9  # the R² below which the law has broken down ("R² > 0.9 for k < 1000")
GROWTH_K = 100  # alpha grows from k = 1 to this k (the paper: < 0.1 at k = 1, about 0.2 at k = 100)
# a miscalibration's exponent counts as flat within this: under 10% change over two decades of S (100^0.02 = 1.096)
FLAT_EXPONENT = 0.02
CALIBRATED = "nucleus_90"  # a metrics.csv metric every model whose rank arrays hold the calibration fields has


@dataclass(frozen=True)
class Value:
    """A run's value of a claim's quantity, its interval (NaN: none) and the k it is of."""

    value: float
    low: float = math.nan
    high: float = math.nan
    k: int | None = None


def verdict(value: Value, above: float) -> tuple[str, str]:
    """Whether `value` lies above `above` (judged by its interval where it has one), and a note on how it was."""
    if math.isnan(value.low) or math.isnan(value.high):
        return (YES if value.value > above else NO), "judged by the point: no interval"
    if value.low > above:
        return YES, ""
    if value.high < above:
        return NO, ""
    return UNDECIDED, f"the interval contains {above:g}"


def _fit(fits: pd.DataFrame, metric: str, k: int | None) -> pd.Series | None:
    rows = fits[fits["metric"].eq(metric) & (fits["k"].isna() if k is None else fits["k"].eq(k).fillna(False))]
    if rows.empty or str(rows["note"].fillna("").iloc[0]):
        return None
    return rows.iloc[0]


def _get(row: pd.Series, column: str) -> float:
    return float(row[column]) if column in row and not pd.isna(row[column]) else math.nan


def _r2(row: pd.Series) -> Value:
    return Value(_get(row, "r2"), _get(row, "r2_ci_low"), _get(row, "r2_ci_high"),
                 int(row["k"]) if not pd.isna(row["k"]) else None)  # fmt: skip


@dataclass(frozen=True)
class Claim:
    """One published claim: its name, its words, and how a run's fits of one family and dataset judge it."""

    name: str
    paper: str
    judge: Callable[[pd.DataFrame, Mapping[str, Any]], tuple[Value | None, str, str]]  # (value, holds, note)


def _r2_at(k: int, above: float) -> Callable[[pd.DataFrame, Mapping[str, Any]], tuple[Value | None, str, str]]:
    def judge(fits: pd.DataFrame, facts: Mapping[str, Any]) -> tuple[Value | None, str, str]:
        row = _fit(fits, "neg_log_rbp", k)
        if row is None:
            return None, UNTESTABLE, f"no law of -log RBP_{k} (k not on this run's grid, above |V| or not fitted)"
        value = _r2(row)
        return (value, *verdict(value, above))

    return judge


def _r2_below_1000(fits: pd.DataFrame, facts: Mapping[str, Any]) -> tuple[Value | None, str, str]:
    rows = fits[fits["metric"].eq("neg_log_rbp") & fits["k"].lt(1000).fillna(False) & fits["note"].fillna("").eq("")]
    if rows.empty:
        return None, UNTESTABLE, "no law of -log RBP_k at k < 1000"
    values = [_r2(row) for _, row in rows.iterrows()]
    verdicts = [verdict(v, BREAKDOWN)[0] for v in values]
    lowest = min(values, key=lambda v: v.value)
    holds = NO if NO in verdicts else YES if all(v == YES for v in verdicts) else UNDECIDED
    failing = [v.k for v, h in zip(values, verdicts, strict=True) if h != YES]
    note = f"the lowest R² of {len(values)} k"
    if failing:
        note += f"; {len(failing)} not above 0.9 throughout (k = {', '.join(map(str, failing[:5]))}{', ...' * (len(failing) > 5)})"
    return lowest, holds, note


def _breakdown(fits: pd.DataFrame, facts: Mapping[str, Any]) -> tuple[Value | None, str, str]:
    vocab = facts.get("vocab_size")
    rows = fits[fits["metric"].eq("neg_log_rbp") & fits["k"].notna() & fits["note"].fillna("").eq("")]
    if rows.empty or not vocab:
        return None, UNTESTABLE, "no law of -log RBP_k"
    rows = rows.sort_values("k")
    below = rows[rows["r2"] < BREAKDOWN]
    if below.empty:
        largest = int(rows["k"].max())
        if largest < vocab / 2:
            return None, UNTESTABLE, f"the fitted k stop at {largest}, below |V|/2 = {vocab / 2:g}"
        return Value(math.nan, k=None), NO, f"R² stays above 0.9 up to k = {largest} (|V| = {vocab})"
    k = int(below["k"].iloc[0])
    if k == int(rows["k"].iloc[0]):
        return (
            None,
            UNTESTABLE,
            f"R² is below 0.9 already at the smallest k = {k}: no range of k for the law to break down from",
        )
    share = k / vocab
    holds = YES if share >= 0.1 else NO
    return (
        Value(share, k=k),
        holds,
        f"R² first below 0.9 at k = {k}, |V| = {vocab}: value is k/|V|; judged by the point",
    )


def _alpha_small(fits: pd.DataFrame, facts: Mapping[str, Any]) -> tuple[Value | None, str, str]:
    row = _fit(fits, "neg_log_rbp", 1)
    if row is None:
        return None, UNTESTABLE, "no law of -log RBP_1"
    value = Value(_get(row, "alpha"), _get(row, "alpha_ci_low"), _get(row, "alpha_ci_high"), 1)
    holds, note = verdict(Value(-value.value, -value.high, -value.low), -0.1)  # below 0.1: -alpha above -0.1
    return value, holds, note.replace("-0.1", "0.1")


def _difference(key: str, words: str) -> Callable[[pd.DataFrame, Mapping[str, Any]], tuple[Value | None, str, str]]:
    """A paired difference of exponents (`facts[key]`) above 0."""

    def judge(fits: pd.DataFrame, facts: Mapping[str, Any]) -> tuple[Value | None, str, str]:
        value = facts.get(key)
        if value is None:
            return None, UNTESTABLE, f"no paired contrast of {words}"
        return (value, *verdict(value, 0.0))

    return judge


def _close(fits: pd.DataFrame, facts: Mapping[str, Any]) -> tuple[Value | None, str, str]:
    value = facts.get("rbp1_minus_ce")
    if value is None:
        return None, UNTESTABLE, "no paired contrast of alpha(-log RBP_1) and alpha(CE)"
    if math.isnan(value.low) or math.isnan(value.high):
        return value, UNDECIDED, "no interval: closeness cannot be judged"
    if value.low <= 0.0 <= value.high:
        return value, YES, "the interval of the difference contains 0"
    return value, NO, "the interval of the difference excludes 0"


def _exponent(metric: str, sign: float, words: str) -> Callable[[pd.DataFrame, Mapping[str, Any]], tuple[Value | None, str, str]]:
    """A miscalibration's exponent (its law in S, powerlaw_fits.csv) judged by its interval: above 0 (`sign` 1:
    it shrinks with scale), below 0 (`sign` -1: it grows), or (`sign` 0) flat: the whole interval within
    +/- FLAT_EXPONENT (an equivalence test: an interval that merely contains 0 is absence of evidence)."""

    def judge(fits: pd.DataFrame, facts: Mapping[str, Any]) -> tuple[Value | None, str, str]:
        if facts.get("without_calibration"):  # a law over the sizes that have the fields is not the family's
            return None, UNTESTABLE, ("rank arrays without the calibration fields: "
                                      f"{', '.join(facts['without_calibration'])} (extraction.refresh_calibration)")  # fmt: skip
        rows = fits[fits["metric"].eq(metric) & fits["k"].isna()]
        row = _fit(fits, metric, None)
        if row is None:
            why = str(rows["note"].iloc[0]) if len(rows) and str(rows["note"].fillna("").iloc[0]) else (
                "rank arrays without the calibration fields: extraction.refresh_calibration adds them")
            return None, UNTESTABLE, f"no law of {words} ({why})"
        value = Value(_get(row, "alpha"), _get(row, "alpha_ci_low"), _get(row, "alpha_ci_high"))
        if sign == 0:
            if math.isnan(value.low) or math.isnan(value.high):
                return value, UNDECIDED, "no interval: flatness cannot be judged"
            if -FLAT_EXPONENT <= value.low and value.high <= FLAT_EXPONENT:
                return value, YES, f"the exponent's interval lies within +/-{FLAT_EXPONENT:g}"
            if value.low > 0.0 or value.high < 0.0:
                return value, NO, "the exponent's interval excludes 0"
            return value, UNDECIDED, f"the interval contains 0 but reaches beyond +/-{FLAT_EXPONENT:g}"
        holds, note = verdict(Value(sign * value.value, *sorted((sign * value.low, sign * value.high))), 0.0)
        return value, holds, note

    return judge


CLAIMS = (
    Claim("r2_k1", "R² ≈ 0.99 at k = 1 (judged: above 0.98)", _r2_at(1, 0.98)),
    *(Claim(f"r2_k{k}", f"R² ≥ 0.97 at k = {k}", _r2_at(k, 0.97)) for k in R2_KS),
    Claim("r2_below_1000", "R² > 0.9 for every k < 1000", _r2_below_1000),
    Claim(
        "breakdown_near_V",
        "the law breaks down near |V| (k = 20,000–30,000 of |V| ≈ 50,000; judged: R² first below 0.9 at k ≥ |V|/10)",
        _breakdown,
    ),  # fmt: skip
    Claim("alpha_k1_small", "alpha < 0.1 at k = 1", _alpha_small),
    Claim(
        "alpha_grows_with_k",
        f"alpha grows with k (value: alpha at k = {GROWTH_K} minus alpha at k = 1, paired)",
        _difference("growth", f"alpha at k = {GROWTH_K} and at k = 1"),
    ),  # fmt: skip
    Claim(
        "ce_exponent_close",
        "CE's exponent is close to -log RBP_1's (value: alpha(-log RBP_1) - alpha(CE), paired; "
        "holds where its interval contains 0)",
        _close,
    ),  # fmt: skip
    # calibration across scale, where the published answers disagree (docs/science.md): each judged by the exponent
    # of the miscalibration's law in S (above 0: it shrinks with scale)
    Claim("calibration_improves", "Kadavath et al. 2022, Zhu et al. 2023: calibration improves with scale (value: "
          "the exponent of the top-1 calibration error; holds where its interval lies above 0)",
          _exponent("calibration_error", 1.0, "the top-1 calibration error")),
    Claim("calibration_flat", "Cao, Valiant & Liang 2025: the miscalibration's scaling exponent is about 0 (value: "
          f"the exponent of the top-1 calibration error; holds where its interval lies within +/-{FLAT_EXPONENT:g})",
          _exponent("calibration_error", 0.0, "the top-1 calibration error")),
    Claim("nucleus_inverse", "Ravfogel, Goldberg & Goldberger 2023: nucleus calibration scales inversely with size "
          "(value: the exponent of the PIT's distance from uniform; holds where its interval lies below 0)",
          _exponent("pit_distance", -1.0, "the PIT's distance from uniform")),
)


def claims_table(fits: pd.DataFrame, facts: Mapping[tuple[str, str], Mapping[str, Any]]) -> pd.DataFrame:
    """Every claim of `CLAIMS` per family and dataset of `fits` (powerlaw_fits.csv), with `facts` per family and
    dataset: `vocab_size` (the smallest |V| of its models), `growth` and `rbp1_minus_ce` (paired differences of
    exponents, `Value`s)."""
    rows = []
    if fits.empty or "family" not in fits:
        return typed(rows_frame(rows, COLUMNS))
    for (family, dataset), group in fits.groupby(["family", "dataset"], sort=True):
        known = facts.get((str(family), str(dataset)), {})
        one_size = int(group["n_models"].max()) < 2
        for claim in CLAIMS:
            if one_size:
                value, holds, note = None, UNTESTABLE, "one size: no law"
            elif not {"alpha", "r2"} <= set(fits.columns):
                value, holds, note = None, UNTESTABLE, "the law form fitted (analysis.law_form) has no alpha and R²"
            else:
                value, holds, note = claim.judge(group, known)
            shown = value or Value(math.nan)
            rows.append(dict(zip(COLUMNS, (family, dataset, claim.name, claim.paper, shown.k, shown.value, shown.low,
                                           shown.high, holds, note), strict=True)))  # fmt: skip
    return typed(rows_frame(rows, COLUMNS))


def _contrast(metrics: pd.DataFrame, fits: FitIndex, replicates: Replicates, settings: Mapping[str, Any],
              first: LawKey, second: LawKey) -> Value | None:  # fmt: skip
    row = contrast_row(metrics, fits, replicates, settings["level"], settings["form"], settings["refits"],
                       settings["seed"], first, second)  # fmt: skip
    if row is None or pd.isna(row["difference"]):
        return None
    return Value(float(row["difference"]), float(row["ci_low"]), float(row["ci_high"]), first.k)


def run_facts(metrics: pd.DataFrame, fits: pd.DataFrame, replicates: Replicates, level: float, form: FitForm,
              refits: int, seed: int | None) -> dict[tuple[str, str], dict[str, Any]]:  # fmt: skip
    """Per family and dataset: the smallest |V| of its models, and the paired exponent contrasts the claims read
    (alpha at k = 100 against k = 1; -log RBP_1 against CE), refitted on the same replicates as exponent_contrasts."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    if form.exponent is None or metrics.empty:
        return out
    index = FitIndex(fits, form)
    settings = {"level": level, "form": form, "refits": refits, "seed": seed}
    for (family, dataset), frame in finals(metrics).groupby(["family", "dataset"], sort=True):
        family, dataset = str(family), str(dataset)
        facts: dict[str, Any] = {"vocab_size": int(np.min(frame["vocab_size"]))}
        calibrated = set(frame.loc[frame["metric"].eq(CALIBRATED), "model"])
        facts["without_calibration"] = sorted(set(frame["model"]) - calibrated) if calibrated else []
        if frame["S"].nunique() >= 2:
            rbp1, rbp_k = (LawKey(family, dataset, "neg_log_rbp", k) for k in (1, GROWTH_K))
            facts["growth"] = _contrast(frame, index, replicates, settings, rbp_k, rbp1)
            facts["rbp1_minus_ce"] = _contrast(frame, index, replicates, settings, rbp1, LawKey(family, dataset, "ce"))
        out[(family, dataset)] = facts
    return out


def build_paper_claims(inputs: TableInputs) -> pd.DataFrame:
    """paper_claims.csv from its job's inputs (its entry: rankscale.tables.entries.claims)."""
    return claims_table(
            inputs.tables["powerlaw_fits"],
            run_facts(inputs.tables["metrics"], inputs.tables["powerlaw_fits"], inputs.needed(), **inputs.declared()),
        )
