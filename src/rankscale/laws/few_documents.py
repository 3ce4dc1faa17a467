"""Lack of fit from the documents themselves: Q with the documents' own covariance, against a sign-flip null.

Q = z^T (L^T V L)^-1 z compares a law's residuals z with the document covariance V, and V is itself estimated
from the documents. With many documents Q is chi^2 on m = M - p degrees of freedom. With few (pydoc: 27, worth 6.6
by Kish) the null Q is far heavier than chi^2 (56% of exact laws rejected) and lighter than Hotelling's T^2 on
Kish's n_eff - 1 (none rejected). A Gaussian reference with variance ~ length^gamma, fitted to the documents,
held its level on Gaussian documents but rejected 12-32% of exact laws on nulls built from the run's real
documents (issue 49): real documents are skewed and uneven in ways no variance function describes.

So the null is drawn from the documents exactly. Unit u (a document the bootstrap draws) has influence a_u on the
points (`rankscale.tables.base.Replicates.influence`), b_u = L^T a_u in the residual space, and w_u its share of
the scored tokens. To first order b_u = e_u - w_u z, where e_u is the unit's own error and z = sum_u e_u (the
estimate re-centres by the unit's share), so e_u = b_u + w_u z is recovered from the data. Under an exact law the
e_u are independent with mean 0; flipping their signs (s_u = +/-1, each with probability 1/2) gives another
sample the null makes as likely where each e_u is symmetric, and Q is recomputed on it with the covariance
re-estimated from the flipped units' own influence: z* = sum s_u e_u, b*_u = s_u e_u - w_u z*,
Q* = z*^T (B*^T B*)^-1 z*. All signs +1 give the observed Q, so p = (1 + #{Q* >= Q}) / (1 + draws) is a Monte Carlo
randomization test (the wild bootstrap's Rademacher weights with a studentized statistic: Davison & Hinkley 1997,
Bootstrap Methods and their Application, 4.4 and 6.2.4; Fisher's sign-flip test for a multivariate mean). Where
the units cannot estimate an m-dimensional covariance (no more units with tokens than m) the lack of fit is not
testable (NaN). benchmarks/real_document_nulls.py measures its level on the run's own documents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankscale.bootstrap import seed_sequence

DRAWS = 4_000  # sign patterns of the reference: p to about 0.0035 at 0.05 (the test holds its level at any count)


@dataclass(frozen=True)
class Documents:
    """What a law's points owe to each resampling unit: its influence on each point's log y [U, M] and its scored
    tokens [U] (the same documents scored by every model of the law)."""

    influence: np.ndarray
    tokens: np.ndarray

    def minus(self, other: Documents) -> Documents:
        """The units' influence on log(y_a / y_b): a ratio law's (the same documents)."""
        return Documents(self.influence - other.influence, self.tokens)


def few_documents_test(L: np.ndarray, y: np.ndarray, documents: Documents, draws: int = DRAWS) -> tuple[float, float]:
    """(Q, p) of a law's residual basis L [M, m] and points y [M] with the documents' covariance and their sign-flip
    null; (NaN, NaN) where the units cannot estimate an m-dimensional covariance (not testable)."""
    b = np.asarray(documents.influence, dtype=np.float64) @ L  # [U, m]
    tokens = np.asarray(documents.tokens, dtype=np.float64)
    keep = tokens > 0
    b, shares = b[keep], tokens[keep] / tokens[keep].sum()
    units, m = b.shape
    if units <= m or not np.isfinite(b).all():
        return float("nan"), float("nan")
    z = L.T @ np.asarray(y, dtype=np.float64)
    q = _statistic(b, z)
    if not np.isfinite(q):
        return float("nan"), float("nan")
    errors = b + shares[:, None] * z[None, :]  # e_u: each unit's own error
    reference = sign_flips(errors, shares, draws, seed_sequence(units, "lack of fit", "sign flips"))
    return q, float((1 + np.sum(reference >= q * (1.0 - 1e-12))) / (1 + draws))


def _statistic(b: np.ndarray, z: np.ndarray) -> float:
    try:
        return float(z @ np.linalg.solve(b.T @ b, z))
    except np.linalg.LinAlgError:
        return float("nan")


def sign_flips(errors: np.ndarray, shares: np.ndarray, draws: int, seed: np.random.SeedSequence) -> np.ndarray:
    """`draws` values of Q* = z*^T (B*^T B*)^-1 z* over random signs s_u: z* = sum s_u e_u, b*_u = s_u e_u - w_u z*
    (a singular draw gives +inf: it cannot be told from the observed Q, so it counts against rejecting)."""
    rng = np.random.default_rng(seed)
    units, m = errors.shape
    out = np.empty(draws)
    block = max(1, 2_000_000 // (units * m))  # bounds memory at ~16 MB a block
    for start in range(0, draws, block):
        rows = min(block, draws - start)
        signs = rng.integers(0, 2, size=(rows, units)) * 2.0 - 1.0
        e = signs[:, :, None] * errors[None, :, :]
        z = e.sum(axis=1)
        a = e - shares[None, :, None] * z[:, None, :]
        V = np.einsum("rum,ruk->rmk", a, a)
        sign, logdet = np.linalg.slogdet(V)
        scale = np.log(np.einsum("rmm->r", V) / m + 1e-300) * m
        ok = (sign > 0) & (logdet > scale + np.log(1e-12))  # a determinant 1e-12 of its trace's: singular
        q = np.full(rows, np.inf)
        q[ok] = np.einsum("rm,rm->r", z[ok], np.linalg.solve(V[ok], z[ok][..., None])[..., 0])
        out[start : start + rows] = q
    return out
