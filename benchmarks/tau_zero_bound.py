"""How low can an interval's coverage at tau = 0 go while it keeps 95% at every tau > 0? A linear program over
interval rules, on the size-level design of benchmarks/size_level_coverage.py (docs/science.md, "Uncertainty").

A quantity with variance a + b tau^2 (a: documents, b: the sizes' deviations) is estimated from six sizes (the
exponent) or predicted from the five or four smallest (a held-out size's value, extrapolation.csv). Whatever a
rule does, it sees tau^2 only through the residuals z = L^T y (m = 4, 3 or 2 dimensions); whitened by the
documents' covariance their squared coordinates w_i are independent (1 + beta_i tau^2) chi^2_1. A rule is a half
width h(w), from z sqrt(a) (documents alone) up. The program chooses, for each cell of a product grid over the
w_i, a distribution over a ladder of half widths (a randomised rule: the program is linear in it) that minimises
the coverage at tau = 0 subject to coverage >= 95% at `--taus` planted tau from 0.05 to 10 times sqrt(a / b)
(where the sizes double the variance). Coverage of each (cell, width) at each tau is counted from simulated
residuals and errors drawn together (the documents correlate the error with the residuals).

The program's optimum is what the best rule on the grid's cells does: a rule that reaches it exists, and it is an
upper bound on the best any rule can do (a finer grid can only lower it: run it at growing --bins until it
settles). A simple rule (the tables' generalized pivot, or a quantile of it) does no better than the settled
optimum on the same design.

The score rule (`--score C K`) is one such rule in closed form: it reads tau^2 from its score and is what the
review's figure (97.9% at tau = 0) needs; benchmarks/RESULTS.md, "The frontier at tau = 0", has the numbers.

    python benchmarks/tau_zero_bound.py [--run-dir DIR] [--draws 400000] [--bins 10] [--widths 60] [--taus 24]
        [--floor 0.95] [--designs exponent extrapolation extrapolation-4-5 extrapolation-4-6] [--score C K]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, sparse, special

from rankscale.laws.random_effects import ols_map

LEVEL = 0.95


@dataclass(frozen=True)
class Design:
    """A quantity d = c^T (u + e) of a law's six points, the residual basis of its fit, and its variances."""

    name: str
    c: np.ndarray  # [6] the quantity's error as a linear function of the six points' errors
    L: np.ndarray  # [6, m] the fit's residual basis (zero rows for points the fit does not use)
    a: float  # variance from documents
    b: float  # variance per unit of tau^2


def designs(V: np.ndarray, x: np.ndarray) -> list[Design]:
    """The exponent of the six-point fit, and a held-out size's value predicted from the smaller ones (the largest
    from five; the two largest from four, as extrapolation.csv does with at least four sizes)."""
    out = []
    for name, n, held in (("exponent", 6, None), ("extrapolation", 5, 5), ("extrapolation-4-5", 4, 4),
                          ("extrapolation-4-6", 4, 5)):  # fmt: skip
        X = np.stack([np.ones(n), x[:n]], axis=1)
        H = ols_map(X)  # [2, n]
        c = np.zeros(6)
        if held is None:
            c[:n] = H[1]
        else:
            c[:n] = -(H.T @ np.array([1.0, x[held]]))
            c[held] = 1.0
        q, _ = np.linalg.qr(X, mode="complete")
        L = np.zeros((6, n - 2))
        L[:n] = q[:, 2:]
        out.append(Design(name, c, L, float(c @ V @ c), float(c @ c)))
    return out


def score_rule(design: Design, V: np.ndarray, taus: np.ndarray, draws: int, inflation: float, offset: float,
               seed: int) -> np.ndarray:  # fmt: skip
    """Coverage at each tau of -/+ z sqrt(a + b c max(0, S + k sd0)): S = sum beta_i (w_i - 1) / sum beta_i^2, the
    score estimate of tau^2 (it weights the residual directions by how much the sizes move them, where Q(0) weights
    them alike), sd0 its SD at tau = 0, c the inflation and k the offset."""
    rng = np.random.default_rng(seed)
    whiten, beta = _whitened(design, V)
    chol = np.linalg.cholesky(V)
    z = float(special.ndtri(0.5 + LEVEL / 2))
    sd0 = np.sqrt(2.0 * (beta**2).sum()) / (beta @ beta)
    out = []
    for tau in taus:
        e = rng.standard_normal((draws, 6)) @ chol.T + tau * rng.standard_normal((draws, 6))
        score = ((e @ whiten.T) ** 2 - 1.0) @ beta / (beta @ beta)
        half = z * np.sqrt(design.a + design.b * inflation * np.maximum(0.0, score + offset * sd0))
        out.append(float(np.mean(np.abs(e @ design.c) <= half)))
    return np.array(out)


@dataclass(frozen=True)
class Bound:
    design: str
    tau0: float  # the optimum's coverage at tau = 0, on the draws it was chosen on
    checked_tau0: float  # the same rule on independent draws
    checked_min: float  # its lowest coverage over tau > 0 on those draws
    cells: int
    widths: int


