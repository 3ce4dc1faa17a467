"""The size level of a law's uncertainty: random-effects meta-regression with a known, full covariance.

A law's points (log y per model, in log space) are modelled as

    y = X beta + u + e,   e ~ N(0, V) (documents, and seeds where sizes have several),   u ~ N(0, tau^2 K)

where V is the covariance of the paired bootstrap replicates (models of a family share every document draw, so
V is strongly correlated: 0.8-0.95 between sizes) and u is a deviation per model size (K = Z Z^T groups the runs
of one size). tau^2 is the scatter of the sizes around their law beyond what documents and seeds explain. The
paper's estimator is ordinary least squares, so the points stay OLS; their covariance is H (V + tau^2 K) H^T
(H the OLS map), tau^2 is estimated by REML using the full V (variance-only meta-analysis code ignores the
correlations and under-covers), and intervals carry tau^2's generalized pivotal quantity (every tau^2 the
residuals allow, weighted as they allow it: `rankscale.laws.pivot`, which says why not Satterthwaite's t). Lack
of fit is Q = r^T V^-1 r (GLS residuals, tau^2 = 0) against chi^2 on M - p where V is known, and against
Hotelling's T^2 where V is a bootstrap over few documents (`lack_of_fit`); under 20 effective documents it is not
testable, whichever test a law takes (`rankscale.laws.few_documents.can_test`).

Forms that are not linear in their parameters use the same model linearised at the fit (X = the Jacobian of
log y-hat in the parameters): tau^2 depends only on X's column space, so for the power law the Jacobian and
[1, log S] give the same tau^2. docs/science.md ("Uncertainty") gives the reasons and the coverage measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special  # special, not stats: scipy.stats costs every table job ~0.2 s to import

from rankscale.laws.few_documents import Documents, can_test, few_documents_test
from rankscale.laws.form import FitForm, FittedLaw, Points
from rankscale.laws.pivot import TauPivot, equivalent_df, half_width, variances

MAX_DF = 1e6  # Satterthwaite degrees of freedom (several components) above this are Normal for every practical level
MIN_DF = 1.0  # and below this are Cauchy-like; a degenerate covariance (an exact law) gets no fewer
DF_LEVEL = 0.95  # the level at which `SizeLevel.df` states the exponent's interval as Student's t
# A replicate of log y closer to the point than this (times max(1, |log y|)) is the same number computed another
# way, not a document effect: float64 sums and logs of the same totals differ by a few ulps (2.2e-16 each) in an
# order that depends on the CPU's kernels, and the t mixture multiplies a replicate's deviation by sqrt(g_b), up to
# 1e4 with few degrees of freedom. A real document deviation is at least ~1e-7 (one of 1e6 documents changing a
# mean by a tenth), so 1e-10 sits three orders of magnitude from both.
ROUNDING = 1e-10


@dataclass(frozen=True)
class SizeLevel:
    """tau^2 and the lack-of-fit test of one law, in the law's log space."""

    tau2: float  # between-size variance by REML (0 when the sizes scatter no more than documents explain)
    q: float  # lack of fit: r^T V^-1 r of the GLS residuals with tau^2 = 0
    q_df: int  # its degrees of freedom, points - parameters
    q_p: float  # its p-value; NaN where not testable (under `MIN_DOCUMENTS` effective documents, `q_n_eff`)
    # the exponent's interval as Student's t: the df whose t interval at its variance (tau^2 at the estimate) is as
    # wide as the generalized pivot's at `DF_LEVEL` (`rankscale.laws.pivot.equivalent_df`); with several
    # components, their multivariate Satterthwaite df (inf: no wider than Normal)
    df: float
    information: float  # REML expected information of tau^2 at its estimate
    # with several variance components (`rankscale.laws.components`: a run's, a checkpoint's): each one's tau^2
    # (`tau2` is the first) and its K; empty for the one component, a deviation per size, of every other law
    parts: tuple[float, ...] = ()
    kinds: tuple[np.ndarray, ...] = field(default=(), compare=False)
    pivot: TauPivot | None = field(default=None, compare=False)  # tau^2's pivotal quantity (one component)
    q_n_eff: float = math.inf  # Kish's effective number of the documents the lack of fit is judged by (`LackOfFit`)

    @property
    def at_zero(self) -> bool:
        return self.tau2 <= 0.0


def size_matrix(groups: Sequence[object]) -> np.ndarray:
    """K = Z Z^T: 1 where two points are runs of one size (one deviation u per size), else 0."""
    labels = np.asarray([str(g) for g in groups])
    return (labels[:, None] == labels[None, :]).astype(np.float64)


