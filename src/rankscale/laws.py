"""Fit forms: laws y(S) fitted to a metric across model sizes S (docs/science.md, "Scaling laws").

To add a fit form: write a frozen dataclass with `predict(size)`, `row()` (its parameters as
table columns) and the classmethods `fit(size, y)` and `from_row(row)`, and add a `FitForm`
for it to `FORMS`. Tables fit every form they are asked for by name, and anything that
predicts from a table row (figures, emergence, extrapolation) goes through `from_row`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


class FittedLaw(Protocol):
    n: int

    def predict(self, size: np.ndarray | float) -> np.ndarray: ...

    def row(self) -> dict[str, float]: ...


@dataclass(frozen=True)
class FitForm:
    name: str
    columns: tuple[str, ...]  # the parameter columns `row()` gives and `from_row` reads
    fit: Callable[[np.ndarray, np.ndarray], FittedLaw]  # raises ValueError when the data cannot be fitted
    from_row: Callable[[Mapping[str, Any]], FittedLaw]


@dataclass(frozen=True)
class PowerLaw:
    """y = C * S^(-alpha), fitted by least squares in log-log space; R^2 in log space."""

    alpha: float
    C: float
    r2: float
    n: int

    def predict(self, size: np.ndarray | float) -> np.ndarray:
        return self.C * np.asarray(size, dtype=np.float64) ** (-self.alpha)

    def row(self) -> dict[str, float]:
        return {"alpha": self.alpha, "C": self.C, "r2": self.r2}

    def scaled(self, factor: float) -> PowerLaw:
        """factor * y(S): e.g. the law N C S^-alpha of -log RBP_k^N."""
        return PowerLaw(alpha=self.alpha, C=factor * self.C, r2=self.r2, n=self.n)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PowerLaw:
        return cls(alpha=float(row["alpha"]), C=float(row["C"]), r2=float(row["r2"]), n=int(row.get("n_models", 0)))

    @classmethod
    def fit(cls, size: np.ndarray, y: np.ndarray) -> PowerLaw:
        return fit_power_law(size, y)


def fit_power_law(size: np.ndarray, y: np.ndarray) -> PowerLaw:
    """OLS of log y on log S; R^2 in log space. Needs >= 2 distinct sizes and y > 0."""
    size = np.asarray(size, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if size.shape != y.shape or size.ndim != 1:
        raise ValueError("size and y must be 1-D arrays of equal length")
    if len(np.unique(size)) < 2:
        raise ValueError("a power-law fit needs at least 2 distinct model sizes")
    if np.any(size <= 0) or np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise ValueError("a power-law fit needs S > 0 and finite y > 0")
    x, ly = np.log(size), np.log(y)
    slope, intercept = np.polyfit(x, ly, 1)
    residual = ly - (intercept + slope * x)
    total = ly - ly.mean()
    ss_tot = float(total @ total)
    r2 = 1.0 - float(residual @ residual) / ss_tot if ss_tot > 0 else float("nan")
    return PowerLaw(alpha=float(-slope), C=float(np.exp(intercept)), r2=r2, n=int(size.size))


FORMS: dict[str, FitForm] = {
    "power_law": FitForm("power_law", ("alpha", "C", "r2"), PowerLaw.fit, PowerLaw.from_row),
}
