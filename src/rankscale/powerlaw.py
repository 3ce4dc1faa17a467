"""Power-law fits y = C * S^(-alpha) by least squares in log-log space (DESIGN.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PowerLaw:
    alpha: float
    C: float
    r2: float
    n: int

    def predict(self, size: np.ndarray | float) -> np.ndarray:
        return self.C * np.asarray(size, dtype=np.float64) ** (-self.alpha)


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
