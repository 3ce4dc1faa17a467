"""The calibration metrics' intervals on nulls built from the run's own documents (docs/science.md, "Calibration
and nucleus coverage"), as benchmarks/model_interval_coverage.py does for CE and RBP_k.

The population is every document one model scored on a dataset (a finished run's rank arrays with the calibration
fields); its per-document statistics are computed once, by the summary's own code
(`rankscale.summary.compute.per_document`: the PIT's W, the reliability bins' edges are the population's). A
simulated corpus draws documents from it with replacement (pydoc 27 and 54, HumanEval 28, 52 and 168: Kish's n_eff
about 7, 14, 22, 41 and 133), and gets every calibration metric's point and interval through metrics.csv's own
code (`rankscale.tables.model_intervals.metric_intervals` and `reliability`): the ratios of document sums
(nucleus_50..99, overconfidence, brier, entropy_gap) by the cluster-robust t; calibration_error, pit_distance and
nucleus_star by the bootstrap over the corpus's documents (B = 1000 replicate totals from
`rankscale.bootstrap.replicate_totals` with `squared=calibration.SQUARED`, as the summary draws them) and `bca`
with no jackknife, i.e. bias-corrected percentiles (`ci_method` bc), as metrics.csv computes them.

The truth is each metric of the population's total sums. For the debiased squares (calibration_error,
pit_distance) it is the population's own squared mean deviation, the plug-in (sum_d S_d / sum_d n_d)^2 with no
debiasing (the squared sums set to 0 in its totals): a corpus draws its documents i.i.d. from the population, so
E[sum_{i != j} S_i S_j] / E[sum_{i != j} n_i n_j] = (E S / E n)^2, the square of the population's pooled mean
deviation, which is what the debiased estimator's numerator and denominator estimate; the debiased formula applied
to the population would instead estimate the square of a superpopulation's deviation that the population is
itself a draw from, which is not what a resample of it has. The bins are the population's throughout (the
summary's bootstrap holds a run's bins fixed too); a run's own corpus would cut its own, a small extra noise not
studied here.

Reported per cell: how often there is an interval, coverage (of those) with its Monte Carlo SE, the share metrics.csv
marks `ci_reliable` False and the coverage of the rest, the point's bias against the truth and its SD.

    python benchmarks/calibration_coverage.py --ranks results/ranks [--model NAME ...] [--sims 1000] [--write]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from model_interval_coverage import LEVEL, commit, pct

from rankscale.bootstrap import kish_documents, replicate_totals
from rankscale.calibration import SQUARED
from rankscale.intervals import CLIPPED, RELIABLE_DESIGN_EFFECT, RELIABLE_DOCUMENTS
from rankscale.metrics import CALIBRATION_METRICS, Metric
from rankscale.rankfile import load_rank_arrays
from rankscale.statistics import TOKENS, Totals
from rankscale.summary.compute import per_document
from rankscale.tables.model_intervals import MEASURED_SUMS, interval_method, metric_intervals, reliability

REPLICATES = 1000  # analysis.bootstrap.replicates' default (config/config.yaml)
DESIGNS = (("pydoc", 27), ("pydoc", 54), ("humaneval", 28), ("humaneval", 52), ("humaneval", 168))


@dataclass(frozen=True)
class Population:
    """One model's documents on one dataset: per document the sums the calibration metrics read."""

    name: str
    stats: dict[str, np.ndarray]  # [U, ...] per statistic
    vocab_size: int

    @classmethod
    def load(cls, npz: Path) -> Population:
        arrays, meta = load_rank_arrays(npz, npz.with_suffix(".json"))
        if arrays.calibration is None:
            raise SystemExit(f"{npz}: made without the calibration fields")
        _, stats = per_document(arrays, [1], [], [])
        names = {s.name for m in CALIBRATION_METRICS for s in m.statistics}
        return cls(f"{npz.parent.name}/{npz.name.split('-')[0]}", {n: v for n, v in stats.items() if n in names},
                   int(meta["vocab_size"]))  # fmt: skip

    @property
    def size(self) -> int:
        return len(self.stats[TOKENS.name])

    def truth(self) -> dict[str, float]:
        """Each metric of the population's totals, the debiased squares' own squared sums at 0 (module docstring)."""
        totals = Totals({n: 0.0 * v.sum(axis=0) if n in SQUARED else v.sum(axis=0) for n, v in self.stats.items()})
        return {m.name: float(np.ravel(m.compute(totals))[0]) for m in CALIBRATION_METRICS}


@dataclass
class Tally:
    sims: int = 0
    with_interval: int = 0
    covered: int = 0
    unreliable: int = 0
    reliable_covered: int = 0
    one_sided: int = 0  # a debiased distance estimated at 0: its one-sided bound (`rankscale.intervals.clipped_bound`)
    one_sided_covered: int = 0
    points: list[float] = field(default_factory=list)
    missing: Counter[str] = field(default_factory=Counter)  # why there was no interval


@dataclass(frozen=True)
class Corpus:
    """What `metric_intervals` reads of a summary (its key, k grid and vocabulary) and of the tables' `Replicates`
    (the documents' sums as unit totals, and each metric's replicates from the replicate totals)."""

    units: dict[tuple[str, str], Totals]
    reps: Totals
    model: str = "sim"
    dataset: str = "sim"
    k: tuple[int, ...] = (1,)
    vocab_size: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return self.model, self.dataset

    def metric(self, model: str, dataset: str, name: str) -> np.ndarray:
        return next(m for m in CALIBRATION_METRICS if m.name == name).compute(self.reps)


