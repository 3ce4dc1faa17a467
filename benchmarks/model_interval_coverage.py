"""One model's intervals on nulls built from the run's own documents (docs/science.md, "Uncertainty").

The population is every document one model scored on a dataset (the rank arrays of a finished run: pydoc's 27 and
HumanEval's 164 documents); its metric is the truth. A simulated corpus draws documents from it with replacement:

- pydoc's own documents, 27 and 54 of them (Kish's n_eff about 7 and 14);
- HumanEval's documents at pydoc's lengths: 27 drawn documents, each given one of pydoc's 27 token counts (its sums
  scaled to it), so the rates are HumanEval's and the imbalance pydoc's (n_eff 6.6); the truth is then the mean of
  the documents' own rates (the lengths are independent of them);
- HumanEval's own documents, 28, 52 and 168 of them (n_eff about 22, 41 and 133).

Each corpus gets metrics.csv's intervals from the tables' own code (`rankscale.tables.model_intervals`): CE and
RBP_k (k = 1, 10, 100, 1000) by the cluster-robust t (`rankscale.intervals.cr2_t`), beside the expanded percentile
bootstrap the table used before (B = 1000); the histogram statistics (error entropy, self-alignment, confidence,
the fitted lognormal's entropy and -log P(R = 1)) by BCa over `distribution_replicates` (B = 200, as the workflow)
and their jackknife over documents (`rankscale.summary.compute.leave_one_out`). Reported: coverage with its Monte
Carlo SE, the share of corpora the table marks unreliable (`ci_reliable` False: `unreliable_design`, too few or too
uneven documents) and the coverage of the rest; for histogram statistics how often there is an interval and how often its point sits at
or outside it (must be 0).

    python benchmarks/model_interval_coverage.py --ranks results/default/ranks [--model NAME] [--sims 1000]
        [--histogram-sims 200] [--write]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse

from rankscale.bca import bca
from rankscale.bootstrap import expanded_level, interval, kish_documents, resample_counts
from rankscale.conjecture import distribution_replicates, distribution_statistics
from rankscale.intervals import BIAS_LIMIT, RELIABLE_DESIGN_EFFECT, RELIABLE_DOCUMENTS, unreliable_design
from rankscale.metrics import METRICS
from rankscale.statistics import HITS, LOGPROB_SUM, TOKENS, Totals
from rankscale.summary.compute import leave_one_out
from rankscale.tables.model_intervals import ratio_intervals

LEVEL = 0.95
KS = (1, 10, 100, 1000)
HISTOGRAM = ("ee", "self_alignment", "confidence", "ee_lognormal", "neg_log_p1_lognormal")


@dataclass(frozen=True)
class Population:
    """One model's documents on one dataset: per document its tokens, hits at KS, summed log-prob, rank histogram."""

    name: str
    tokens: np.ndarray  # [U]
    hits: np.ndarray  # [U, len(KS)]
    logprob: np.ndarray  # [U]
    hist: sparse.csc_matrix  # [|V| + 1, U] tokens per rank
    hist_logprob: sparse.csc_matrix  # [|V| + 1, U] their summed log-prob

    @classmethod
    def load(cls, npz: Path) -> Population:
        vocab = int(json.loads(npz.with_suffix(".json").read_text())["vocab_size"])
        with np.load(npz) as data:
            rank, logprob, doc = data["rank"].astype(np.int64), data["logprob"].astype(np.float64), data["doc"]
        _, row = np.unique(doc, return_inverse=True)
        u = int(row.max()) + 1
        shape = (vocab + 1, u)
        return cls(
            f"{npz.parent.name}/{npz.name.split('-')[0]}",
            np.bincount(row, minlength=u).astype(np.float64),
            np.stack([np.bincount(row, weights=(rank <= k).astype(np.float64), minlength=u) for k in KS], axis=1),
            np.bincount(row, weights=logprob, minlength=u),
            sparse.csc_matrix((np.ones(rank.size), (rank, row)), shape=shape),
            sparse.csc_matrix((logprob, (rank, row)), shape=shape),
        )

    def units(self, idx: np.ndarray, scale: np.ndarray) -> Totals:
        """The drawn documents' sums as unit totals (each draw its own unit), scaled per document by `scale`."""
        return Totals({TOKENS.name: self.tokens[idx] * scale, HITS.name: self.hits[idx] * scale[:, None],
                       LOGPROB_SUM.name: self.logprob[idx] * scale})  # fmt: skip

    def truth(self, equal: bool) -> dict[str, np.ndarray]:
        """The population's metrics: token-weighted (its own lengths), or each document's rate weighing alike."""
        w = 1.0 / self.tokens if equal else np.ones_like(self.tokens)
        units = self.units(np.arange(self.tokens.size), w)
        out = {m: np.atleast_1d(METRICS[m].compute(Totals({k: v.sum(axis=0) for k, v in units.items()})))
               for m in ("ce", "rbp")}  # fmt: skip
        counts = np.asarray(self.hist @ w).ravel()
        stats = distribution_statistics(counts, np.asarray(self.hist_logprob @ w).ravel(), [], True).values()
        out.update({name: np.array([stats[name]]) for name in HISTOGRAM})
        return out


