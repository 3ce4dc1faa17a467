"""Few heavy documents: the cluster-robust t against a studentized bootstrap over documents, on the run's own
documents (docs/science.md, "Uncertainty").

pydoc's 27 documents are worth 6.6 (Kish): one of them holds about a third of the tokens. A model's CE and RBP_1
are ratios of document sums, and `rankscale.intervals.cr2_t` (CR2 variance, t on Bell and McCaffrey's degrees of
freedom, the small-sample rule Imbens & Kolesar 2016 recommend) is what metrics.csv reports. This benchmark asks
whether a small-sample method does better on these documents:

- `cr2`: the tables' interval (`rankscale.intervals.ratio_of_sums`);
- `boot-t`: the studentized bootstrap over documents (Hall 1992; Davison & Hinkley 1997, sec. 5.2): B resamples of
  the sample's documents, each studentized by its own CR2 standard error, t*_b = (theta*_b - theta) / se*_b; the
  interval theta - t*_(1 -/+ level/2) se (equal-tailed);
- `boot-t sym`: the symmetric one, theta -/+ |t*|_(level) se.

The population is every document one final model scored (the summaries' per-document sums, `doc_n`,
`doc_sum_logprob`, `doc_hits` of a finished run); its token-weighted CE and RBP_1 are the truths. A simulated corpus
draws documents with replacement, each draw its own unit: pydoc 27 (n_eff about 7), HumanEval 28 (n_eff about 22,
the smallest HumanEval design metrics.csv marks reliable) and 164 (n_eff about 130). Besides coverage: coverage
among the corpora that lack the population's longest document (pydoc's holds 7,153 of its tokens), and the median
Bell-McCaffrey df.

    python benchmarks/heavy_documents.py --summary-dir results/summary [--sims 1000] [--replicates 999]
        [--datasets pydoc humaneval] [--write]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankscale.bootstrap import kish_documents
from rankscale.intervals import ratio_of_sums

LEVEL = 0.95
METHODS = ("cr2", "boot-t", "boot-t sym")
DESIGNS = {"pydoc": (27,), "humaneval": (28, 164)}  # documents drawn a corpus


@dataclass(frozen=True)
class Population:
    """One final model's documents on one dataset: tokens [U] and the numerators of CE and RBP_1 [U, 2]."""

    model: str
    S: int
    tokens: np.ndarray
    sums: np.ndarray

    @property
    def truth(self) -> np.ndarray:
        return self.sums.sum(axis=0) / self.tokens.sum()


def populations(summary_dir: Path, dataset: str) -> list[Population]:
    """Every final model's per-document sums on `dataset`, smallest first."""
    out = []
    for meta_path in sorted(summary_dir.glob(f"*/{dataset}-*.json")):
        meta = json.loads(meta_path.read_text())
        if not meta["info"].get("final"):
            continue
        with np.load(meta_path.with_name(meta_path.name.removesuffix(".json") + ".boot.npz")) as boot:
            n = boot["doc_n"].astype(np.float64)
            sums = np.stack([-boot["doc_sum_logprob"].astype(np.float64),
                             boot["doc_hits"][:, 0].astype(np.float64)], axis=1)  # fmt: skip # k = 1: the grid's first
        out.append(Population(meta_path.parent.name, int(meta["S"]), n, sums))
    if not out:
        raise SystemExit(f"{summary_dir}: no final model's summary of {dataset}")
    return sorted(out, key=lambda p: p.S)