def simulate(pop: Population, documents: int, truth: dict[str, float], rng: np.random.Generator, sim: int,
             seed: int, tallies: dict[str, Tally]) -> float:  # fmt: skip
    idx = rng.integers(0, pop.size, documents)
    drawn = {n: v[idx] for n, v in pop.stats.items()}
    units = Totals(drawn)
    n_eff = kish_documents(drawn[TOKENS.name])
    reps = Totals(replicate_totals(drawn, np.arange(documents), documents, REPLICATES, seed, pop.name, str(sim),
                                   squared=SQUARED))  # fmt: skip
    corpus = Corpus({("sim", "sim"): units}, reps, vocab_size=pop.vocab_size)
    totals = Totals({n: v.sum(axis=0) for n, v in drawn.items()})
    for metric in CALIBRATION_METRICS:
        values = np.atleast_1d(metric.compute(totals))
        # metrics.csv's own path (`rankscale.tables.metrics.metrics_table`), the corpus standing for its summary
        got = metric_intervals(cast(Any, corpus), metric, values, cast(Any, corpus), LEVEL)[0]
        ok, _ = reliability(got, n_eff, documents, interval_method(metric, units), not metric.statistics,
                            metric.name)
        t = tallies.setdefault(metric.name, Tally())
        t.sims += 1
        t.points.append(float(values[0]))
        if math.isfinite(got.low) and math.isfinite(got.high):
            t.with_interval += 1
            hit = bool(got.low <= truth[metric.name] <= got.high)
            t.covered += hit
            t.reliable_covered += hit and ok
            t.one_sided += got.method == CLIPPED
            t.one_sided_covered += hit and got.method == CLIPPED
        else:
            t.missing[got.note.split(" (")[0]] += 1
        t.unreliable += not ok
    return n_eff


def kind(metric: Metric) -> str:
    return "cr2_t" if metric.weight is not None else "bc"


def run_cell(pop: Population, documents: int, sims: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    truth = pop.truth()
    tallies: dict[str, Tally] = {}
    n_eff = [simulate(pop, documents, truth, rng, s, seed, tallies) for s in range(sims)]
    lines = []
    for metric in CALIBRATION_METRICS:
        t = tallies[metric.name]
        p = np.asarray(t.points)
        finite = p[np.isfinite(p)]
        bias, sd = float(finite.mean() - truth[metric.name]), float(finite.std(ddof=1))
        lines.append(
            f"| {pop.name} | {documents} | {np.median(n_eff):.1f} | {metric.name} ({kind(metric)}) | "
            f"{truth[metric.name]:.4g} | {pct(t.with_interval, t.sims)} | {pct(t.covered, t.with_interval)} | "
            f"{100 * t.unreliable / t.sims:.1f} | {pct(t.reliable_covered, t.sims - t.unreliable)} | "
            f"{bias:+.2g} | {sd:.2g} | {bias / sd if sd > 0 else math.nan:+.2f} | "
            f"{pct(t.one_sided, t.sims) if t.one_sided else '–'} | {pct(t.one_sided_covered, t.one_sided)} |"
            + ("" if finite.size == p.size else f" {p.size - finite.size} points NaN |")
            + "".join(f" none: {why} ({n}) |" for why, n in t.missing.most_common(2))
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=Path, required=True, help="a finished run's ranks/ folder")
    parser.add_argument("--model", nargs="+", default=["ladder-l4-d256"], help="whose documents make the populations")
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--only", type=int, nargs="*", help="designs to run (0-based), default all")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--write", action="store_true", help="replace this section of benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    started = time.time()
    lines: list[str] = []
    for model in args.model:
        pops: dict[str, Population] = {}
        for i, (dataset, documents) in enumerate(DESIGNS):
            if args.only and i not in args.only:
                continue
            if dataset not in pops:
                found = sorted(args.ranks.glob(f"{model}/{dataset}-*.npz"))
                if not found:
                    raise SystemExit(f"{args.ranks}: no rank array {model}/{dataset}-*.npz")
                pops[dataset] = Population.load(found[-1])
            for line in run_cell(pops[dataset], documents, args.sims, args.seed + i):
                lines.append(line)
                print(line, flush=True)
    text = "\n".join([
        "## Calibration metrics: coverage on the run's own documents",
        "",
        f"{args.sims} corpora a cell, {LEVEL:.0%} intervals as metrics.csv computes them (cr2_t: the cluster-robust "
        f"t; bc: bias-corrected percentiles of {REPLICATES} replicate totals), coverage in % ± its Monte Carlo SE "
        f"among the corpora with an interval; unreliable: `ci_reliable` False (n_eff < {RELIABLE_DOCUMENTS:g} or "
        f"n / n_eff > {RELIABLE_DESIGN_EFFECT:g}; every bc interval but those of "
        f"`rankscale.tables.model_intervals.MEASURED_SUMS`, {', '.join(MEASURED_SUMS)}); bias and SD of the point "
        "against the truth, "
        f"the metric of the population's totals. Populations: {', '.join(args.model)}'s documents in "
        f"{args.ranks.name}/ of a finished default run. {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} CPUs, shared, nice 19), commit {commit()}, "
        f"{time.time() - started:.0f} s.",
        "",
        "| documents of | drawn | median n_eff | metric (interval) | truth | has an interval | covers | unreliable % "
        "| rest covers | bias | SD | bias / SD | one-sided at 0 | its coverage |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *lines,
        "",
        f"`python benchmarks/calibration_coverage.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
        .replace(str(args.ranks), "DIR") + " (DIR: the ranks/ of a default-config run with the calibration fields)",
    ])
    print(text)
    if args.write:
        from harness import write_section

        write_section(Path(__file__).with_name("RESULTS.md"), "calibration_coverage", text)


if __name__ == "__main__":
    main()
