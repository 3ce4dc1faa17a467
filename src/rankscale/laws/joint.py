"""The joint law in size and training tokens, y = E + A S^-alpha + B D^-beta (Hoffmann et al. 2022)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize

from rankscale.laws.form import Bound, FitForm, Points, Replicates, refit_each

HUBER_DELTA = 1e-3
COLUMNS = ("E", "A", "alpha", "B", "beta")


@dataclass(frozen=True)
class JointLaw:
    """y = E + A S^(-alpha) + B D^(-beta): size S and training tokens D together.

    Fitted as Hoffmann et al.'s Approach 3: Huber loss (delta 1e-3) on log y - log yhat, L-BFGS
    from the best points of a grid of starts, keeping the best fit. E, A, B >= 0 (fitted as logarithms).
    """

    E: float
    A: float
    alpha: float
    B: float
    beta: float
    n: int

    def at(self, size: np.ndarray | float, tokens: np.ndarray | float) -> np.ndarray:
        s, d = np.asarray(size, dtype=np.float64), np.asarray(tokens, dtype=np.float64)
        return self.E + self.A * s ** (-self.alpha) + self.B * d ** (-self.beta)

    def predict(self, points: Points) -> np.ndarray:
        if points.training_tokens is None:
            raise ValueError("the joint law predicts at (S, D): give the training tokens D too")
        return self.at(points.S, points.training_tokens)

    def row(self) -> dict[str, float]:
        return {"E": self.E, "A": self.A, "alpha": self.alpha, "B": self.B, "beta": self.beta}

    def scaled(self, factor: float) -> JointLaw:
        return JointLaw(factor * self.E, factor * self.A, self.alpha, factor * self.B, self.beta, self.n)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> JointLaw:
        return cls(*(float(row[k]) for k in COLUMNS), n=int(row.get("n_points", 0)))

    @classmethod
    def fit(cls, points: Points, y: np.ndarray, start: JointLaw | None = None) -> JointLaw:
        if points.training_tokens is None:
            raise ValueError("the joint law is fitted at (S, D): give the training tokens D too")
        return fit_joint_law(points.S, points.training_tokens, y, start)

    def compute_optimal(self, compute: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(S, y) minimising y at compute C = 6 S D: S_opt = G (C / 6)^(beta / (alpha + beta))."""
        c = np.asarray(compute, dtype=np.float64) / 6.0
        g = (self.alpha * self.A / (self.beta * self.B)) ** (1.0 / (self.alpha + self.beta))
        size = g * c ** (self.beta / (self.alpha + self.beta))
        return size, self.at(size, c / size)

    @staticmethod
    def predict_replicates(params: Replicates, points: Points) -> np.ndarray:
        assert points.training_tokens is not None
        p = {name: params[name][:, None] for name in COLUMNS}
        return (
            p["E"]
            + p["A"] * points.S[None, :] ** (-p["alpha"])
            + p["B"] * points.training_tokens[None, :] ** (-p["beta"])
        )


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


JOINT = FitForm(
    name="joint",
    columns=COLUMNS,
    n_params=5,
    fit=JointLaw.fit,
    from_row=JointLaw.from_row,
    fit_replicates=lambda points, y, law, refits: refit_each(JointLaw.fit, COLUMNS, points, y, law, refits),
    predict_replicates=JointLaw.predict_replicates,
    scaled=lambda law, factor: law.scaled(factor),
    variables=("S", "D"),
    # E, A, B >= 0 (fitted as logarithms, so 0 is approached, never reached); exponents in [0, 5]
    bounds={
        "E": Bound(low=0.0, in_units_of_y=True),
        "A": Bound(low=0.0, in_units_of_y=True),
        "B": Bound(low=0.0, in_units_of_y=True),
        "alpha": Bound(0.0, 5.0),
        "beta": Bound(0.0, 5.0),
    },
)
