"""Laws in model size: the pure power law y = C S^-alpha and y = E + C S^-alpha (an irreducible floor)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankscale.laws.form import Bound, FitForm, Points, RefittedParameters, refit_each


def ols(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Least squares of each row of y [B, M] on x [M]: slope, intercept, R^2 per row (in the space given).

    The one least-squares line of the project: power laws call it in log-log space, the lognormal's
    trends in (log S, mu). A row with a non-finite value gets NaN throughout.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    bad = ~np.isfinite(y).all(axis=1)
    y = np.where(np.isfinite(y), y, 0.0)
    xc = x - x.mean()
    mean = y.mean(axis=1, keepdims=True)
    slope = (y - mean) @ xc / (xc @ xc)
    intercept = mean[:, 0] - slope * x.mean()
    residual = y - (intercept[:, None] + slope[:, None] * x)
    ss_tot = ((y - mean) ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(ss_tot > 0, 1.0 - (residual**2).sum(axis=1) / ss_tot, np.nan)
    out = {"slope": slope, "intercept": intercept, "r2": r2}
    return {name: np.where(bad, np.nan, value) for name, value in out.items()}


def check_points(size: np.ndarray, y: np.ndarray, min_sizes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and values a law in log space can be fitted to; ValueError names what is missing."""
    size = np.asarray(size, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if size.shape != y.shape or size.ndim != 1:
        raise ValueError("size and y must be 1-D arrays of equal length")
    if len(np.unique(size)) < min_sizes:
        raise ValueError(f"a fit of this form needs at least {min_sizes} distinct model sizes")
    if np.any(size <= 0) or np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise ValueError("a power-law fit needs S > 0 and finite y > 0")
    return size, y


def r_squared(log_y: np.ndarray, log_fit: np.ndarray) -> float:
    """R^2 in log space."""
    total = log_y - log_y.mean()
    ss_tot = float(total @ total)
    residual = log_y - log_fit
    return 1.0 - float(residual @ residual) / ss_tot if ss_tot > 0 else float("nan")


@dataclass(frozen=True)
class PowerLaw:
    """y = C * x^(-alpha), fitted by least squares in log-log space; R^2 in log space (x: S, or D per size)."""

    alpha: float
    C: float
    r2: float
    n: int

    def at(self, x: np.ndarray | float) -> np.ndarray:
        return self.C * np.asarray(x, dtype=np.float64) ** (-self.alpha)

    def predict(self, points: Points) -> np.ndarray:
        return self.at(points.S)

    def row(self) -> dict[str, float]:
        return {"alpha": self.alpha, "C": self.C, "r2": self.r2}

    def log_jacobian(self, points: Points) -> np.ndarray:
        """d log y / d (alpha, C) at every point, exactly: [-log S, 1 / C]."""
        return np.stack([-np.log(points.S), np.full(len(points.S), 1.0 / self.C)], axis=1)

    def scaled(self, factor: float) -> PowerLaw:
        """factor * y(S): e.g. the law N C S^-alpha of -log RBP_k^N."""
        return PowerLaw(alpha=self.alpha, C=factor * self.C, r2=self.r2, n=self.n)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PowerLaw:
        return cls(alpha=float(row["alpha"]), C=float(row["C"]), r2=float(row["r2"]), n=int(row.get("n_models", 0)))

    @classmethod
    def fit(cls, points: Points, y: np.ndarray) -> PowerLaw:
        return fit_power_law(points.S, y)

    @staticmethod
    def fit_replicates(points: Points, y: np.ndarray, law: Any, refits: int) -> RefittedParameters:
        """Every replicate at once (closed form); a replicate with y <= 0 or non-finite gets NaN."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a far-off replicate's C: inf
            line = ols(np.log(points.S), np.log(np.asarray(y, dtype=np.float64)))
            return {"alpha": -line["slope"], "C": np.exp(line["intercept"]), "r2": line["r2"]}

    @staticmethod
    def predict_replicates(params: RefittedParameters, points: Points) -> np.ndarray:
        return params["C"][:, None] * points.S[None, :] ** (-params["alpha"][:, None])


def fit_power_law(x: np.ndarray, y: np.ndarray) -> PowerLaw:
    """The point fit: numpy's least squares of log y on log x (needs >= 2 distinct x and y > 0).

    Replicate refits use `ols`, equal to it to ~1e-12 (tests/test_bootstrap.py checks).
    """
    x, y = check_points(x, y)
    lx, ly = np.log(x), np.log(y)
    slope, intercept = np.polyfit(lx, ly, 1)
    return PowerLaw(
        alpha=float(-slope), C=float(np.exp(intercept)), r2=r_squared(ly, intercept + slope * lx), n=int(x.size)
    )


@dataclass(frozen=True)
class OffsetPowerLaw:
    """y = E + C * S^(-alpha) with E >= 0: a law with an irreducible term.

    Fitted as Hoffmann et al. (2022, Approach 3) fit theirs: Huber loss on the log-space
    residual log y - log(E + C S^-alpha), from a grid of starts (or a given one), keeping the best.
    """

    E: float
    alpha: float
    C: float
    r2: float
    n: int

    def predict(self, points: Points) -> np.ndarray:
        return self.E + self.C * points.S ** (-self.alpha)

    def row(self) -> dict[str, float]:
        return {"E": self.E, "alpha": self.alpha, "C": self.C, "r2": self.r2}

    def scaled(self, factor: float) -> OffsetPowerLaw:
        return OffsetPowerLaw(E=factor * self.E, alpha=self.alpha, C=factor * self.C, r2=self.r2, n=self.n)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> OffsetPowerLaw:
        return cls(
            E=float(row["E"]),
            alpha=float(row["alpha"]),
            C=float(row["C"]),
            r2=float(row["r2"]),
            n=int(row.get("n_models", 0)),
        )

    @classmethod
    def fit(cls, points: Points, y: np.ndarray, start: OffsetPowerLaw | None = None) -> OffsetPowerLaw:
        size, y = check_points(points.S, y, min_sizes=3)
        x, ly = np.log(size), np.log(y)
        centre = float(x.mean())  # S / exp(centre) keeps C of order y whatever the sizes

        def residual(theta: np.ndarray) -> np.ndarray:
            log_c, alpha, e = theta
            with np.errstate(over="ignore"):  # far-off trial steps; the optimiser backs off
                return ly - np.log(e + np.exp(log_c - alpha * (x - centre)))

        def jacobian(theta: np.ndarray) -> np.ndarray:
            """Exact derivatives of `residual` (finite differences cost a third of the fit's time)."""
            log_c, alpha, e = theta
            with np.errstate(over="ignore", invalid="ignore"):
                g = np.exp(log_c - alpha * (x - centre))
                return np.stack([-g, g * (x - centre), -np.ones_like(g)], axis=1) / (e + g)[:, None]

        starts = (
            _offset_starts(x - centre, y)
            if start is None
            else [np.array([np.log(start.C) - start.alpha * centre, start.alpha, start.E])]
        )
        from scipy.optimize import least_squares  # here, not at the top: planning reads FORMS without scipy

        best = None
        for theta in starts:
            res = least_squares(
                residual, theta, jac=jacobian, bounds=([-np.inf, -2.0, 0.0], [np.inf, 5.0, np.inf]),
                loss="huber", f_scale=0.1, x_scale="jac", max_nfev=2000,
            )  # fmt: skip
            if best is None or res.cost < best.cost:
                best = res
        assert best is not None
        log_c, alpha, e = (float(v) for v in best.x)
        c = float(np.exp(log_c + alpha * centre))  # exp(log_c - alpha (log S - centre)) = c S^-alpha
        fitted = e + c * size ** (-alpha)
        return cls(E=e, alpha=alpha, C=c, r2=r_squared(ly, np.log(fitted)), n=int(size.size))

    @staticmethod
    def predict_replicates(params: RefittedParameters, points: Points) -> np.ndarray:
        return params["E"][:, None] + params["C"][:, None] * points.S[None, :] ** (-params["alpha"][:, None])


def _offset_starts(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """Starts for E + C exp(-alpha x): for each alpha of a grid, (E >= 0, C) by weighted linear least
    squares (weights 1/y: relative errors, as in log space); the best two by log-space error, plus E = 0."""
    candidates = []
    for alpha in (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.5):
        basis = np.exp(-alpha * x)
        design = np.stack([np.ones_like(x), basis], axis=1) / y[:, None]
        (e, c), *_ = np.linalg.lstsq(design, np.ones_like(y), rcond=None)
        if e < 0:  # the floor is at its bound: fit C alone
            e, c = 0.0, float(basis @ y / (basis @ basis))
        if c <= 0:
            continue
        error = float(np.sum((np.log(y) - np.log(e + c * basis)) ** 2))
        candidates.append((error, np.array([np.log(c), alpha, e])))
    candidates.sort(key=lambda item: item[0])
    pure_alpha = -np.polyfit(x, np.log(y), 1)[0]
    return [start for _, start in candidates[:2]] + [
        np.array([float(np.log(y).mean()), float(np.clip(pure_alpha, -2, 5)), 0.0])
    ]


POWER_LAW = FitForm(
    name="power_law",
    columns=("alpha", "C", "r2"),
    n_params=2,
    fit=PowerLaw.fit,
    from_row=PowerLaw.from_row,
    fit_replicates=PowerLaw.fit_replicates,
    predict_replicates=PowerLaw.predict_replicates,
    scaled=lambda law, factor: law.scaled(factor),
    log_linear=True,
    log_jacobian=PowerLaw.log_jacobian,
)
OFFSET_POWER_LAW = FitForm(
    name="offset_power_law",
    columns=("E", "alpha", "C", "r2"),
    n_params=3,
    fit=OffsetPowerLaw.fit,
    from_row=OffsetPowerLaw.from_row,
    fit_replicates=lambda points, y, law, refits: refit_each(
        OffsetPowerLaw.fit, ("E", "alpha", "C", "r2"), points, y, law, refits
    ),
    predict_replicates=OffsetPowerLaw.predict_replicates,
    scaled=lambda law, factor: law.scaled(factor),
    bounds={"E": Bound(low=0.0, in_units_of_y=True), "alpha": Bound(-2.0, 5.0)},  # those of the fit below
)
