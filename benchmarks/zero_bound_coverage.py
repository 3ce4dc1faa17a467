"""Coverage of a small share's interval where zeros happen (`rankscale.intervals.boundary_bound`), on HumanEval's
real documents: a planted rate of runs with the documents' own window counts, hits clustered within documents.

The population is a finished run's HumanEval documents: their windows of N consecutive tokens (`doc_run_windows`
of any final model's .boot.npz: every model scores the same windows). Each simulation draws the documents with
replacement (as many as the run has), gives each document its own rate p_u ~ Beta with mean p (the planted rate)
and intra-document correlation rho (rho = 0: every window independent, Binomial; rho = 1: a document is all hits
or none), its hits ~ Binomial(windows_u, p_u) (so beta-binomial), and computes the interval with the tables' own
code (`ratio_of_sums(hits, windows, 0.95, PROBABILITY)`: CR2, or the one-sided bound where no document has a hit).
It records how often the interval holds p (overall and split by whether 0 was observed), how often p lies above
its upper end (a one-sided 97.5% bound misses at most 2.5% of the time, zeros and non-zeros together), the median
upper bound at a zero, how often 0 is observed and p lies above that bound (as a share of all draws, the part of
the 2.5% the zeros spend), and the same for two other bounds at 0: Clopper-Pearson with every window an
independent trial (n = all windows; what ignoring documents gives) and with the U documents as trials; and,
for every draw, Korn & Graubard's (1998) Clopper-Pearson interval on CR2's effective sample size (not adopted:
a candidate for the few-hit shares where CR2 itself falls short).

    python benchmarks/zero_bound_coverage.py --summary-dir DIR/results/summary [--sims 4000] [--n 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # this checkout's package, not an installed one

from rankscale.intervals import PROBABILITY, cr2_t, ratio_of_sums  # noqa: E402

LEVEL = 0.95
TAIL = (1.0 - LEVEL) / 2.0
RATES = (1e-4, 1e-3, 0.02, 0.03)
RHOS = (0.0, 0.01, 0.1, 1.0)


def windows_of(summary_dir: Path, dataset: str, n: int) -> np.ndarray:
    """The dataset's documents' windows of `n` tokens, from the first final model's document sums."""
    for path in sorted(summary_dir.glob(f"*/{dataset}-*.json")):
        meta = json.loads(path.read_text())
        if meta["info"].get("final") and n in meta["emergence_N"]:
            with np.load(path.with_name(path.name.removesuffix(".json") + ".boot.npz")) as boot:
                return boot["doc_run_windows"][:, meta["emergence_N"].index(n)].astype(np.float64)
    raise SystemExit(f"{summary_dir}: no final model scored {dataset} with runs of {n}")


def document_rates(rng: np.random.Generator, p: float, rho: float, size: int) -> np.ndarray:
    """Each document's own rate: Beta with mean p and intra-document correlation rho (a + b = 1 / rho - 1)."""
    if rho == 0.0:
        return np.full(size, p)
    if rho == 1.0:
        return (rng.random(size) < p).astype(np.float64)
    total = 1.0 / rho - 1.0
    return rng.beta(p * total, (1.0 - p) * total, size)


def korn_graubard(hits: np.ndarray, windows: np.ndarray) -> tuple[float, float]:
    """Korn & Graubard's (1998) interval, for comparison: Clopper-Pearson on the effective sample size
    n* = p(1 - p) / V (V: CR2's variance; at most the windows), shrunk by (z / t_df)^2 for CR2's degrees of
    freedom, with n* p successes; at 0, the tables' bound (documents as trials)."""
    total = windows.sum()
    p = hits.sum() / total
    found = ratio_of_sums(hits, windows, LEVEL, PROBABILITY)[0]
    keep = windows > 0
    rates = hits[keep] / windows[keep]
    if p == 0.0 or p == 1.0 or np.all(rates == p):
        return found.low, found.high
    low, high, df = cr2_t(rates, windows[keep] / total, np.array(p), LEVEL)
    se = float(high - p) / special.stdtrit(df, 1 - TAIL)
    n_star = min(p * (1 - p) / se**2, total) * (special.ndtri(1 - TAIL) / special.stdtrit(df, 1 - TAIL)) ** 2
    x = n_star * p
    return float(stats.beta.ppf(TAIL, x, n_star - x + 1)), float(stats.beta.ppf(1 - TAIL, x + 1, n_star - x))


