"""Real-document nulls: the lack-of-fit test's level and the law and contrast intervals' coverage on the run's
own documents, with an exact law imposed (docs/science.md, "Few documents").

A finished run's per-document sums (`doc_n`, `doc_sum_logprob`, `doc_hits` in each summary's .boot.npz) for the
ladder's final sizes on pydoc and HumanEval are the population. Each model's sums are scaled so the population's
CE and RBP_1 (token-weighted over every document) lie exactly on a power law in S (the law fitted to them), so
the null holds exactly for the population and every departure a sample shows comes from drawing documents. Each
simulation draws documents with replacement and runs the tables' own code on them: each unit's influence on log y
in closed form (CE: s_u / S - n_u / N; -log RBP_1: -(h_u / H - n_u / N) / -log RBP_1), the lack-of-fit test from
the documents (`rankscale.laws.few_documents`: the residual sum of squares against the sign-flip null, its floor of
20 effective documents lifted, and the tables' rule, which calls a sample under that floor not testable) beside
Hotelling's T^2 on Kish's n_eff - 1 over the studentized Q (what the tables used above 30 effective documents), and, with `--replicates B`, the
document bootstrap and the law's exponent interval and the CE - (-log RBP_1) exponent contrast through `LawNoise`
and `exponent_contrast`, checked against the imposed exponents.

Designs (`--cells`): `pydoc-7` (27 of pydoc's documents, n_eff about 6.6), `pydoc-14` (54), `humaneval-pydoc`
(27 documents each built from HumanEval's documents, drawn until they reach pydoc's 27 lengths: n_eff as pydoc's),
`humaneval-22`, `-41`, `-133` (HumanEval's documents, as many as give that n_eff on average).

    python benchmarks/real_document_nulls.py --summary-dir results/summary [--sims 1000] [--replicates 400]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankscale.bootstrap import interval, kish_documents
from rankscale.laws import FORMS, Points
from rankscale.laws.few_documents import MIN_DOCUMENTS, Documents, few_documents_test
from rankscale.laws.random_effects import hotelling_p, residual_basis
from rankscale.layout import Layout
from rankscale.tables.lawkit import exponent_contrast
from rankscale.tables.noise import LawNoise, Noise

LEVEL = 0.95
DRAWS = 2000  # sign patterns per test (the tables take 4000)
CELLS = ("pydoc-7", "pydoc-14", "humaneval-pydoc", "humaneval-22", "humaneval-41", "humaneval-133")


@dataclass(frozen=True)
class Pool:
    """A dataset's documents scored by the ladder's final sizes, the exact law imposed: tokens [U], CE sums and
    hits at k = 1 [U, M], the sizes S [M] and the imposed exponents of CE and -log RBP_1."""

    tokens: np.ndarray
    ce_sums: np.ndarray
    hits: np.ndarray
    S: np.ndarray
    alpha_ce: float
    alpha_rbp: float

    @classmethod
    def load(cls, summary_dir: Path, dataset: str) -> Pool:
        tokens, ce, hits = None, [], []
        S, boots = final_summaries(summary_dir, dataset)
        for path in boots:
            with np.load(path) as boot:
                n = boot["doc_n"].astype(np.float64)
                if tokens is not None and not np.array_equal(tokens, n):
                    raise SystemExit(f"{path}: its documents differ from the other sizes'")
                tokens = n
                ce.append(-boot["doc_sum_logprob"].astype(np.float64))
                hits.append(boot["doc_hits"][:, 0].astype(np.float64))  # k = 1, the first of the grid
        assert tokens is not None
        ce_sums, hit_sums = np.stack(ce, axis=1), np.stack(hits, axis=1)
        ce_sums, alpha_ce = _imposed(ce_sums, tokens, S, lambda r: r, lambda v: v)
        hit_sums, alpha_rbp = _imposed(hit_sums, tokens, S, lambda r: -np.log(r), lambda v: np.exp(-v))
        return cls(tokens, ce_sums, hit_sums, S, alpha_ce, alpha_rbp)


def final_summaries(summary_dir: Path, dataset: str) -> tuple[np.ndarray, list[Path]]:
    """The sizes S of the final models that scored `dataset`, ascending, and their summaries' .boot.npz files."""
    files = sorted(p for p in summary_dir.glob(f"*/{dataset}-*.json")
                   if json.loads(p.read_text())["info"].get("final"))  # fmt: skip
    if len(files) < 3:
        raise SystemExit(f"{summary_dir}: fewer than three final models scored {dataset}")
    metas = [json.loads(p.read_text()) for p in files]
    order = np.argsort([m["S"] for m in metas])
    boots = [files[i].with_name(files[i].name.removesuffix(".json") + ".boot.npz") for i in order]
    return np.array([metas[i]["S"] for i in order], dtype=np.float64), boots


