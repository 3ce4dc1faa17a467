"""Fit forms: laws y(S) fitted to a metric across model sizes S (docs/science.md, "Scaling laws").

To add a fit form: write a frozen dataclass with `predict(size)`, `row()` (its parameters as
table columns) and the classmethods `fit(size, y)` and `from_row(row)`, and add a `FitForm`
for it to `FORMS`. Tables fit every form they are asked for by name (`analysis.forms` for the
form comparison), and anything that predicts from a table row goes through `from_row`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy.optimize import least_squares


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
    n_params: int = 2  # free parameters, for AICc


def _check(size: np.ndarray, y: np.ndarray, min_sizes: int = 2) -> tuple[np.ndarray, np.ndarray]:
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
    size, y = _check(size, y)
    x, ly = np.log(size), np.log(y)
    slope, intercept = np.polyfit(x, ly, 1)
    return PowerLaw(
        alpha=float(-slope), C=float(np.exp(intercept)), r2=r_squared(ly, intercept + slope * x), n=int(size.size)
    )


def fit_power_law_replicates(size: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The power law refitted on each row of y [B, M] at once: alpha, C, r2 per replicate.

    A replicate with a non-positive or non-finite y (e.g. RBP_k = 1, so -log RBP_k = 0) gets NaN.
    """
    x = np.log(np.asarray(size, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        ly = np.log(np.asarray(y, dtype=np.float64))
    bad = ~np.isfinite(ly).all(axis=1)
    ly = np.where(np.isfinite(ly), ly, 0.0)
    xc = x - x.mean()
    slope = (ly - ly.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)
    intercept = ly.mean(axis=1) - slope * x.mean()
    residual = ly - (intercept[:, None] + slope[:, None] * x)
    ss_tot = ((ly - ly.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(ss_tot > 0, 1.0 - (residual**2).sum(axis=1) / ss_tot, np.nan)
    out = {"alpha": -slope, "C": np.exp(intercept), "r2": r2}
    return {name: np.where(bad, np.nan, value) for name, value in out.items()}


@dataclass(frozen=True)
class OffsetPowerLaw:
    """y = E + C * S^(-alpha) with E >= 0: a law with an irreducible term.

    Fitted as Hoffmann et al. (2022, Approach 3) fit theirs: Huber loss on the log-space
    residual log y - log(E + C S^-alpha), from a grid of starts, keeping the best.
    """

    E: float
    alpha: float
    C: float
    r2: float
    n: int

    def predict(self, size: np.ndarray | float) -> np.ndarray:
        return self.E + self.C * np.asarray(size, dtype=np.float64) ** (-self.alpha)

    def row(self) -> dict[str, float]:
        return {"E": self.E, "alpha": self.alpha, "C": self.C, "r2": self.r2}

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
    def fit(cls, size: np.ndarray, y: np.ndarray) -> OffsetPowerLaw:
        size, y = _check(size, y, min_sizes=3)
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

        best = None
        for start in _offset_starts(x - centre, y):
            res = least_squares(
                residual, start, jac=jacobian, bounds=([-np.inf, -2.0, 0.0], [np.inf, 5.0, np.inf]),
                loss="huber", f_scale=0.1, x_scale="jac", max_nfev=2000,
            )  # fmt: skip
            if best is None or res.cost < best.cost:
                best = res
        assert best is not None
        log_c, alpha, e = (float(v) for v in best.x)
        c = float(np.exp(log_c + alpha * centre))  # exp(log_c - alpha (log S - centre)) = c S^-alpha
        fitted = e + c * size ** (-alpha)
        return cls(E=e, alpha=alpha, C=c, r2=r_squared(ly, np.log(fitted)), n=int(size.size))


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


FORMS: dict[str, FitForm] = {
    form.name: form
    for form in (
        FitForm("power_law", ("alpha", "C", "r2"), PowerLaw.fit, PowerLaw.from_row, n_params=2),
        FitForm("offset_power_law", ("E", "alpha", "C", "r2"), OffsetPowerLaw.fit, OffsetPowerLaw.from_row, n_params=3),
    )
}


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


def leave_one_out_rmse(form: FitForm, size: np.ndarray, y: np.ndarray) -> float:
    """Root mean square log-space error of predicting each size from a fit to the others."""
    errors = []
    for i in range(len(size)):
        keep = np.arange(len(size)) != i
        try:
            law = form.fit(size[keep], y[keep])
        except ValueError:
            return float("nan")
        errors.append(math.log(float(law.predict(size[i]))) - math.log(float(y[i])))
    return float(np.sqrt(np.mean(np.square(errors))))


def compare_forms(size: np.ndarray, y: np.ndarray, forms: Sequence[str]) -> list[dict[str, Any]]:
    """Each form fitted to y(S): its parameters, leave-one-out RMSE and AICc (log space), and
    whether it is the preferred one (lowest AICc; ties go to the form with fewer parameters)."""
    size, y = np.asarray(size, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rows = []
    for name in forms:
        form = FORMS[name]
        row: dict[str, Any] = {"form": name, **dict.fromkeys(("E", "alpha", "C", "r2"), math.nan)}
        try:
            law = form.fit(size, y)
        except ValueError as exc:
            rows.append({**row, "loo_rmse": math.nan, "aicc": math.nan, "note": str(exc)})
            continue
        residual = np.log(y) - np.log(law.predict(size))
        rows.append(
            {
                **row,
                **law.row(),
                "loo_rmse": leave_one_out_rmse(form, size, y),
                "aicc": aicc(residual, form.n_params),
                "note": "",
            }
        )
    ranked = [r for r in rows if not math.isnan(r["aicc"])]
    best = min(ranked, key=lambda r: (r["aicc"], FORMS[r["form"]].n_params), default=None)
    for r in rows:
        r["preferred"] = r is best
    return rows


@dataclass(frozen=True)
class JointLaw:
    """y = E + A S^(-alpha) + B D^(-beta): size S and training tokens D together (Hoffmann et al. 2022).

    Fitted as their Approach 3: Huber loss (delta 1e-3) on log y - log yhat, L-BFGS from the
    best points of a grid of starts, keeping the best fit. E, A, B >= 0 (fitted as logarithms).
    """

    E: float
    A: float
    alpha: float
    B: float
    beta: float
    n: int

    def predict(self, size: np.ndarray | float, tokens: np.ndarray | float) -> np.ndarray:
        s, d = np.asarray(size, dtype=np.float64), np.asarray(tokens, dtype=np.float64)
        return self.E + self.A * s ** (-self.alpha) + self.B * d ** (-self.beta)

    def row(self) -> dict[str, float]:
        return {"E": self.E, "A": self.A, "alpha": self.alpha, "B": self.B, "beta": self.beta}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> JointLaw:
        return cls(*(float(row[k]) for k in ("E", "A", "alpha", "B", "beta")), n=int(row.get("n_points", 0)))

    def compute_optimal(self, compute: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(S, y) minimising y at compute C = 6 S D: S_opt = G (C / 6)^(beta / (alpha + beta))."""
        c = np.asarray(compute, dtype=np.float64) / 6.0
        g = (self.alpha * self.A / (self.beta * self.B)) ** (1.0 / (self.alpha + self.beta))
        size = g * c ** (self.beta / (self.alpha + self.beta))
        return size, self.predict(size, c / size)


HUBER_DELTA = 1e-3


def _huber(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Huber loss of residuals and its derivative."""
    small = np.abs(r) <= HUBER_DELTA
    loss = np.where(small, 0.5 * r * r, HUBER_DELTA * (np.abs(r) - 0.5 * HUBER_DELTA))
    return loss, np.where(small, r, HUBER_DELTA * np.sign(r))


def _joint_objective(theta: np.ndarray, xs: np.ndarray, xd: np.ndarray, ly: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean Huber loss of log y - log(e^e + e^(a - alpha xs) + e^(b - beta xd)) and its gradient."""
    e, a, alpha, b, beta = theta
    terms = np.stack([np.full_like(xs, e), a - alpha * xs, b - beta * xd])
    log_yhat = np.logaddexp.reduce(terms, axis=0)
    weights = np.exp(terms - log_yhat)  # each term's share of yhat
    loss, dloss = _huber(ly - log_yhat)
    g = -dloss  # d loss / d log yhat
    grad = np.array([g @ weights[0], g @ weights[1], -(g * xs) @ weights[1], g @ weights[2], -(g * xd) @ weights[2]])
    return float(loss.mean()), grad / ly.size


def fit_joint_law(size: np.ndarray, tokens: np.ndarray, y: np.ndarray, start: JointLaw | None = None) -> JointLaw:
    """The joint law fitted to y at (S, D); needs >= 6 points, two S and two D values, y > 0."""
    from scipy.optimize import minimize

    s, d, y = (np.asarray(v, dtype=np.float64) for v in (size, tokens, y))
    if s.size < 6 or len(np.unique(s)) < 2 or len(np.unique(d)) < 2:
        raise ValueError("the joint law needs at least 6 points with two sizes S and two token counts D")
    if np.any(s <= 0) or np.any(d <= 0) or np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise ValueError("the joint law needs S, D > 0 and finite y > 0")
    ms, md = float(np.log(s).mean()), float(np.log(d).mean())  # centre log S, log D: A, B stay of order y
    xs, xd, ly = np.log(s) - ms, np.log(d) - md, np.log(y)
    if start is not None:
        starts = [np.array([np.log(max(start.E, 1e-12)), np.log(start.A) - start.alpha * ms, start.alpha,
                            np.log(start.B) - start.beta * md, start.beta])]  # fmt: skip
    else:
        level = float(np.log(y).mean())
        starts = [
            np.array([level + de, level + da, alpha, level + db, beta])
            for de in (-2.0, -0.5)
            for da in (-2.0, -0.5)
            for db in (-2.0, -0.5)
            for alpha in (0.1, 0.5, 1.0)
            for beta in (0.1, 0.5, 1.0)
        ]
        starts = sorted(starts, key=lambda t: _joint_objective(t, xs, xd, ly)[0])[:6]  # the grid's best few
    bounds = [(None, None), (None, None), (0.0, 5.0), (None, None), (0.0, 5.0)]
    best = None
    for theta in starts:
        res = minimize(_joint_objective, theta, args=(xs, xd, ly), jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 3000})  # fmt: skip
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    e, a, alpha, b, beta = best.x
    return JointLaw(
        float(np.exp(e)),
        float(np.exp(a + alpha * ms)),
        float(alpha),
        float(np.exp(b + beta * md)),
        float(beta),
        int(y.size),
    )