def cell(windows: np.ndarray, p: float, rho: float, sims: int, seed: int) -> dict[str, float]:
    """One planted rate and correlation: coverage overall and at zeros, the upper misses, the bounds at zeros."""
    rng = np.random.default_rng(seed)
    covered = above = zeros = zero_covered = kg_covered = kg_above = 0
    bounds, independent, documents = [], [], []
    for _ in range(sims):
        w = windows[rng.integers(0, windows.size, windows.size)]
        hits = rng.binomial(w.astype(np.int64), document_rates(rng, p, rho, w.size)).astype(np.float64)
        found = ratio_of_sums(hits, w, LEVEL, PROBABILITY)[0]
        covered += found.low <= p <= found.high
        above += p > found.high
        kg = korn_graubard(hits, w)
        kg_covered += kg[0] <= p <= kg[1]
        kg_above += p > kg[1]
        if hits.sum() == 0:
            zeros += 1
            zero_covered += p <= found.high
            bounds.append(found.high)
            independent.append(stats.beta.ppf(1 - TAIL, 1, w.sum()))
            documents.append(stats.beta.ppf(1 - TAIL, 1, np.count_nonzero(w)))
    # misses at 0 as a share of all draws: what a one-sided 97.5% bound may spend (at most 2.5%, zeros and not)
    out = {"p": p, "rho": rho, "sims": sims, "zero_share": zeros / sims, "coverage": covered / sims,
           "above": above / sims, "kg_coverage": kg_covered / sims, "kg_above": kg_above / sims,
           "zero_miss": (zeros - zero_covered) / sims, "median_bound": float(np.median(bounds)) if bounds else np.nan,
           "independent_zero_miss": float(np.sum(p > np.array(independent))) / sims,
           "documents_zero_miss": float(np.sum(p > np.array(documents))) / sims}  # fmt: skip
    return out


def percent(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{100 * x:.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--summary-dir", type=Path, required=True)
    parser.add_argument("--dataset", default="humaneval")
    parser.add_argument("--n", type=int, default=2, help="windows of N tokens (emergence's N)")
    parser.add_argument("--sims", type=int, default=4000)
    args = parser.parse_args()
    windows = windows_of(args.summary_dir, args.dataset, args.n)
    kish = windows.sum() ** 2 / (windows**2).sum()
    print(f"{args.dataset}: {np.count_nonzero(windows)} documents, {int(windows.sum()):,} windows of {args.n}, "
          f"Kish n_eff {kish:.1f}; {args.sims} simulations a cell (MC SE of a 95% coverage "
          f"{100 * np.sqrt(0.95 * 0.05 / args.sims):.2f} points)\n")  # fmt: skip
    print("| planted p | rho | P(0 observed) | coverage | p above the upper end | median bound at 0 | missed at 0 "
          "| missed at 0, windows as trials | missed at 0, U documents as trials | Korn-Graubard: coverage | p above |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    start = time.time()
    for i, p in enumerate(RATES):
        for j, rho in enumerate(RHOS):
            r = cell(windows, p, rho, args.sims, seed=100 * i + j)
            print(f"| {p:g} | {rho:g} | {percent(r['zero_share'])} | {percent(r['coverage'])} | "
                  f"{percent(r['above'])} | {r['median_bound']:.3g} | {percent(r['zero_miss'])} | "
                  f"{percent(r['independent_zero_miss'])} | {percent(r['documents_zero_miss'])} | "
                  f"{percent(r['kg_coverage'])} | {percent(r['kg_above'])} |",
                  flush=True)  # fmt: skip
    print(f"\n({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