def _whitened(design: Design, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The map from the six points' errors to whitened residual coordinates, and their betas."""
    A, B = design.L.T @ V @ design.L, design.L.T @ design.L
    values, vectors = np.linalg.eigh(A)
    root = (vectors / np.sqrt(values)) @ vectors.T
    beta, basis = np.linalg.eigh(root @ B @ root)
    return (basis.T @ root @ design.L.T), np.clip(beta, 0.0, None)


def bound(design: Design, V: np.ndarray, taus: np.ndarray, draws: int, bins: int, widths: int, floor: float,
          seed: int) -> Bound:  # fmt: skip
    """The linear program's optimum on `bins` cells per residual coordinate and `widths` half widths, and its rule's
    coverage on independent draws (the program fits the draws' noise: the fresh draws say what it holds)."""
    rng = np.random.default_rng(seed)
    whiten, beta = _whitened(design, V)
    m = len(beta)
    # cell edges per coordinate: chi^2_1 quantiles, then log steps up to the largest tau's spread
    inner = special.chdtri(1, 1.0 - np.linspace(0, 1, bins - 2, endpoint=False)[1:])[::-1]
    top = (1.0 + beta.max() * taus.max() ** 2) * 10.0
    edges = np.concatenate([inner, np.geomspace(inner[-1] * 3, top, 3)])
    z = float(special.ndtri(0.5 + LEVEL / 2))
    # half widths from documents alone (s = 0) up to the largest tau's, finely spaced where tau = 0 is decided
    s = np.concatenate([[0.0], np.geomspace(1e-3 * design.a / design.b, 4.0 * taus.max() ** 2, widths - 1)])
    widths = z * np.sqrt(design.a + design.b * s)
    n_cells = (len(edges) + 1) ** m
    cover = _coverage(design, V, whiten, taus, edges, widths, draws, rng)
    n_var = n_cells * len(widths)
    objective = cover[0].ravel()
    upper = -cover[1:].reshape(len(taus) - 1, n_var)
    rows = np.repeat(np.arange(n_cells), len(widths))
    equality = sparse.csr_matrix((np.ones(n_var), (rows, np.arange(n_var))), shape=(n_cells, n_var))
    result = optimize.linprog(objective, A_ub=upper, b_ub=-np.full(len(taus) - 1, floor), A_eq=equality,
                              b_eq=np.ones(n_cells), bounds=(0, 1), method="highs")  # fmt: skip
    if result.status != 0:
        return Bound(design.name, float("nan"), float("nan"), float("nan"), n_cells, len(widths))
    rule = result.x.reshape(n_cells, len(widths))
    fresh = _coverage(design, V, whiten, taus, edges, widths, draws, np.random.default_rng(seed + 1))
    checked = (fresh * rule[None]).sum(axis=(1, 2))  # the same rule on independent draws: no overfitted noise
    return Bound(design.name, float(result.fun), float(checked[0]), float(checked[1:].min()), n_cells, len(widths))


def _coverage(design: Design, V: np.ndarray, whiten: np.ndarray, taus: np.ndarray, edges: np.ndarray,
              widths: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:  # fmt: skip
    """[tau, cell, width]: the share of draws in each cell whose error the width covers."""
    chol = np.linalg.cholesky(V)
    m = whiten.shape[0]
    n_cells = (len(edges) + 1) ** m
    cover = np.zeros((len(taus), n_cells, len(widths)))
    for t, tau in enumerate(taus):
        e = rng.standard_normal((draws, 6)) @ chol.T + tau * rng.standard_normal((draws, 6))
        w = (e @ whiten.T) ** 2
        d = np.abs(e @ design.c)
        cell = np.zeros(draws, dtype=np.int64)
        for i in range(m):
            cell = cell * (len(edges) + 1) + np.searchsorted(edges, w[:, i])
        for j, h in enumerate(widths):
            cover[t, :, j] = np.bincount(cell, weights=(d <= h), minlength=n_cells) / draws
    return cover


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path, help="V from this default run's HumanEval -log RBP_1 (else synthetic)")
    parser.add_argument("--draws", type=int, default=400_000)
    parser.add_argument("--bins", type=int, default=10)
    parser.add_argument("--widths", type=int, default=60)
    parser.add_argument("--taus", type=int, default=24, help="planted tau > 0 on a log grid from 0.05 to 10 units")
    parser.add_argument("--floor", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--designs", nargs="+", default=["exponent", "extrapolation"],
                        help="exponent, extrapolation (5 sizes -> the 6th), extrapolation-4-5, extrapolation-4-6")
    parser.add_argument("--score", nargs=2, type=float, metavar=("C", "K"),
                        help="instead of the bound, the coverage of the score rule with inflation C and offset K")
    args = parser.parse_args()
    import size_level_coverage as slc  # noqa: PLC0415 (a sibling benchmark)

    V = slc.run_law(args.run_dir).V if args.run_dir else slc.synthetic_covariance()
    x = np.log(slc.SIZES)
    for design in (d for d in designs(V, x) if d.name in args.designs):
        unit = np.sqrt(design.a / design.b)
        taus = np.concatenate([[0.0], unit * np.geomspace(0.05, 10.0, args.taus)])
        if args.score:
            cover = score_rule(design, V, taus, args.draws, *args.score, args.seed)
            print(f"{design.name}: score rule c = {args.score[0]:g}, k = {args.score[1]:g}: {cover[0]:.2%} at tau = 0, "
                  f">= {cover[1:].min():.2%} at tau in [{taus[1]:.3g}, {taus[-1]:.3g}]", flush=True)
            continue
        result = bound(design, V, taus, args.draws, args.bins, args.widths, args.floor, args.seed)
        print(f"{design.name}: a {design.a:.3g}, b {design.b:.3g}, sqrt(a/b) {unit:.4g}; best coverage at tau = 0 "
              f"with >= {args.floor:.0%} at tau in [{taus[1]:.3g}, {taus[-1]:.3g}]: {result.tau0:.2%}; "
              f"on fresh draws {result.checked_tau0:.2%} at 0, >= {result.checked_min:.2%} elsewhere "
              f"({result.cells} cells x {result.widths} widths)", flush=True)


if __name__ == "__main__":
    main()
