"""The joint law in size and training tokens, y = E + A S^-alpha + B D^-beta (Hoffmann et al. 2022).

Fitted by least squares in log space, the estimator the size level's model assumes (Gaussian deviations of
log y: documents, and a run's scatter around the law), so the refits that carry that scatter are the same
estimator on perturbed points. Hoffmann et al. used a Huber loss with delta 1e-3; with log-space residuals of
0.005-0.05 that is nearly least absolute deviations, an estimator whose noise no least-squares map describes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankscale.laws.form import Bound, FitForm, Points, RefittedParameters

COLUMNS = ("E", "A", "alpha", "B", "beta")
EXPONENT_RANGE = (0.0, 5.0)  # alpha and beta; E, A, B > 0 are fitted as logarithms
LOG_RANGE = (-300.0, 300.0)  # log A', log B' kept where exp() stays finite


@dataclass(frozen=True)
class JointLaw:
    """y = E + A S^(-alpha) + B D^(-beta): size S and training tokens D together.

    Fitted by least squares on log y - log yhat: Levenberg-Marquardt from every start of a grid (108 starts, all
    at once; Hoffmann et al.'s Approach 3 searches a grid the same way), keeping the best; `refit_rows` refits the
    bootstrap replicates with the same algorithm from it. E >= 0, A, B > 0; alpha, beta in [0, 5].
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
    def predict_replicates(params: RefittedParameters, points: Points) -> np.ndarray:
        assert points.training_tokens is not None
        p = {name: params[name][:, None] for name in COLUMNS}
        return (
            p["E"]
            + p["A"] * points.S[None, :] ** (-p["alpha"])
            + p["B"] * points.training_tokens[None, :] ** (-p["beta"])
        )


def _log_terms(theta: np.ndarray, xs: np.ndarray, xd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log y-hat [n, M] and its Jacobian [n, M, 5] in theta = (E, log A', alpha, log B', beta) [n, 5], at centred
    log S and log D (A' = A e^(-alpha mean log S), likewise B'). E itself, not its logarithm: its bound 0 is then a
    point the fit can reach and hold, not a direction it drifts along forever."""
    E, a, alpha, b, beta = (theta[:, i : i + 1] for i in range(5))
    size_term, token_term = np.exp(a - alpha * xs[None, :]), np.exp(b - beta * xd[None, :])
    yhat = E + size_term + token_term
    w_size, w_tokens = size_term / yhat, token_term / yhat
    jacobian = np.stack(
        np.broadcast_arrays(1.0 / yhat, w_size, -xs[None, :] * w_size, w_tokens, -xd[None, :] * w_tokens), axis=-1
    )
    return np.log(yhat), jacobian


def _levenberg_marquardt(theta: np.ndarray, xs: np.ndarray, xd: np.ndarray, ly: np.ndarray,
                         iterations: int = 5000) -> np.ndarray:  # fmt: skip
    """Least-squares fits of every row of log y [n, M] from theta [n, 5] at once: damped Gauss-Newton steps,
    each kept only where it lowers that row's squared error; E at 0, or an exponent at 0 or 5, whose gradient
    points outward is held there (an active constraint), as L-BFGS-B holds it."""
    theta = theta.copy()
    low = np.array([0.0, LOG_RANGE[0], EXPONENT_RANGE[0], LOG_RANGE[0], EXPONENT_RANGE[0]])
    high = np.array([np.inf, LOG_RANGE[1], EXPONENT_RANGE[1], LOG_RANGE[1], EXPONENT_RANGE[1]])
    log_yhat, jacobian = _log_terms(theta, xs, xd)
    r = ly - log_yhat
    ssr = np.einsum("nm,nm->n", r, r)
    damping = np.full(len(theta), 1e-3)
    active = np.ones(len(theta), dtype=bool)
    for _ in range(iterations):
        if not active.any():
            break
        J, res = jacobian[active], r[active]
        g = np.einsum("nmp,nm->np", J, res)  # descent direction: -1/2 the gradient of the squared error
        H = np.einsum("nmp,nmq->npq", J, J)
        t = theta[active]
        held = ((t <= low) & (g < 0)) | ((t >= high) & (g > 0))
        # Marquardt's scaling by the diagonal, floored so a parameter the data no longer see (a term gone to 0)
        # still gets a step the damping controls
        diag = np.einsum("npp->np", H)
        diag = np.maximum(diag, 1e-9 * diag.max(axis=1, keepdims=True) + 1e-30)
        system = H + damping[active, None, None] * np.eye(5)[None] * diag[:, :, None]
        free = ~held
        system = np.where(free[:, :, None] & free[:, None, :], system, np.eye(5)[None])
        rhs = np.where(free, g, 0.0)[..., None]
        try:
            step = np.linalg.solve(system, rhs)[..., 0]
        except np.linalg.LinAlgError:  # a row numerically singular even so: its least-norm step
            step = (np.linalg.pinv(system) @ rhs)[..., 0]
        candidate = np.clip(t + step, low, high)
        c_log, c_jac = _log_terms(candidate, xs, xd)
        c_r = ly[active] - c_log
        c_ssr = np.einsum("nm,nm->n", c_r, c_r)
        better = c_ssr < ssr[active]
        rows = np.flatnonzero(active)
        kept = rows[better]
        gain = ssr[kept] - c_ssr[better]
        theta[kept], r[kept], jacobian[kept], ssr[kept] = candidate[better], c_r[better], c_jac[better], c_ssr[better]
        damping[kept] = np.maximum(damping[kept] / 5.0, 1e-12)  # never 0: the system stays regular
        damping[rows[~better]] *= 4.0
        moved = np.abs(candidate - t).max(axis=1)
        converged = np.zeros(len(rows), dtype=bool)
        converged[better] = (gain <= 1e-15 * np.maximum(ssr[kept], 1e-300)) | (moved[better] <= 1e-12)
        converged |= damping[rows] > 1e12  # no step lowers the error: a minimum
        active[rows[converged]] = False
    return theta


def _transform(law: JointLaw, ms: float, md: float) -> np.ndarray:
    """theta of a law (`_log_terms`), at log S and log D centred on ms and md."""
    return np.array([law.E, np.log(law.A) - law.alpha * ms, law.alpha,
                     np.log(law.B) - law.beta * md, law.beta])  # fmt: skip


def _centred(s: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """log S and log D less their means (A, B then stay of order y), and the means."""
    ms, md = float(np.log(s).mean()), float(np.log(d).mean())
    return np.log(s) - ms, np.log(d) - md, ms, md


def refit_rows(points: Points, y: np.ndarray, start: JointLaw) -> dict[str, np.ndarray]:
    """The joint law refitted on every row of y [B, M] at once, each from `start` (the full data's fit): least
    squares, as the fit (NaN for a row with a value that is not finite and positive)."""
    assert points.training_tokens is not None
    rows = np.asarray(y, dtype=np.float64)
    out = {name: np.full(len(rows), np.nan) for name in COLUMNS}
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(rows).all(axis=1) & (rows > 0).all(axis=1)
    if not ok.any():
        return out
    xs, xd, ms, md = _centred(points.S, points.training_tokens)
    theta = _levenberg_marquardt(np.tile(_transform(start, ms, md), (int(ok.sum()), 1)), xs, xd, np.log(rows[ok]))
    out["E"][ok], out["alpha"][ok], out["beta"][ok] = theta[:, 0], theta[:, 2], theta[:, 4]
    out["A"][ok] = np.exp(theta[:, 1] + theta[:, 2] * ms)
    out["B"][ok] = np.exp(theta[:, 3] + theta[:, 4] * md)
    return out


def log_jacobian(law: JointLaw, points: Points) -> np.ndarray:
    """d log y-hat / d (E, A, alpha, B, beta) [M, 5] at the law, in closed form."""
    assert points.training_tokens is not None
    s, d = points.S, points.training_tokens
    size_term, token_term = law.A * s ** (-law.alpha), law.B * d ** (-law.beta)
    yhat = law.E + size_term + token_term
    columns = [np.ones_like(s), size_term / law.A, -size_term * np.log(s), token_term / law.B, -token_term * np.log(d)]
    return np.stack(columns, axis=1) / yhat[:, None]


def fit_joint_law(size: np.ndarray, tokens: np.ndarray, y: np.ndarray, start: JointLaw | None = None) -> JointLaw:
    """The joint law fitted to y at (S, D); needs >= 6 points, two S and two D values, y > 0."""
    s, d, y = (np.asarray(v, dtype=np.float64) for v in (size, tokens, y))
    if s.size < 6 or len(np.unique(s)) < 2 or len(np.unique(d)) < 2:
        raise ValueError("the joint law needs at least 6 points with two sizes S and two token counts D")
    if np.any(s <= 0) or np.any(d <= 0) or np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise ValueError("the joint law needs S, D > 0 and finite y > 0")
    xs, xd, ms, md = _centred(s, d)
    ly = np.log(y)
    if start is not None:
        starts = _transform(start, ms, md)[None, :]
    else:
        level = float(ly.mean())
        starts = np.array([[np.exp(level + de), level + da, alpha, level + db, beta]
                           for de in (-2.0, -0.5) for da in (-2.0, -0.5) for db in (-2.0, -0.5)
                           for alpha in (0.1, 0.5, 1.0) for beta in (0.1, 0.5, 1.0)])  # fmt: skip
    fits = _levenberg_marquardt(starts, xs, xd, np.broadcast_to(ly, (len(starts), ly.size)))  # every start at once
    log_yhat, _ = _log_terms(fits, xs, xd)
    E, a, alpha, b, beta = fits[int(np.argmin(((ly[None, :] - log_yhat) ** 2).sum(axis=1)))]  # the best
    return JointLaw(
        float(E),
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
    # every replicate at once (vectorised Levenberg-Marquardt): `refits` caps the forms refitted one by one only
    fit_replicates=lambda points, y, law, refits: refit_rows(points, y, law),
    predict_replicates=JointLaw.predict_replicates,
    scaled=lambda law, factor: law.scaled(factor),
    variables=("S", "D"),
    batch_refits=True,
    log_jacobian=log_jacobian,
    # E >= 0 (reached and held at 0), A, B > 0 (fitted as logarithms); exponents in [0, 5]
    bounds={
        "E": Bound(low=0.0, in_units_of_y=True),
        "A": Bound(low=0.0, in_units_of_y=True),
        "B": Bound(low=0.0, in_units_of_y=True),
        "alpha": Bound(0.0, 5.0),
        "beta": Bound(0.0, 5.0),
    },
)