def without_rounding(log_point: np.ndarray, log_replicates: np.ndarray) -> np.ndarray:
    """Replicates [B, M] of log y with every deviation from the point below `ROUNDING` set to exactly zero, so a
    noise-free replicate is the point on every CPU (non-finite values are kept)."""
    point = np.asarray(log_point, dtype=np.float64)[None, :]
    reps = np.asarray(log_replicates, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        small = np.abs(reps - point) <= ROUNDING * np.maximum(1.0, np.abs(point))
    return np.where(small, point, reps)


def replicate_covariance(log_point: np.ndarray, log_replicates: np.ndarray) -> np.ndarray:
    """V: the covariance of the replicates [B, M] of log y (rows with a non-finite value left out; deviations from
    the point below rounding are zero, `without_rounding`)."""
    rows = without_rounding(log_point, log_replicates)
    rows = rows[np.isfinite(rows).all(axis=1)]
    if len(rows) < 2:
        raise ValueError("fewer than two finite bootstrap replicates: no document covariance")
    return np.atleast_2d(np.cov(rows, rowvar=False))


def _chol_inverse(matrix: np.ndarray) -> tuple[np.ndarray, float]:
    """Inverse and log-determinant of a symmetric positive-definite matrix (a relative ridge where it is singular)."""
    scale = float(np.mean(np.diag(matrix))) or 1.0
    for ridge in (0.0, 1e-12, 1e-9, 1e-6):
        try:
            factor = np.linalg.cholesky(matrix + ridge * scale * np.eye(len(matrix)))
        except np.linalg.LinAlgError:
            continue
        inverse_factor = np.linalg.inv(factor)
        return inverse_factor.T @ inverse_factor, 2.0 * float(np.log(np.diag(factor)).sum())
    raise np.linalg.LinAlgError("the covariance of the points is not positive definite")


def _projection(X: np.ndarray, sigma_inv: np.ndarray) -> tuple[np.ndarray, float]:
    """REML's P = S^-1 - S^-1 X (X^T S^-1 X)^-1 X^T S^-1, and log det(X^T S^-1 X)."""
    xs = X.T @ sigma_inv
    inner_inv, inner_logdet = _chol_inverse(xs @ X)
    return sigma_inv - xs.T @ inner_inv @ xs, inner_logdet


def reml_loglik(tau2: float, X: np.ndarray, y: np.ndarray, V: np.ndarray, K: np.ndarray) -> float:
    """The restricted log-likelihood of tau^2 (up to a constant): -(log|S| + log|X^T S^-1 X| + y^T P y) / 2."""
    sigma_inv, logdet = _chol_inverse(V + tau2 * K)
    P, inner_logdet = _projection(X, sigma_inv)
    return -0.5 * (logdet + inner_logdet + float(y @ P @ y))


def residual_basis(X: np.ndarray) -> np.ndarray:
    """L [M, M - p]: an orthonormal basis of the residual space (orthogonal to X's columns). REML is the
    likelihood of L^T y ~ N(0, L^T (V + tau^2 K) L), equal to `reml_loglik` up to a constant."""
    q, _ = np.linalg.qr(X, mode="complete")
    return q[:, X.shape[1] :]


def _residual_curve(taus: np.ndarray, L: np.ndarray, y: np.ndarray, V: np.ndarray, K: np.ndarray) -> np.ndarray:
    """REML log-likelihood at every tau^2 of `taus` at once (residual-space form, batched)."""
    z, LVL, LKL = L.T @ y, L.T @ V @ L, L.T @ K @ L
    A = LVL[None] + taus[:, None, None] * LKL[None]
    sign, logdet = np.linalg.slogdet(A)
    ok = sign > 0  # tau^2 = 0 with no document noise at all (a single document, an exact law) is singular
    out = np.full(len(taus), -np.inf)
    solved = np.linalg.solve(A[ok], np.broadcast_to(z, (int(ok.sum()), len(z)))[..., None])[..., 0]
    out[ok] = -0.5 * (logdet[ok] + np.einsum("i,gi->g", z, solved))
    return out


def reml_information(tau2: float, X: np.ndarray, V: np.ndarray, K: np.ndarray) -> float:
    """Expected REML information of tau^2: tr(P K P K) / 2, P = L (L^T S L)^-1 L^T."""
    L = residual_basis(X)
    LKL = L.T @ K @ L
    try:
        M = np.linalg.solve(L.T @ V @ L + tau2 * LKL, LKL)
    except np.linalg.LinAlgError:  # no noise at all (tau^2 = 0 and no document noise): tau^2 is known exactly
        return math.inf
    return 0.5 * float(np.trace(M @ M))


def reml_tau2(X: np.ndarray, y: np.ndarray, V: np.ndarray, K: np.ndarray) -> float:
    """tau^2 >= 0 maximising the restricted likelihood: a log grid from far below the document noise to far
    above the points' own scatter (the likelihood can have several local maxima), then Brent's method between
    the best grid point's neighbours."""
    L = residual_basis(X)
    z = L.T @ y
    if not z.any():  # the points lie exactly on the law (a law of a ratio that is 1 throughout, say: emergence's N = 1)
        return 0.0  # the likelihood falls as tau^2 grows; with no document noise either, a search would go subnormal
    scale = max(float(np.mean(np.diag(L.T @ V @ L))), float(z @ z) / len(z), 1e-300)
    grid = np.concatenate([[0.0], scale * np.geomspace(1e-6, 1e3, 64)])
    values = _residual_curve(grid, L, y, V, K)
    best = int(np.argmax(values))
    if best == len(grid) - 1:  # still rising past 1000x the scatter: the document covariance is degenerate
        return float(grid[best])
    low, high = grid[max(best - 1, 0)], grid[best + 1]
    found = optimize.minimize_scalar(
        lambda t: -float(_residual_curve(np.array([t]), L, y, V, K)[0]),
        bounds=(low, high),
        method="bounded",
        options={"xatol": 1e-10 * scale},
    )
    return float(found.x) if -found.fun > values[best] else float(grid[best])


@dataclass(frozen=True)
class LackOfFit:
    """A law's lack-of-fit statistic, its degrees of freedom and p-value, and the effective number of documents
    (Kish) that decided whether it is testable: p is NaN under `rankscale.laws.few_documents.MIN_DOCUMENTS`."""

    q: float
    df: int
    p: float
    n_eff: float  # inf: a covariance taken as known


def lack_of_fit(
    X: np.ndarray, y: np.ndarray, V: np.ndarray, documents_df: float = math.inf, documents: Documents | None = None
) -> LackOfFit:
    """Q = r^T V^-1 r for the GLS residuals with documents (and seeds) as the only noise, on m = M - p degrees of
    freedom, and its p-value.

    Q = z^T (L^T V L)^-1 z with z = L^T y the residual-space coordinates (`residual_basis`). With V known, Q is
    chi^2_m. V is the covariance of a bootstrap over documents, itself estimated from them: with `documents_df`
    = nu (the effective number of documents less one, `rankscale.bootstrap.kish_documents`), L^T V L is taken as
    Wishart on nu degrees of freedom, and Q is Hotelling's T^2: Q (nu - m + 1) / (nu m) ~ F(m, nu - m + 1)
    (Hotelling 1931; Anderson, An Introduction to Multivariate Statistical Analysis, 3rd ed., 5.2). chi^2 is
    its nu -> infinity limit. With `documents` (each resampling unit's influence on the points and its tokens),
    Q is the residual sum of squares against the documents' sign-flip null instead (`rankscale.laws.few_documents`).
    Either way, under 20 effective documents (nu + 1, and with `documents` the fewer of that and the units' own
    Kish number: a stratum's tokens may spread more evenly than its dataset's, but its documents are the
    dataset's) the law is not testable: Q is reported, p is NaN (`rankscale.laws.few_documents.can_test`; Hotelling's T^2 rejected 17.8-19.7% of exact
    laws at 6.6)."""
    v_inv, _ = _chol_inverse(V)
    beta = np.linalg.solve(X.T @ v_inv @ X, X.T @ v_inv @ y)
    r = y - X @ beta
    q = float(r @ v_inv @ r)
    dof = len(y) - X.shape[1]
    n_eff = documents_df + 1.0
    if documents is not None and dof > 0:
        q, p = few_documents_test(residual_basis(X), y, documents)
        n_eff = min(documents.n_eff, n_eff)  # a stratum spread evenly over pydoc's documents is still pydoc's
    else:
        p = hotelling_p(q, dof, documents_df)
    return LackOfFit(q, dof, p if can_test(n_eff) else float("nan"), n_eff)


def hotelling_p(q: float, dof: int, documents_df: float = math.inf) -> float:
    """P(T^2 >= q) for Hotelling's T^2 of dimension `dof` with a covariance on `documents_df` degrees of freedom
    (chi^2_dof where that is infinite); NaN where no test exists (no residual, or too few documents)."""
    if dof <= 0:
        return float("nan")
    if not np.isfinite(documents_df):
        return float(special.chdtrc(dof, q))
    denominator = documents_df - dof + 1.0
    if denominator <= 0:
        return float("nan")
    return float(special.fdtrc(dof, denominator, q * denominator / (documents_df * dof)))


def ols_map(X: np.ndarray) -> np.ndarray:
    """H = (X^T X)^-1 X^T: the OLS estimator is H y."""
    return np.linalg.solve(X.T @ X, X.T)


def leaves_residual(X: np.ndarray, y: np.ndarray) -> bool:
    """More points than parameters, and a design of full rank: scatter around the law can be told from it."""
    return len(y) > X.shape[1] and np.linalg.matrix_rank(X) == X.shape[1]


def fit_size_level(
    X: np.ndarray,
    y: np.ndarray,
    V: np.ndarray,
    K: np.ndarray,
    contrast: np.ndarray,
    documents_df: float = math.inf,
    documents: Documents | None = None,
) -> SizeLevel | None:
    """tau^2, Q and the degrees of freedom of `contrast`^T beta; None where the points leave no residual degrees
    of freedom (as many points as parameters): the scatter of the sizes cannot be told from the law there.
    `documents_df`: the degrees of freedom of V, a bootstrap over documents; `documents`: the units' influence on y
    and tokens, where the documents test the law from their own errors (`lack_of_fit`)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if not leaves_residual(X, y):
        return None
    tau2 = reml_tau2(X, y, V, K)
    information = reml_information(tau2, X, V, K)
    lof = lack_of_fit(X, y, V, documents_df, documents)
    pivot = TauPivot.of(residual_basis(X), y, V, K)
    hc = ols_map(X).T @ np.asarray(contrast, dtype=np.float64)
    a, b = float(hc @ V @ hc), float(hc @ K @ hc)
    df = equivalent_df(half_width(variances(a, [(b, pivot)]), DF_LEVEL), a + b * tau2, DF_LEVEL)
    return SizeLevel(
        tau2=tau2, q=lof.q, q_df=lof.df, q_p=lof.p, df=df, information=information, pivot=pivot, q_n_eff=lof.n_eff
    )


def t_interval(estimate: float, variance: float, df: float, level: float) -> tuple[float, float]:
    """estimate -/+ t_{df, (1 + level)/2} sqrt(variance)."""
    half = float(special.stdtrit(df, 0.5 + level / 2.0) if np.isfinite(df) else special.ndtri(0.5 + level / 2.0))
    return estimate - half * np.sqrt(variance), estimate + half * np.sqrt(variance)


@dataclass(frozen=True)
class SizeDraws:
    """One law's draws of the size level, per replicate b: the sizes' deviations u_b ~ N(0, R_b K) with R_b a draw
    of tau^2's pivotal quantity (`TauPivot`), and a new size's deviation in the same draw. With several
    components: u_b ~ N(0, sum_i tau_i^2 K_i) in Satterthwaite's t mixture (scale sqrt(g_b), g_b = df / chi^2_df)."""

    scale: np.ndarray  # [B]
    deviations: np.ndarray  # [B, M] in log space
    new: np.ndarray  # [B] sqrt(g_b) u_new

    @classmethod
    def of(cls, level: SizeLevel, K: np.ndarray, replicates: int, rng: np.random.Generator,
           paired: tuple[float, np.random.Generator] | None = None) -> SizeDraws:  # fmt: skip
        """`paired` = (rho, fresh): the normals `rng` gives (the same as another law's of the same stream) mixed
        with fresh ones, rho z + sqrt(1 - rho^2) z', so this law's size deviations correlate rho with that law's
        (`rankscale.laws.paired`); without it, or at rho = 1, they are that law's normals."""
        if level.parts:  # several components: deviations ~ N(0, sum_i tau_i^2 K_i), a new point gets every one
            return cls.of_components(level, replicates, rng)
        labels, index = np.unique(K.argmax(axis=1), return_inverse=True)  # each point's size (its group's first)
        z = rng.standard_normal((replicates, len(labels) + 1))
        if paired is not None and paired[0] != 1.0:
            rho, fresh = paired
            z = rho * z + np.sqrt(max(1.0 - rho * rho, 0.0)) * fresh.standard_normal(z.shape)
        tau = np.sqrt(
            level.pivot.draws(replicates, rng) if level.pivot is not None else np.full(replicates, level.tau2)
        )
        return cls(np.ones(replicates), tau[:, None] * z[:, index], tau * z[:, -1])

    @classmethod
    def of_components(cls, level: SizeLevel, replicates: int, rng: np.random.Generator) -> SizeDraws:
        U = sum(t * K for t, K in zip(level.parts, level.kinds, strict=True))
        values, vectors = np.linalg.eigh(U)
        root = vectors * np.sqrt(np.clip(values, 0.0, None))[None, :]  # root @ root.T = U (U may be singular)
        z = rng.standard_normal((replicates, len(U) + 1))
        g = level.df / rng.chisquare(level.df, replicates) if np.isfinite(level.df) else np.ones(replicates)
        scale = np.sqrt(g)
        return cls(scale, z[:, :-1] @ root.T, scale * np.sqrt(sum(level.parts)) * z[:, -1])

    def apply(self, log_point: np.ndarray, log_replicates: np.ndarray) -> np.ndarray:
        """Replicates [B, M] of log y whose refits carry the size level:

            y*_b = y + sqrt(g_b) ((y_b - y) + u_b)

        (g_b = 1 but with several components). Given R_b the deviation has covariance V + R_b K; mixed over R_b,
        any linear function c^T y of the points (the OLS exponent, a prediction) is the generalized pivot
        N(0, c^T (V + R K) c) mixed over R: the interval `rankscale.laws.pivot.mixture_interval` gives. A point
        with a non-finite value keeps it. A deviation below rounding is zero
        (`without_rounding`): sqrt(g_b) would otherwise carry a CPU's last bits into the interval."""
        n = len(log_replicates)
        documents = without_rounding(log_point, log_replicates) - log_point[None, :]
        return log_point[None, :] + self.scale[:n, None] * (documents + self.deviations[:n])

    def shift_parameters(self, theta: np.ndarray, refitted: np.ndarray, H: np.ndarray) -> np.ndarray:
        """A form without a closed form, refitted on the document replicates ([n, p] beside its fit theta [p]): the
        size level added through the fit's linearisation H (d theta = H d log y), in the same t mixture."""
        n = len(refitted)
        return theta[None, :] + self.scale[:n, None] * ((refitted - theta[None, :]) + self.deviations[:n] @ H.T)


def with_size_level(
    log_point: np.ndarray,
    log_replicates: np.ndarray,
    K: np.ndarray,
    level: SizeLevel,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """`SizeDraws.apply` with fresh draws: replicates [B, M] of log y carrying the size level, and [B] a new size's
    deviation in the same draws."""
    draws = SizeDraws.of(level, K, len(log_replicates), rng)
    return draws.apply(log_point, np.asarray(log_replicates, dtype=np.float64)), draws.new


def log_design(form: FitForm, law: FittedLaw, points: Points) -> tuple[np.ndarray, list[str]]:
    """X: the Jacobian of log y-hat in the law's parameters at the fit ([M, p]), and the parameters' names.

    For the power law it is exact ([-log S, 1 / C], spanning [1, log S]: log y = log C - alpha log S); for the
    other forms it is the linearisation at the fit. Central differences, one-sided where a step would leave a bounded domain. A
    parameter at a bound of its domain in the fit (a floor E at 0) is an active constraint: held there, it gets
    no column (its free direction would be read as uncertainty the constrained fit does not have)."""
    row = {**law.row()}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        level_of_y = float(np.median(form.predict(law, points)))
    names = [
        n for n in form.columns if n != "r2" and not (n in form.bounds and form.bounds[n].reached(row[n], level_of_y))
    ]
    if form.log_jacobian is not None and len(names) == len([n for n in form.columns if n != "r2"]):  # none held
        return form.log_jacobian(law, points), names
    columns = []
    for name in names:
        value = float(row[name])
        step = 1e-6 * max(abs(value), 1e-3)
        bound = form.bounds.get(name)
        low_ok = bound is None or value - step >= bound.low
        high_ok = bound is None or value + step <= bound.high
        up, down = (value + step if high_ok else value), (value - step if low_ok else value)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            hi = np.log(form.predict(form.from_row({**row, name: up}), points))
            lo = np.log(form.predict(form.from_row({**row, name: down}), points))
        columns.append((hi - lo) / (up - down))
    return (np.stack(columns, axis=1) if columns else np.zeros((len(points), 0))), names