@dataclass(frozen=True)
class Cell:
    name: str
    population: Population
    documents: int
    lengths: np.ndarray | None = None  # token counts the drawn documents are given (None: their own)


@dataclass
class Tally:
    """Counts per quantity: simulations, covered, marked unreliable, covered among the rest, and for the
    histogram statistics how many had an interval and how many of those had their point at or outside it."""

    sims: int = 0
    covered: int = 0
    old_covered: int = 0
    unreliable: int = 0
    reliable_covered: int = 0
    with_interval: int = 0
    point_outside: int = 0
    ungated: int = 0  # histogram statistics: BCa intervals without the bias limit


def scale_of(cell: Cell, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if cell.lengths is None:
        return np.ones(idx.size)
    return rng.permutation(cell.lengths)[: idx.size] / cell.population.tokens[idx]


def ratio_sim(cell: Cell, truth: dict[str, np.ndarray], rng: np.random.Generator, tallies: dict[str, Tally],
              replicates: int) -> float:  # fmt: skip
    pop = cell.population
    idx = rng.integers(0, pop.tokens.size, cell.documents)
    units = pop.units(idx, scale_of(cell, idx, rng))
    n_eff = kish_documents(units[TOKENS])
    totals = Totals({k: v.sum(axis=0) for k, v in units.items()})
    counts = rng.multinomial(idx.size, np.full(idx.size, 1.0 / idx.size), size=replicates).astype(np.float64)
    reps = Totals({k: counts @ v for k, v in units.items()})
    for m in ("ce", "rbp"):
        metric = METRICS[m]
        values = np.atleast_1d(metric.compute(totals))
        found = ratio_intervals(metric, units, values, LEVEL)
        old_low, old_high = interval(np.asarray(metric.compute(reps)).reshape(replicates, -1), LEVEL, values,
                                     n_eff=n_eff)  # fmt: skip
        for j, got in enumerate(found):
            key = m if m == "ce" else f"rbp_{KS[j]}"
            t = tallies.setdefault(key, Tally())
            hit = bool(got.low <= truth[m][j] <= got.high)
            t.sims += 1
            t.covered += hit
            t.old_covered += bool(old_low[j] <= truth[m][j] <= old_high[j])
            if unreliable_design(n_eff, idx.size):
                t.unreliable += 1
            else:
                t.reliable_covered += hit
    return n_eff


def histogram_sim(cell: Cell, truth: dict[str, np.ndarray], rng: np.random.Generator, tallies: dict[str, Tally],
                  replicates: int, seed: int) -> None:  # fmt: skip
    pop = cell.population
    idx = rng.integers(0, pop.tokens.size, cell.documents)
    scale = sparse.diags(scale_of(cell, idx, rng))
    by_row = (sparse.csr_matrix(pop.hist[:, idx] @ scale), sparse.csr_matrix(pop.hist_logprob[:, idx] @ scale))
    counts = np.asarray(by_row[0].sum(axis=1)).ravel()
    point = distribution_statistics(counts, np.asarray(by_row[1].sum(axis=1)).ravel(), [], True)
    blocks = (b.astype(np.float64) for b in resample_counts(idx.size, replicates, seed, "coverage"))
    reps = distribution_replicates(*by_row, blocks, point, [], True)
    jack = leave_one_out(np.arange(idx.size), lambda w: distribution_replicates(*by_row, w, point, [], True))
    values = point.values()
    for name in HISTOGRAM:
        t = tallies.setdefault(name, Tally())
        t.sims += 1
        got = bca(reps[name], values[name], jack[name], LEVEL, BIAS_LIMIT)
        plain = bca(reps[name], values[name], jack[name], LEVEL)
        if math.isfinite(plain.low):
            t.ungated += 1
            t.old_covered += bool(plain.low <= truth[name][0] <= plain.high)
        if math.isfinite(got.low):
            t.with_interval += 1
            t.point_outside += not got.low < values[name] < got.high
            t.covered += bool(got.low <= truth[name][0] <= got.high)


def pct(k: int, n: int) -> str:
    if n == 0:
        return "–"
    p = k / n
    return f"{100 * p:.1f} ± {100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f}"


def run_cell(cell: Cell, sims: int, histogram_sims: int, seed: int) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    equal = cell.lengths is not None
    truth = cell.population.truth(equal)
    ratio: dict[str, Tally] = {}
    n_eff = [ratio_sim(cell, truth, rng, ratio, 1000) for _ in range(sims)]
    hist: dict[str, Tally] = {}
    for s in range(histogram_sims):
        histogram_sim(cell, truth, rng, hist, 200, seed * 100_003 + s)
    head = f"| {cell.name} | {cell.population.name} | {cell.documents} | {np.median(n_eff):.1f} |"
    ratio_line = head + " ".join(
        f" {name}: {pct(t.covered, t.sims)} (was {pct(t.old_covered, t.sims)}); unreliable "
        f"{100 * t.unreliable / t.sims:.0f}%, rest {pct(t.reliable_covered, t.sims - t.unreliable)} |"
        for name, t in ratio.items()
    )
    hist_line = head + " ".join(
        f" {name}: interval {pct(t.with_interval, t.sims)}, point at/outside {t.point_outside}, "
        f"covers {pct(t.covered, t.with_interval)} (BCa without the limit: {pct(t.ungated, t.sims)} with one, "
        f"covering {pct(t.old_covered, t.ungated)}) |"
        for name, t in hist.items()
    )
    return ratio_line, hist_line


def cells(ranks: Path, model: str | None) -> list[Cell]:
    def population(dataset: str) -> Population:
        found = sorted(ranks.glob(f"{model or '*'}/{dataset}-*.npz"))
        if not found:
            raise SystemExit(f"{ranks}: no rank array of {dataset} (looked for {model or '*'}/{dataset}-*.npz)")
        return Population.load(found[-1])  # the largest model's, in the ladder's naming order, unless --model

    pydoc, humaneval = population("pydoc"), population("humaneval")
    return [
        Cell("pydoc, n_eff ~7", pydoc, 27),
        Cell("pydoc, n_eff ~14", pydoc, 54),
        Cell("HumanEval at pydoc's lengths", humaneval, 27, pydoc.tokens),
        Cell("HumanEval, n_eff ~22", humaneval, 28),
        Cell("HumanEval, n_eff ~41", humaneval, 52),
        Cell("HumanEval, n_eff ~133", humaneval, 168),
    ]


def commit() -> str:
    from harness import commit as head

    return head()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=Path, required=True, help="a finished run's ranks/ folder")
    parser.add_argument("--model", help="the model whose documents make the populations (default: the last)")
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--histogram-sims", type=int, default=200)
    parser.add_argument("--only", type=int, nargs="*", help="cells to run (0-based), default all")
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--write", action="store_true", help="replace this section of benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    started = time.time()
    lines = ([], [])
    for i, cell in enumerate(cells(args.ranks, args.model)):
        if args.only and i not in args.only:
            continue
        for out, line in zip(lines, run_cell(cell, args.sims, args.histogram_sims, args.seed + i), strict=True):
            out.append(line)
            print(line, flush=True)
    text = "\n".join([
        "## One model's intervals on the run's own documents",
        "",
        f"{args.sims} corpora a cell for CE and RBP_k ({args.histogram_sims} for the histogram statistics, each a "
        f"lognormal fit and {200} BCa replicates), {LEVEL:.0%} intervals, coverage in % ± its Monte Carlo SE; "
        f"unreliable (`ci_reliable` False): n_eff < {RELIABLE_DOCUMENTS:g} or n / n_eff > "
        f"{RELIABLE_DESIGN_EFFECT:g}; was: the expanded percentile "
        f"(Hesterberg, {expanded_level(LEVEL, 7.0):.1%} percentiles at n_eff 7). Populations: "
        f"{args.model or 'the last model'}'s documents in {args.ranks.name}/ of a finished default run. "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node() or 'this machine'} "
        f"({os.cpu_count()} CPUs, shared), commit {commit()}, {time.time() - started:.0f} s.",
        "",
        "| design | documents of | drawn | median n_eff | ratio metrics |",
        "| --- | --- | --- | --- | --- |",
        *lines[0],
        "",
        "| design | documents of | drawn | median n_eff | histogram statistics (BCa) |",
        "| --- | --- | --- | --- | --- |",
        *lines[1],
        "",
        f"`python benchmarks/model_interval_coverage.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
    ])
    print(text)
    if args.write:
        from harness import write_section

        write_section(Path(__file__).with_name("RESULTS.md"), "model_interval_coverage", text)


if __name__ == "__main__":
    main()
