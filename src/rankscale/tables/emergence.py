"""Emergence: N consecutive tokens all inside the top-k, measured, predicted and fitted as a law."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bca import bca, leave_one_out
from rankscale.conjecture import markov_run_rate
from rankscale.intervals import PROBABILITY, ModelInterval, ratio_of_sums
from rankscale.laws import FitForm, Points
from rankscale.metrics import METRICS
from rankscale.statistics import PAIRS_BOTH_HIT, PAIRS_PREV_HIT, RUN_HITS, RUN_WINDOWS, Totals
from rankscale.summary import Summary
from rankscale.tables.base import Replicates, TableInputs, interval_columns, rows_frame, typed, with_intervals
from rankscale.tables.lawkit import exponent_contrast
from rankscale.tables.model_intervals import certain, design_columns, ratio_intervals
from rankscale.tables.noise import LawNoise, Noise
from rankscale.tables.selection import FitIndex, LawKey, finals_of, size_note

RBP = METRICS["rbp"]
# the header of emergence_laws.csv when it has no rows (a form without an exponent, no family of one size)
LAWS_COLUMNS = ("family", "dataset", "k", "N", "n_models", *interval_columns("alpha_runs"), "alpha_k",
                *interval_columns("difference"), "p_value", "tau2", "tau2_difference", "noise", "C_runs", "C_ratio",
                "r2", "note")  # fmt: skip


def emergence_table(
    summaries: Iterable[Summary], fits: pd.DataFrame, replicates: Replicates | None, level: float, form: FitForm
) -> pd.DataFrame:
    """Per model x dataset x k x N: the empirical rate of N-token runs inside the top-k, what independent
    positions predict (RBP_k^N), what a first-order Markov chain of hits predicts, and the fitted law
    exp(-N y(S)) of -log RBP_k; intervals from the document bootstrap."""
    index = FitIndex(fits, form)
    rows = []
    for s in summaries:
        totals = s.totals()
        value = dict(zip(s.k, RBP.compute(totals), strict=True))
        for run in s.runs:
            i = s.emergence_k.index(run.k)
            fit = LawKey(s.family, s.dataset, RBP.law, run.k).select(index, form) if s.final else None  # laws in S
            predicted = float(value[run.k]) ** run.N
            markov = float(markov_run_rate(value[run.k], totals[PAIRS_PREV_HIT][i], totals[PAIRS_BOTH_HIT][i], run.N))
            # -log p_{N,k} = N y(S): the sequence law the paper derives from -log RBP_k = y(S), of the same form
            sequence = form.scaled(fit.law, run.N) if fit else None
            fitted = math.exp(-float(form.predict(sequence, Points.of(s.S))[0])) if sequence else math.nan
            row = {
                **{c: v for c, v in s.columns().items() if c not in ("vocab_size", "n_tokens")},
                "k": run.k,
                "N": run.N,
                "empirical": run.empirical,
                "predicted": predicted,
                "markov": markov,
                "fitted": fitted,
                "ratio_empirical_independent": run.empirical / predicted if predicted > 0 else math.nan,
                "n_runs": run.n_runs,
            }
            if replicates is not None:
                intervals, missing = _run_intervals(s, row, replicates, level)
                row.update(intervals)
                row.update(design_columns(s))
                if missing:  # an interval left out says why, after the documents' own note
                    row["ci_note"] = "; ".join(filter(None, [row["ci_note"], *missing]))
            rows.append(row)
    return pd.DataFrame(rows).sort_values(["family", "dataset", "k", "N", "S"], kind="stable").reset_index(drop=True)


def run_replicates(s: Summary, k: int, n: int, replicates: Replicates) -> dict[str, np.ndarray]:
    """Replicates [B] of the empirical, independent and Markov N-run rates of one model x dataset at (k, N)."""
    totals = replicates.totals[s.key]
    i, j = s.emergence_k.index(k), s.emergence_N.index(n)
    rbp = replicates.at(s.model, s.dataset, RBP.name, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "empirical": totals[RUN_HITS][:, i, j] / totals[RUN_WINDOWS][:, j],
            "predicted": rbp**n,
            "markov": markov_run_rate(rbp, totals[PAIRS_PREV_HIT][:, i], totals[PAIRS_BOTH_HIT][:, i], n),
        }


def _run_intervals(s: Summary, row: dict[str, Any], replicates: Replicates,
                   level: float) -> tuple[dict[str, float], list[str]]:  # fmt: skip
    """Intervals of a row of the emergence table at its k and N: the empirical run rate, a ratio of windows summed
    over documents, by the cluster-robust t over the documents' own rates, as metrics.csv's RBP_k; the independent
    prediction RBP_k^N by RBP_k's interval to the power N; the Markov rate and the ratio, smooth functions of the
    sums, by BCa with the jackknife over documents (`rankscale.intervals`). Without the documents' sums: BCa without
    the acceleration (bias-corrected percentiles), as metrics.csv's `bc`."""
    samples = run_replicates(s, row["k"], row["N"], replicates)
    with np.errstate(invalid="ignore", divide="ignore"):
        samples["ratio_empirical_independent"] = samples["empirical"] / samples["predicted"]
    units = replicates.units.get(s.key)
    found: dict[str, ModelInterval] = {}
    jackknife: dict[str, np.ndarray] = {}
    if units is not None:
        i, j = s.emergence_k.index(row["k"]), s.emergence_N.index(row["N"])
        found["empirical"] = ratio_of_sums(units[RUN_HITS][:, i, j], units[RUN_WINDOWS][:, j], level, PROBABILITY)[0]
        values = RBP.compute(Totals({key: np.asarray(units[key]).sum(axis=0) for key in units}))
        rbp = ratio_intervals(RBP, units, values, level, certain(RBP, s.k, s.vocab_size))[s.k.index(row["k"])]
        low, high = (max(end, 0.0) ** row["N"] if np.isfinite(end) else math.nan for end in (rbp.low, rbp.high))
        found["predicted"] = ModelInterval(low, high, 0.0, rbp.note)
        found.update(_zero_rate_bounds(units, row, i, found["empirical"], rbp, level))
        left = Totals(leave_one_out(units))
        with np.errstate(invalid="ignore", divide="ignore"):
            rates = RBP.compute(left)[:, s.k.index(row["k"])]
            jackknife["markov"] = markov_run_rate(rates, left[PAIRS_PREV_HIT][:, i], left[PAIRS_BOTH_HIT][:, i], row["N"])
            jackknife["ratio_empirical_independent"] = (left[RUN_HITS][:, i, j] / left[RUN_WINDOWS][:, j]) / rates ** row["N"]
    out: dict[str, float] = {}
    missing = []
    for name, values in samples.items():
        got = found.get(name) or bca(values, row[name], jackknife.get(name, np.zeros(0)), level)
        out.update({f"{name}_ci_low": got.low, f"{name}_ci_high": got.high})
        if got.note and (np.isnan(got.low) or np.isnan(got.high)):
            missing.append(f"{name}: no interval, {got.note}")
        elif got.note:  # a share at 0 (or 1) in every document: its one-sided bound, and how it was derived
            missing.append(f"{name}: {got.note}")
    return out, missing


