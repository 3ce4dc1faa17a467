"""Fit forms compared on the same points: leave-one-out error and AICc, both in log space."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rankscale.laws.form import FitForm, Points


def aicc(log_residuals: np.ndarray, n_params: int) -> float:
    """Corrected Akaike criterion of a least-squares fit (Gaussian errors in log space, variance estimated).

    Infinite where there are too few points to estimate the form and its variance: with few
    sizes the simpler form wins unless the data demand otherwise.
    """
    n, p = log_residuals.size, n_params + 1
    if n - p - 1 <= 0:
        return math.inf
    rss = max(float(log_residuals @ log_residuals), n * 1e-24)  # a perfect fit is not -inf
    return n * math.log(rss / n) + 2 * p + 2 * p * (p + 1) / (n - p - 1)


def leave_one_out_rmse(form: FitForm, points: Points, y: np.ndarray) -> float:
    """Root mean square log-space error of predicting each size from a fit to the others."""
    errors = []
    for i in range(len(points)):
        keep = np.arange(len(points)) != i
        try:
            law = form.fit(points.take(keep), y[keep])
        except ValueError:
            return float("nan")
        predicted = float(form.predict(law, points.take([i]))[0])
        if not predicted > 0:  # a form that predicts a positive quantity at or below 0: its log error is unbounded
            return math.inf
        errors.append(math.log(predicted) - math.log(float(y[i])))
    return float(np.sqrt(np.mean(np.square(errors))))


def compare_forms(points: Points, y: np.ndarray, forms: Sequence[FitForm]) -> list[dict[str, Any]]:
    """Each form fitted to y(S): its parameters, leave-one-out RMSE and AICc (log space), and
    whether it is the preferred one (lowest AICc; ties go to the form with fewer parameters).

    One row per form; its parameters under the union of the forms' columns, the richest form's first (NaN
    where a form has none). Where some form has bounded parameters, `not_identified` names those at a bound of
    their domain in the fit (`FitForm.unidentified`, as powerlaw_fits.csv does): e.g. the offset law's floor E
    at 0 when the data show no floor, a value that is where the search stopped, not an estimate.
    """
    y = np.asarray(y, dtype=np.float64)
    richest_first = sorted(forms, key=lambda form: -form.n_params)
    columns = list(dict.fromkeys(c for form in richest_first for c in form.columns))
    bounded = any(form.bounds for form in forms)
    rows = []
    for form in forms:
        row: dict[str, Any] = {"form": form.name, **dict.fromkeys(columns, math.nan)}
        try:
            law = form.fit(points, y)
        except ValueError as exc:
            rows.append({**row, "loo_rmse": math.nan, "aicc": math.nan, **_marked(bounded, {}), "note": str(exc)})
            continue
        residual = np.log(y) - np.log(form.predict(law, points))
        rows.append(
            {
                **row,
                **law.row(),
                "loo_rmse": leave_one_out_rmse(form, points, y),
                "aicc": aicc(residual, form.n_params),
                **_marked(bounded, form.unidentified(law, {}, float(np.median(y)))),  # the fit alone: no refits
                "note": "",
            }
        )
    ranked = [(r, f) for r, f in zip(rows, forms, strict=True) if not math.isnan(r["aicc"])]
    best = min(ranked, key=lambda item: (item[0]["aicc"], item[1].n_params), default=(None, None))[0]
    for r in rows:
        r["preferred"] = r is best
    return rows


def _marked(bounded: bool, unidentified: dict[str, str]) -> dict[str, str]:
    """The `not_identified` column of a row (present where some compared form has bounded parameters)."""
    return {"not_identified": "; ".join(unidentified.values())} if bounded else {}