def _imposed(sums, tokens, S, to_law, from_law) -> tuple[np.ndarray, float]:  # noqa: ANN001
    """Each model's sums scaled so the population's ratio lies on the power law fitted to it; the exponent."""
    ratio = sums.sum(axis=0) / tokens.sum()
    X = np.stack([np.ones_like(S), np.log(S)], axis=1)
    beta = np.linalg.lstsq(X, np.log(to_law(ratio)), rcond=None)[0]
    target = from_law(np.exp(X @ beta))
    return sums * (target / ratio)[None, :], float(-beta[1])


@dataclass
class Cell:
    """Counts over a cell's simulations."""

    name: str
    sims: int = 0
    n_eff: float = 0.0
    tested: dict[str, int] | None = None
    rejected: dict[str, int] | None = None
    hotelling: dict[str, int] | None = None
    covered: dict[str, int] | None = None
    testable: dict[str, int] | None = None
    rejected_testable: dict[str, int] | None = None
    intervals: int = 0

    def __post_init__(self) -> None:
        self.tested, self.rejected, self.hotelling = {"ce": 0, "rbp": 0}, {"ce": 0, "rbp": 0}, {"ce": 0, "rbp": 0}
        self.testable, self.rejected_testable = {"ce": 0, "rbp": 0}, {"ce": 0, "rbp": 0}
        self.covered = {"ce": 0, "rbp": 0, "contrast": 0}


def draw(cell: str, pools: dict[str, Pool], rng: np.random.Generator) -> tuple[Pool, np.ndarray]:
    """A sample's units as a matrix [units, population documents] of how often each unit holds each document."""
    dataset, design = cell.split("-", 1)
    pool = pools[dataset]
    U = len(pool.tokens)
    if design == "pydoc":  # HumanEval's documents joined into pydoc's lengths
        lengths = pools["pydoc"].tokens
        rows = np.zeros((len(lengths), U))
        for j, length in enumerate(lengths):
            total = 0.0
            while total < length:
                d = int(rng.integers(U))
                rows[j, d] += 1
                total += pool.tokens[d]
        return pool, rows
    target = float(design)
    ratio = pool.tokens.mean() ** 2 / (pool.tokens**2).mean()  # n_eff per document drawn
    count = 27 if (dataset, design) == ("pydoc", "7") else 54 if dataset == "pydoc" else round(target / ratio)
    picks = rng.integers(0, U, count)
    rows = np.zeros((count, U))
    rows[np.arange(count), picks] = 1.0
    return pool, rows


def simulate(cell: str, pools: dict[str, Pool], sims: int, replicates: int, seed: int) -> Cell:
    rng = np.random.default_rng([seed, CELLS.index(cell) if cell in CELLS else 99])
    form = FORMS["power_law"]
    out = Cell(cell)
    for _ in range(sims):
        pool, rows = draw(cell, pools, rng)
        n, ce, hits = rows @ pool.tokens, rows @ pool.ce_sums, rows @ pool.hits
        N, C, H = n.sum(), ce.sum(axis=0), hits.sum(axis=0)
        if np.any(H <= 0) or np.any(H >= N):
            continue
        out.sims += 1
        out.n_eff += kish_documents(n)
        y = {"ce": C / N, "rbp": -np.log(H / N)}
        influence = {"ce": ce / C[None, :] - n[:, None] / N,
                     "rbp": -(hits / H[None, :] - n[:, None] / N) / y["rbp"][None, :]}  # fmt: skip
        L = residual_basis(np.stack([np.ones_like(pool.S), np.log(pool.S)], axis=1))
        n_eff = kish_documents(n)
        for key in ("ce", "rbp"):
            a, z = influence[key], L.T @ np.log(y[key])
            _, p = few_documents_test(L, np.log(y[key]), Documents(a, n), draws=DRAWS, min_documents=0.0)
            b = a @ L
            studentized = float(z @ np.linalg.solve(b.T @ b, z))  # Hotelling's Q over the documents' V
            out.tested[key] += 1
            out.rejected[key] += p < 0.05
            out.testable[key] += n_eff >= MIN_DOCUMENTS
            out.rejected_testable[key] += (p < 0.05) and n_eff >= MIN_DOCUMENTS
            out.hotelling[key] += hotelling_p(studentized, L.shape[1], n_eff - 1.0) < 0.05
        if replicates:
            _intervals(out, form, pool, rows, n, ce, hits, y, influence, replicates, rng)
    return out


