"""BCa under a redraw of its replicates, on a finished run's own rows (BCa only where it is stable).

For every model x dataset summary of a run, the histogram statistics' B = 200 replicates (`analysis.lognormal.
replicates`) are drawn again R times with other seeds, exactly as `summarize` draws them (`resample_counts` over the
corpus's documents, `distribution_replicates` of the rank array's per-document histograms), with the run's own
jackknife over documents (for error entropy, self-alignment and confidence the jackknife-corrected estimator's
replicates, recentred, and its own leave-one-out values, as `summarize` stores them); redraw 0 takes the workflow's
own seed. Each redraw gets its interval from the tables'
code (`rankscale.bca.bca` with `BIAS_LIMIT`, as metrics.csv and conjecture.csv). Reported, over the rows
(model x dataset x statistic):

- the on/off flip rate: the share of redraws whose interval exists where the run's own does not, or not where it
  does (a review found pydoc's ee_lognormal lost its interval in 30% of redraws); and the method flip rate (BCa against
  its fallback, the jackknife t);
- for rows whose redraws are all BCa: the ratio of the median `mc_error` (the interval's estimate of its own
  Monte Carlo error) to the truth, the SD over redraws of the larger-moving end as a share of the mean width;
- how many `mc_error` are infinite.

With `--before SRC` (a checkout's src/, e.g. main's) the same redraws also go through that checkout's `bca`.

    python benchmarks/bca_redraw.py --run DIR [--redraws 100] [--datasets pydoc humaneval] [--before SRC] [--write]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from rankscale.bca import (
    BEYOND_FACTOR,
    JACKKNIFE_T,
    MIN_TAIL_REPLICATES,
    STABLE_SHARE,
    Z0_MARGIN,
    bca,
    unsmooth_interval,
)
from rankscale.bootstrap import resample_counts
from rankscale.conjecture import distribution_replicates
from rankscale.decomposition_jackknife import UNSMOOTH, corrected_decomposition
from rankscale.intervals import BIAS_LIMIT, ModelInterval
from rankscale.layout import Layout, fill
from rankscale.rankfile import load_rank_arrays
from rankscale.summary import read_summary
from rankscale.summary.compute import RankPairs

LEVEL = 0.95
STATISTICS = ("ee", "ee_mm", "self_alignment", "confidence", "ee_lognormal", "neg_log_p1_lognormal", "mu", "sigma",
              "neg_log_rbp1_lognormal", "neg_log_rbp10_lognormal", "neg_log_rbp50_lognormal",
              "neg_log_rbp100_lognormal", "ce_appendix_b", "neg_log_p1_appendix_b")  # fmt: skip
SEED = 0  # the workflow's `analysis.bootstrap.seed` (config/config.yaml): redraw 0


@dataclass
class Row:
    """One statistic of one summary over the redraws: each redraw's interval (new, and before)."""

    name: str
    new: list[ModelInterval]
    old: list[ModelInterval]