def _zero_rate_bounds(units: Totals, row: dict[str, Any], i: int, empirical: ModelInterval, rbp: ModelInterval,
                      level: float) -> dict[str, ModelInterval]:  # fmt: skip
    """Bounds of the row's quantities that are 0 because no document has a hit (their replicates all 0, where BCa
    would give [0, 0]): the ratio empirical / predicted at an empirical 0 is below the run rate's one-sided bound
    over RBP_k^N's lower end; the Markov rate at no pair of hits below RBP_k's upper end times the one-sided bound
    of P(hit | previous hit) (`boundary_bound` over the pairs) to the N - 1. Each end joins two 97.5% ends, so it
    holds at 95% at least (Bonferroni)."""
    out = {}
    if row["empirical"] == 0 and empirical.note and np.isfinite(empirical.high):
        low = max(rbp.low, 0.0) ** row["N"]
        why = ("0: upper end the run rate's bound over predicted's lower end" if low > 0 else
               "0: no finite upper end, predicted's lower end being 0")  # fmt: skip
        out["ratio_empirical_independent"] = ModelInterval(0.0, empirical.high / low if low > 0 else math.inf, 0.0, why)
    if row["markov"] == 0 and row["N"] > 1:
        pairs = ratio_of_sums(units[PAIRS_BOTH_HIT][:, i], units[PAIRS_PREV_HIT][:, i], level, PROBABILITY)[0]
        if pairs.note and np.isfinite(pairs.high) and np.isfinite(rbp.high):
            out["markov"] = ModelInterval(0.0, min(rbp.high, 1.0) * pairs.high ** (row["N"] - 1), 0.0,
                                          f"0, no pair of hits: upper end RBP_k's times P(hit | previous hit)'s "
                                          f"bound ({pairs.note.split(': ', 1)[1]}) to the N - 1")  # fmt: skip
    return out