def cr2_se(n: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ratio and its CR2 standard error in each resample ([B, U] copies of each unit): every copy its own unit
    of weight n_u / N_b, so the variance is sum_u c_bu w_bu^2 / (1 - w_bu) (r_u - theta_b)^2 (`cr2_t`'s)."""
    N = counts @ n  # [B]
    theta = (counts @ sums) / N[:, None]  # [B, K]
    w = n[None, :] / N[:, None]  # [B, U]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(counts > 0, counts * w**2 / (1.0 - w), 0.0)
        rates = sums / n[:, None]  # [U, K]
    e = rates[None, :, :] - theta[:, None, :]  # [B, U, K]
    return theta, np.sqrt(np.einsum("bu,buk->bk", a, e**2))


def boot_t(n: np.ndarray, sums: np.ndarray, replicates: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Equal-tailed and symmetric studentized-bootstrap intervals of sum(sums) / sum(n), [2 ends, K] each."""
    U = n.size
    theta, se = cr2_se(n, sums, np.ones((1, U)))
    theta, se = theta[0], se[0]
    counts = rng.multinomial(U, np.full(U, 1.0 / U), size=replicates).astype(np.float64)
    reps, reps_se = cr2_se(n, sums, counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (reps - theta[None, :]) / reps_se  # a resample of one distinct document: 0 / 0, dropped
    out_eq, out_sym = np.empty((2, t.shape[1])), np.empty((2, t.shape[1]))
    for k in range(t.shape[1]):
        v = t[:, k][~np.isnan(t[:, k])]
        hi_t, lo_t = np.quantile(v, [0.5 + LEVEL / 2, 0.5 - LEVEL / 2])
        out_eq[:, k] = theta[k] - hi_t * se[k], theta[k] - lo_t * se[k]
        q = np.quantile(np.abs(v), LEVEL)
        out_sym[:, k] = theta[k] - q * se[k], theta[k] + q * se[k]
    return {"boot-t": out_eq, "boot-t sym": out_sym}


@dataclass
class Tally:
    sims: int = 0
    without_longest: int = 0
    covered: dict[str, np.ndarray] = field(default_factory=dict)
    covered_without: dict[str, np.ndarray] = field(default_factory=dict)
    width: dict[str, list[np.ndarray]] = field(default_factory=dict)
    df: list[float] = field(default_factory=list)
    n_eff: list[float] = field(default_factory=list)

    def add(self, method: str, ends: np.ndarray, truth: np.ndarray, lacks: bool) -> None:
        hit = (ends[0] <= truth) & (truth <= ends[1])
        self.covered[method] = self.covered.get(method, 0) + hit
        self.covered_without[method] = self.covered_without.get(method, 0) + (hit & lacks)
        self.width.setdefault(method, []).append(ends[1] - ends[0])


def simulate(pop: Population, documents: int, sims: int, replicates: int, seed: int) -> Tally:
    rng = np.random.default_rng(seed)
    longest = int(np.argmax(pop.tokens))
    truth = pop.truth
    tally = Tally()
    for _ in range(sims):
        idx = rng.integers(0, pop.tokens.size, documents)
        n, sums = pop.tokens[idx], pop.sums[idx]
        lacks = longest not in idx
        tally.sims += 1
        tally.without_longest += lacks
        tally.n_eff.append(kish_documents(n))
        cr2 = ratio_of_sums(sums, n[:, None], LEVEL)
        tally.add("cr2", np.array([[c.low for c in cr2], [c.high for c in cr2]]), truth, lacks)
        w = n / n.sum()
        a = w**2 / (1 - w)
        centred = np.eye(w.size) - w[None, :] - w[:, None] + float(w @ w)
        m = np.sqrt(a)[:, None] * centred * np.sqrt(a)[None, :]
        tally.df.append(float(np.trace(m) ** 2 / (m**2).sum()))
        for method, ends in boot_t(n, sums, replicates, rng).items():
            tally.add(method, ends, truth, lacks)
    return tally


def pct(k: float, n: int) -> str:
    if n == 0:
        return "–"
    p = k / n
    return f"{100 * p:.1f} ± {100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f}"


def row(dataset: str, pop: Population, documents: int, t: Tally) -> str:
    cells = []
    for k, name in enumerate(("CE", "RBP_1")):
        for method in METHODS:
            width = np.median([w[k] for w in t.width[method]])
            cells.append(f"{pct(t.covered[method][k], t.sims)} / {pct(t.covered_without[method][k], t.without_longest)}"
                         f" (w {width:.3g})")  # fmt: skip
        del name
    return (f"| {dataset} | {pop.model} | {documents} | {np.median(t.n_eff):.1f} | {np.median(t.df):.1f} | "
            f"{100 * t.without_longest / t.sims:.0f}% | " + " | ".join(cells) + " |")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary-dir", type=Path, required=True, help="a finished run's summary/ folder")
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=999)
    parser.add_argument("--datasets", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--write", action="store_true", help="replace this section of benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    started = time.time()
    lines = []
    for d, dataset in enumerate(args.datasets):
        for m, pop in enumerate(populations(args.summary_dir, dataset)):
            for documents in DESIGNS[dataset]:
                tally = simulate(pop, documents, args.sims, args.replicates, args.seed + 1000 * d + 10 * m + documents)
                lines.append(row(dataset, pop, documents, tally))
                print(lines[-1], flush=True)
    methods = " | ".join(f"{metric}: {m}" for metric in ("CE", "RBP_1") for m in METHODS)
    text = "\n".join([
        "## Few heavy documents: CR2 against the studentized bootstrap",
        "",
        f"{args.sims} corpora a row, {LEVEL:.0%} intervals, coverage in % ± its Monte Carlo SE: all corpora / those "
        f"that lack the population's longest document (share in column `lack`); w: median width. boot-t: "
        f"{args.replicates} resamples of the corpus's documents, each studentized by its own CR2 SE. df: "
        f"Bell-McCaffrey's (CR2's t). Populations: each final model's documents in the summaries of a finished "
        f"default run. {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node() or 'this machine'} "
        f"({os.cpu_count()} CPUs, shared), {time.time() - started:.0f} s.",
        "",
        f"| dataset | model | drawn | median n_eff | median df | lack | {methods} |",
        "|" + " --- |" * (6 + 2 * len(METHODS)),
        *lines,
        "",
        f"`python benchmarks/heavy_documents.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
    ])
    print(text)
    if args.write:
        from harness import write_section

        write_section(Path(__file__).with_name("RESULTS.md"), "heavy_documents", text)


if __name__ == "__main__":
    main()