def load_before(src: Path) -> ModuleType:
    """Another checkout's `rankscale.intervals`, loaded beside this one's (the rule before a change)."""
    spec = importlib.util.spec_from_file_location("before_intervals", src / "rankscale" / "intervals.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def summary_rows(summary_json: Path, ranks: Path, redraws: int, replicates: int,
                 before: Callable[..., ModelInterval] | None) -> list[Row]:  # fmt: skip
    summary = read_summary(summary_json)
    boot = np.load(summary_json.with_name(summary_json.name.replace(".json", ".boot.npz")))
    found = sorted((ranks / summary.model).glob(f"{summary.dataset}-*.npz"))
    arrays, meta = load_rank_arrays(found[-1], found[-1].with_suffix(".json"), verify_checksum=False)
    docs, row = np.unique(arrays.doc, return_inverse=True)
    by_row = RankPairs.of(row, arrays, summary.vocab_size).by_row(summary.vocab_size, len(docs))
    units = np.asarray(boot["units"])
    n_units = len(boot["jack_ee"])  # the corpus's documents (the jackknife has one value per unit)
    values = summary.distribution.values()
    names = [n for n in STATISTICS if n in values and f"jack_{n}" in boot.files]
    rows = [Row(f"{summary.dataset} {summary.model} {n}", [], []) for n in names]
    for r in range(redraws):
        seed = SEED if r == 0 else 1_000_003 + r
        draws = list(resample_counts(n_units, replicates, seed, summary.dataset))
        blocks = (b[:, units].astype(np.float64) for b in draws)
        reps = distribution_replicates(*by_row, blocks, summary.distribution, summary.law_k, summary.truncated)
        # CE's decomposition: the corrected estimators' replicates, recentred, as `summarize` stores them
        reps.update(corrected_decomposition(*by_row, units, draws)[1])
        if r == 0:  # the workflow's own draw: the replicates it stored
            for name in names:
                stored = np.asarray(boot[f"rep_{name}"], dtype=np.float64)
                assert np.allclose(reps[name], stored, equal_nan=True, rtol=1e-9), f"redraw 0 is not the run's {name}"
        for out, name in zip(rows, names, strict=True):
            jack = np.asarray(boot[f"jack_{name}"], dtype=np.float64)
            rule = unsmooth_interval if name in UNSMOOTH else bca  # as `model_intervals.bootstrap_interval`
            out.new.append(rule(reps[name], values[name], jack, LEVEL, BIAS_LIMIT))
            if before is not None:
                out.old.append(before(reps[name], values[name], jack, LEVEL, BIAS_LIMIT))
    return rows


@dataclass(frozen=True)
class Measured:
    """One row's redraw statistics under one rule."""

    on_own: bool
    on_flip: float
    method_flip: float
    ratio: float  # median mc_error / the redraw SD of the ends, BCa rows only (NaN otherwise)
    infinite: int
    bca_share: float


def measure(intervals: list[ModelInterval]) -> Measured:
    on = np.array([math.isfinite(i.low) for i in intervals])
    method = np.array([getattr(i, "method", "") or "bca" for i in intervals])
    infinite = sum(math.isinf(i.mc_error) for i in intervals)
    bca_only = on & (method == "bca")
    ratio = math.nan
    if bca_only.all() and len(intervals) > 2:
        ends = np.array([(i.low, i.high) for i in intervals])
        truth = float(ends.std(axis=0, ddof=1).max() / np.mean(ends[:, 1] - ends[:, 0]))
        estimate = float(np.median([i.mc_error for i in intervals]))
        ratio = estimate / truth if truth > 0 else math.nan
    return Measured(bool(on[0]), float(np.mean(on[1:] != on[0])), float(np.mean(method[1:] != method[0])), ratio,
                    infinite, float(np.mean(bca_only)))  # fmt: skip


def quantiles(x: list[float]) -> str:
    v = np.array([e for e in x if math.isfinite(e)])
    if v.size == 0:
        return "–"
    q = np.quantile(v, [0.0, 0.1, 0.5, 0.9, 1.0])
    return f"{q[2]:.2f} (10-90%: {q[1]:.2f}-{q[3]:.2f}; range {q[0]:.2f}-{q[4]:.2f}; {v.size} rows)"


def report(rows: list[Row], which: str) -> list[str]:
    measured = {r.name: measure(getattr(r, which)) for r in rows if getattr(r, which)}
    out = []
    for dataset in sorted({name.split()[0] for name in measured}):
        of = {n: m for n, m in measured.items() if n.startswith(dataset + " ")}
        flips = [m.on_flip for m in of.values()]
        worst = max(of, key=lambda n: of[n].on_flip)
        out.append(
            f"| {dataset} | {which} | {len(of)} | {sum(m.on_own for m in of.values())} | "
            f"{100 * np.mean(flips):.2f}% (worst {100 * of[worst].on_flip:.0f}%: {worst.split(maxsplit=1)[1]}) | "
            f"{100 * np.mean([m.method_flip for m in of.values()]):.1f}% | "
            f"{100 * np.mean([m.bca_share for m in of.values()]):.0f}% | {quantiles([m.ratio for m in of.values()])} | "
            f"{sum(m.infinite for m in of.values())} |"
        )
    return out