def emergence_laws_table(
    summaries: Sequence[Summary], fits: pd.DataFrame, replicates: Replicates, level: float, form: FitForm,
    refits: int, seed: int | None,
) -> pd.DataFrame:  # fmt: skip
    """The paper's claim -log p_{N,k} = N C S^-alpha tested on the measured run rates: per family x dataset
    x k x N, the law fitted to -log(empirical N-run rate), its exponent against alpha_k of -log RBP_k
    (paired-bootstrap interval of the difference, p-value), and C_N / (N C). A family with one size has no law:
    one row per dataset says so (`note`)."""
    exponent = form.exponent
    groups: dict[tuple[str, str], list[Summary]] = {}
    for s in summaries:
        groups.setdefault((s.family, s.dataset), []).append(s)
    rows = []
    for (family, dataset), group in sorted(groups.items()):
        group = sorted(group, key=lambda s: s.S)
        points = Points.of([s.S for s in group])
        first = group[0]
        if note := size_note(points.S):  # no law of -log RBP_k to compare the runs' law with
            rows.append(
                {"family": family, "dataset": dataset, "k": None, "N": None, "n_models": len(group), "note": note}
            )
            continue
        for k in first.emergence_k:
            fit_k = LawKey(family, dataset, RBP.law, k).select(fits, form)
            if fit_k is None or exponent is None or any(k not in s.emergence_k for s in group):
                continue
            with np.errstate(divide="ignore"):
                rbp_reps = RBP.to_law(np.stack([replicates.at(s.model, s.dataset, RBP.name, k) for s in group], axis=1))
                y_k = RBP.to_law(np.array([RBP.compute(s.totals())[s.k.index(k)] for s in group]))
            models = pd.DataFrame({"model": [s.model for s in group], "replica_of": [s.replica_of for s in group],
                                   "family": family, "dataset": dataset})  # fmt: skip
            for n in first.emergence_N:
                observed = np.array([s.run(k, n).empirical for s in group])
                row: dict[str, Any] = {"family": family, "dataset": dataset, "k": k, "N": n, "n_models": len(group)}
                with np.errstate(divide="ignore", invalid="ignore"):
                    y = -np.log(observed)
                if not np.all((y > 0) & np.isfinite(y)) or len(np.unique(points.S)) < 2:
                    rows.append({**row, "note": "a run rate of 0 or 1 (or one size): no power law in log space"})
                    continue
                law = form.fit(points, y)
                with np.errstate(divide="ignore", invalid="ignore"):
                    samples = -np.log(
                        np.stack([run_replicates(s, k, n, replicates)["empirical"] for s in group], axis=1)
                    )
                n_reps = min(len(samples), len(rbp_reps))
                noise = Noise.of(models, n_reps, seed)
                keys = (family, dataset)
                runs = LawNoise.of(form, law, points, y, samples[:n_reps], noise, keys)
                alpha_n = runs.refit(form, law, points, refits)[exponent]
                contrast = exponent_contrast(form, points, (law, fit_k.law), (y, y_k), (samples[:n_reps],
                                             rbp_reps[:n_reps]), noise, keys, refits).row(level)  # fmt: skip
                rows.append(
                    {
                        **row,
                        **with_intervals(law.row()[exponent], alpha_n, level, "alpha_runs"),
                        "alpha_k": fit_k.value(exponent),
                        "difference": law.row()[exponent] - fit_k.value(exponent),
                        "difference_ci_low": contrast["ci_low"],
                        "difference_ci_high": contrast["ci_high"],
                        "p_value": contrast["p_value"],
                        "tau2": runs.columns()["tau2"],
                        "tau2_difference": contrast["tau2"],
                        "noise": runs.label,
                        "C_runs": law.row().get("C", math.nan),
                        "C_ratio": law.row().get("C", math.nan) / (n * fit_k.record.get("C", math.nan)),
                        "r2": law.row()["r2"],
                        "note": "",
                    }
                )
    df = typed(rows_frame(rows, LAWS_COLUMNS))  # no rows (a form without an exponent): the header alone
    return df.astype({"N": "Int64"}) if "N" in df else df  # missing on a note row: N stays an integer


def build_emergence(inputs: TableInputs) -> pd.DataFrame:
    """emergence.csv from its job's inputs (its entry: rankscale.tables.entries.emergence)."""
    return emergence_table(
            inputs.summaries, inputs.tables["powerlaw_fits"], inputs.replicates, **inputs.declared()
        )


def build_emergence_laws(inputs: TableInputs) -> pd.DataFrame:
    """emergence_laws.csv from its job's inputs (its entry: rankscale.tables.entries.emergence)."""
    return emergence_laws_table(
            finals_of(inputs.summaries), inputs.tables["powerlaw_fits"], inputs.needed(), **inputs.declared()
        )