def _intervals(out: Cell, form, pool: Pool, rows, n, ce, hits, y, influence, replicates: int,  # noqa: ANN001
               rng: np.random.Generator) -> None:  # fmt: skip
    """The document bootstrap of the sample, the law's exponent interval and the contrast's, through the tables'
    code (`LawNoise`, `exponent_contrast`); whether each holds its imposed value."""
    counts = rng.multinomial(len(n), np.full(len(n), 1.0 / len(n)), replicates).astype(np.float64)
    Nb = counts @ n
    reps = {"ce": (counts @ ce) / Nb[:, None], "rbp": -np.log((counts @ hits) / Nb[:, None])}
    points = Points.of(pool.S)
    n_eff = kish_documents(n)
    noise = Noise([str(s) for s in pool.S], None, 0, n_eff - 1.0)
    laws, documents = {}, {}
    for key, truth in (("ce", pool.alpha_ce), ("rbp", pool.alpha_rbp)):
        law = form.fit(points, y[key])
        laws[key] = law
        documents[key] = Documents(influence[key], n)
        honest = LawNoise.of(form, law, points, y[key], reps[key], noise.with_documents(documents[key]),
                             ("real", out.name, key))  # fmt: skip
        refitted = honest.refit(form, law, points, 0)["alpha"]
        low, high = interval(refitted, LEVEL, law.alpha)
        out.covered[key] += bool(low <= truth <= high)
    contrast = exponent_contrast(form, points, (laws["ce"], laws["rbp"]), (y["ce"], y["rbp"]),
                                 (reps["ce"], reps["rbp"]), noise, ("real", out.name, "contrast"), 0,
                                 (documents["ce"], documents["rbp"]))  # fmt: skip
    low, high = interval(contrast.replicates, LEVEL, contrast.point)
    out.covered["contrast"] += bool(low <= pool.alpha_ce - pool.alpha_rbp <= high)
    out.intervals += 1


def share(count: int, total: int) -> str:
    if total == 0:
        return "n/a"
    p = count / total
    return f"{100 * p:.1f} ± {100 * math.sqrt(p * (1 - p) / total):.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--summary-dir", type=Path, default=Path(Layout.SUMMARY).parents[1])  # <model>/<summary> below it
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=0, help="bootstrap replicates for intervals (0: none)")
    parser.add_argument("--cells", nargs="+", default=list(CELLS), choices=CELLS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pools = {d: Pool.load(args.summary_dir, d) for d in ("pydoc", "humaneval")}
    for name, pool in pools.items():
        print(f"{name}: {len(pool.tokens)} documents, n_eff {kish_documents(pool.tokens):.1f}, "
              f"alpha CE {pool.alpha_ce:.4f}, -log RBP_1 {pool.alpha_rbp:.4f}")  # fmt: skip
    print("| cell | sims | n_eff | sign flip CE | sign flip −log RBP_1 | Hotelling CE | Hotelling −log RBP_1 | testable "
          "(n_eff ≥ 20) | tables' test CE: all / testable | tables' test −log RBP_1: all / testable | exponent CE "
          "covers | exponent −log RBP_1 | contrast | s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.cells:
        start = time.perf_counter()
        c = simulate(name, pools, args.sims, args.replicates, args.seed)
        cover = [share(c.covered[k], c.intervals) for k in ("ce", "rbp", "contrast")]
        print(f"| {name} | {c.sims} | {c.n_eff / max(c.sims, 1):.1f} | {share(c.rejected['ce'], c.tested['ce'])} | "
              f"{share(c.rejected['rbp'], c.tested['rbp'])} | {share(c.hotelling['ce'], c.tested['ce'])} | "
              f"{share(c.hotelling['rbp'], c.tested['rbp'])} | {100 * c.testable['ce'] / max(c.sims, 1):.1f}% | "
              f"{share(c.rejected_testable['ce'], c.sims)} / {share(c.rejected_testable['ce'], c.testable['ce'])} | "
              f"{share(c.rejected_testable['rbp'], c.sims)} / {share(c.rejected_testable['rbp'], c.testable['rbp'])} | "
              f"{' | '.join(cover)} | "
              f"{time.perf_counter() - start:.0f} |", flush=True)  # fmt: skip

if __name__ == "__main__":
    main()
