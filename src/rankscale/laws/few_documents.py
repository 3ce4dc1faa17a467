"""Lack of fit over few documents: Q with the documents' own covariance, against the null its documents give.

Q = z^T (L^T V L)^-1 z compares a law's residuals z with the document covariance V, and V is itself estimated
from the documents. With many documents Q is chi^2 on m = M - p degrees of freedom. With few (pydoc: 27, worth 6.6
by Kish) the null Q is far heavier than chi^2, which rejected 56% of exact laws, and far lighter than Hotelling's
T^2 with Kish's n_eff - 1 degrees of freedom, which rejected none: a token-weighted sum of 27 rank-one matrices is
not a Wishart matrix on 5.6 degrees of freedom. A bootstrap-t reference (resampling the documents and
re-estimating V on each resample) rejected 11% of exact laws over Gaussian documents of pydoc's weights: too light
as well.

So the test is built from the documents exactly. Unit u (a document the bootstrap draws) has influence a_u on the
points (`rankscale.tables.base.Replicates.influence`); the statistic is Q = z^T (B^T B)^-1 z with B's rows
b_u = L^T a_u, whose B^T B is the bootstrap's L^T V L to first order. Under an exact law each unit's own error is
e_u ~ N(0, c_u I) in the whitened residual space, z = sum_u e_u, and the influence values are e_u - w_u z (w_u the
unit's share of the scored tokens: what the estimate re-centres by). The scale c_u follows the unit's length as
c_u ~ w_u^gamma: gamma = 1 where the tokens' own noise dominates (the assumption of Kish's n_eff), 2 where whole
documents differ (a document's mean varies alike whatever its length); gamma is the slope of log |b_u|^2 on log
w_u, held to [1, 2]. The reference draws that model (`DRAWS` times) and p = (1 + #{Q* >= Q}) / (1 + DRAWS).
This is the parametric bootstrap of the statistic with a variance function estimated from the data (Davison &
Hinkley 1997, Bootstrap Methods and their Application, 4.2; a power-of-size variance as in Carroll & Ruppert
1988, Transformation and Weighting in Regression, 2.7). Used under `rankscale.summary.FEW_DOCUMENTS` effective
documents; benchmarks/few_documents.py measures it (4.3% at pydoc's counts, where documents' noise is either kind).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankscale.bootstrap import seed_sequence

DRAWS = 10_000  # of the reference: p to about 0.002 at 0.05
LENGTH_POWER = (1.0, 2.0)  # gamma: the tokens' noise, whole documents'


@dataclass(frozen=True)
class Documents:
    """What a law's points owe to each resampling unit: its influence on each point's log y [U, M] and its scored
    tokens [U] (the same documents scored by every model of the law)."""

    influence: np.ndarray
    tokens: np.ndarray

    def minus(self, other: Documents) -> Documents:
        """The units' influence on log(y_a / y_b): a ratio law's (the same documents)."""
        return Documents(self.influence - other.influence, self.tokens)


def length_power(shares: np.ndarray, b: np.ndarray) -> float:
    """gamma: the least-squares slope of log |b_u|^2 on log w_u over units with tokens and influence, in
    `LENGTH_POWER`; its lower end where fewer than three units say."""
    size = (b**2).sum(axis=1)
    keep = (shares > 0) & (size > 0)
    if keep.sum() < 3 or np.ptp(np.log(shares[keep])) == 0:
        return LENGTH_POWER[0]
    slope = np.polyfit(np.log(shares[keep]), np.log(size[keep]), 1)[0]
    return float(np.clip(slope, *LENGTH_POWER))


def few_documents_test(L: np.ndarray, y: np.ndarray, documents: Documents) -> tuple[float, float]:
    """(Q, p) of a law's residual basis L [M, m] and points y [M] with the documents' covariance and their null;
    (NaN, NaN) where the units cannot estimate an m-dimensional covariance (no more units with tokens than m)."""
    b = np.asarray(documents.influence, dtype=np.float64) @ L  # [U, m]
    tokens = np.asarray(documents.tokens, dtype=np.float64)
    keep = tokens > 0
    b, shares = b[keep], tokens[keep] / tokens[keep].sum()
    units, m = b.shape
    if units <= m or not np.isfinite(b).all():
        return float("nan"), float("nan")
    z = L.T @ np.asarray(y, dtype=np.float64)
    try:
        q = float(z @ np.linalg.solve(b.T @ b, z))
    except np.linalg.LinAlgError:
        return float("nan"), float("nan")
    reference = _reference(shares, length_power(shares, b), m)
    return q, float((1 + np.sum(reference >= q)) / (1 + DRAWS))


def _reference(shares: np.ndarray, gamma: float, m: int) -> np.ndarray:
    """DRAWS draws of the null Q: e_u ~ N(0, w_u^gamma I_m), z = sum e_u, influence e_u - w_u z (a fixed stream)."""
    rng = np.random.default_rng(seed_sequence(len(shares), "lack of fit", "few documents"))
    scale = shares**gamma
    out = np.empty(DRAWS)
    block = max(1, 2_000_000 // (len(shares) * m))  # bounds memory at ~16 MB a block
    for start in range(0, DRAWS, block):
        rows = min(block, DRAWS - start)
        e = rng.standard_normal((rows, len(shares), m)) * np.sqrt(scale / scale.sum())[None, :, None]
        z = e.sum(axis=1)
        a = e - shares[None, :, None] * z[:, None, :]
        V = np.einsum("rum,ruk->rmk", a, a)
        out[start : start + rows] = np.einsum("rm,rm->r", z, np.linalg.solve(V, z[..., None])[..., 0])
    return out