def by_statistic(rows: list[Row], which: str, statistic: str) -> str:
    """One statistic's on/off flip rate per dataset (pydoc's ee_lognormal, the example that prompted it)."""
    parts = []
    for dataset in ("pydoc", "humaneval"):
        got = [measure(getattr(r, which)) for r in rows
               if r.name.startswith(dataset + " ") and r.name.endswith(" " + statistic) and getattr(r, which)]  # fmt: skip
        if got:
            parts.append(f"{dataset} {100 * np.mean([m.on_flip for m in got]):.1f}% (worst "
                         f"{100 * max(m.on_flip for m in got):.0f}%)")  # fmt: skip
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="a finished run's directory (its summaries and rank arrays, rankscale.layout)")
    parser.add_argument("--redraws", type=int, default=100)
    parser.add_argument("--replicates", type=int, default=200, help="analysis.lognormal.replicates of the run")
    parser.add_argument("--datasets", nargs="*", default=["pydoc", "humaneval"])
    parser.add_argument("--models", nargs="*", help="only these models (default: every one)")
    parser.add_argument("--before", type=Path, help="another checkout's src/: its bca on the same redraws")
    parser.add_argument("--write", action="store_true", help="replace this section of benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    started = time.time()
    before = load_before(args.before).bca if args.before else None
    rows: list[Row] = []
    summaries = sorted(args.run.glob(f"{fill(Layout.SUMMARY, model='*', summary='*')}.json"))
    for path in summaries:
        if path.name.split("-")[0] not in args.datasets or (args.models and path.parent.name not in args.models):
            continue
        rows += summary_rows(path, args.run / Path(Layout.ranks_dir("*")).parent, args.redraws, args.replicates, before)
        print(f"{path.parent.name}/{path.name}: {time.time() - started:.0f} s", file=sys.stderr, flush=True)
    lines = report(rows, "new") + (report(rows, "old") if before else [])
    new_methods = {m for r in rows for m in (getattr(i, "method", "") or "bca" for i in r.new)}
    text = "\n".join([
        "## BCa under a redraw of its replicates",
        "",
        f"{args.redraws} draws of the {args.replicates} replicates of every histogram statistic "
        f"({len(STATISTICS)} statistics) of every model's summary on the run's own documents, the first the "
        f"workflow's own; {LEVEL:.0%} intervals as metrics.csv and conjecture.csv compute them. `new`: BCa where the "
        f"jackknife's bias is within {STABLE_SHARE * BIAS_LIMIT:g} of its SE and BCa's levels leave "
        f"{MIN_TAIL_REPLICATES:g} replicates beyond each end, the jackknife t (`{JACKKNIFE_T}`) up to a bias of "
        f"{BEYOND_FACTOR * BIAS_LIMIT:g}, none beyond it (or where z0 less {Z0_MARGIN:g} of its Monte Carlo SEs is), "
        "`ci_mc_error` by the delta method at BCa's levels; `old`: the rule before "
        f"(BCa while |z0| <= {BIAS_LIMIT:g}, `ci_mc_error` by a grouped jackknife over the replicates). Methods "
        f"seen: {', '.join(sorted(new_methods))}. {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} CPUs, shared), {time.time() - started:.0f} s.",
        "",
        "| dataset | rule | rows | with an interval in the run's draw | on/off flip rate (mean over rows) | "
        "method flip rate | redraws by BCa | ci_mc_error / redraw SD of the ends (BCa rows: median ...) | "
        "inf ci_mc_error |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *lines,
        "",
        f"ee_lognormal's on/off flip rate: new {by_statistic(rows, 'new', 'ee_lognormal')}"
        + (f"; old {by_statistic(rows, 'old', 'ee_lognormal')}" if before else "") + ".",
        "",
        "`python benchmarks/bca_redraw.py " + " ".join(
            "DIR" if os.path.isabs(a) else a for a in (argv if argv is not None else sys.argv[1:])) + "`",
    ])  # fmt: skip
    print(text)
    if args.write:
        from harness import write_section

        write_section(Path(__file__).with_name("RESULTS.md"), "bca_redraw", text)


if __name__ == "__main__":
    main()
