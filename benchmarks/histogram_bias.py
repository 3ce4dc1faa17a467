"""CE's decomposition on the run's own documents: which estimator's bias is small against its spread, and the
coverage of its intervals (docs/science.md, "Uncertainty"; `rankscale.decomposition_jackknife`).

1. Bias against spread. For every rank array of a finished run (every model on pydoc and HumanEval), B document
   bootstrap replicates of each candidate estimator; its bias under resampling is (mean of the replicates - the
   estimate) / their SD, what BCa's z0 reads and what put the plug-in's intervals beside the truth. Candidates for
   the error entropy: the plug-in, Miller-Madow (+ (m - 1) / 2N, m seen ranks), Chao-Shen's coverage-adjusted
   estimator (Chao & Shen 2003: p -> C p, C = 1 - f1 / N, each term over 1 - (1 - C p)^N), and the jackknife over
   documents; for confidence the plug-in, the jackknife over documents, Horvitz-Thompson with Good-Turing
   coverage-adjusted inclusion probabilities (Chao & Shen's, over tokens or over documents as the units) and Chao2
   (`rankscale.unseen_ranks`, the tables'); self-alignment is CE less ee's and confidence's estimates.
2. Coverage on real-document nulls (as benchmarks/model_interval_coverage.py builds them: a model's documents are
   the population, its plug-in statistics the truth; a corpus draws documents with replacement): each statistic's
   interval as metrics.csv computes it (`coverage_sim`), from B = 200 replicates and the estimator's own
   leave-one-document-out values.

    python benchmarks/histogram_bias.py --ranks results/ranks [--replicates 200] [--sims 200] [--write]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from model_interval_coverage import LEVEL, Cell, Population, cells, pct, scale_of
from scipy import sparse

from rankscale.bca import bca, jackknife_t, unsmooth_interval
from rankscale.bootstrap import kish_documents, resample_counts
from rankscale.decomposition_jackknife import CORRECTED, UNSMOOTH, corrected_blocks
from rankscale.intervals import BIAS_LIMIT, ModelInterval, bell_mccaffrey_df

REPLICATES = 200


def miller_madow(counts: np.ndarray) -> np.ndarray:
    """Plug-in entropy + (m - 1) / 2N of each column of counts [R, b]."""
    n = counts.sum(axis=0)
    p = counts / n
    plug = -np.where(counts > 0, p * np.log(np.where(counts > 0, p, 1.0)), 0.0).sum(axis=0)
    return plug + ((counts > 0).sum(axis=0) - 1) / (2 * n)


def chao_shen(counts: np.ndarray) -> np.ndarray:
    """Chao & Shen's coverage-adjusted entropy of each column of integer counts [R, b]."""
    n = counts.sum(axis=0)
    f1 = np.minimum((counts == 1).sum(axis=0), n - 1)
    pa = (1.0 - f1 / n) * counts / n
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, -pa * np.log(np.where(counts > 0, pa, 1.0)) / (1.0 - (1.0 - pa) ** n), 0.0)
    return terms.sum(axis=0)


def horvitz_thompson(counts: np.ndarray, sums: np.ndarray, incidence: np.ndarray, m: np.ndarray,
                     by_documents: bool) -> np.ndarray:  # fmt: skip
    """-log of Chao & Shen's Horvitz-Thompson sum, sum over seen e of Q_e / (1 - (1 - C p_e)^n), per column:
    p_e and C = 1 - f1 / n over tokens (n tokens, f1 errors seen once), or over units (p_e the share of the m
    units holding e, C = 1 - Q1 / U, Q1 the errors held by one unit, U all incidences)."""
    if by_documents:
        n, share, ones, total = m, incidence / m, np.isclose(incidence, 1).sum(axis=0), incidence.sum(axis=0)
    else:
        n = counts.sum(axis=0)
        share, ones, total = counts / n, np.isclose(counts, 1).sum(axis=0), n
    coverage = 1.0 - np.minimum(ones, total - 1) / total  # Good-Turing, guarded where every error is seen once
    seen = counts > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.where(seen, np.exp(sums / np.where(seen, counts, 1.0)), 0.0)
        return -np.log((q / np.where(seen, 1.0 - (1.0 - coverage * share) ** n, 1.0)).sum(axis=0))


def estimators(hist: sparse.csc_matrix, logprob: sparse.csc_matrix, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Every candidate of every row of unit draw counts [b, U]."""
    got = corrected_blocks(hist, logprob, [weights])
    counts, sums = np.asarray(hist @ weights.T), np.asarray(logprob @ weights.T)
    incidence, m = np.asarray((hist > 0).astype(np.float64) @ weights.T), weights.sum(axis=1)
    out = {f"{name}: plug-in": got[f"{name}_plug_in"] for name in CORRECTED}
    out["ee: jackknife"] = got["ee"]
    out["confidence: Chao2 (tables)"] = got["confidence"]
    out["self_alignment: CE - ee jackknife - confidence Chao2 (tables)"] = got["self_alignment"]
    out["confidence: jackknife"] = got["confidence_jackknife"]
    out["self_alignment: CE - both jackknives"] = (
        got["self_alignment"] + got["confidence"] - got["confidence_jackknife"]
    )
    out["confidence: Horvitz-Thompson, tokens"] = horvitz_thompson(counts, sums, incidence, m, False)
    out["confidence: Horvitz-Thompson, documents"] = horvitz_thompson(counts, sums, incidence, m, True)
    out["ee: jackknife of Miller-Madow"] = got["ee_miller_madow"]
    out["ee: Miller-Madow"] = miller_madow(counts)
    out["ee: Chao-Shen"] = chao_shen(counts)
    return out


def bias_row(pop: Population, replicates: int, seed: int) -> dict[str, float]:
    """(mean replicate - truth) / SD of the replicates, per candidate, over the population's own documents: in the
    bootstrap's world the documents are the population and the truth is their plug-in value, so this is each
    estimator's bias against its spread. (Against its own estimate instead, an unbiased estimator would show its
    correction, the plug-in's bias, however well it corrects.)"""
    u = pop.tokens.size
    point = estimators(pop.hist, pop.hist_logprob, np.ones((1, u)))
    reps = estimators(pop.hist, pop.hist_logprob, np.concatenate(list(resample_counts(u, replicates, seed, "bias"))))
    truth = {name: point[f"{name.split(':')[0]}: plug-in"][0] for name in point}  # the bootstrap world's truth
    return {name: float((reps[name].mean() - truth[name]) / reps[name].std(ddof=1)) for name in point}


def tally(tallies: dict[str, list[int]], name: str, got: ModelInterval, point: float, truth: float) -> None:
    t = tallies.setdefault(name, [0, 0, 0, 0])  # sims, with an interval, covered, point at or outside
    t[0] += 1
    if math.isfinite(got.low):
        t[1] += 1
        t[2] += bool(got.low <= truth <= got.high)
        t[3] += not got.low < point < got.high


def coverage_sim(cell: Cell, truth: dict[str, float], rng: np.random.Generator, seed: int,
                 tallies: dict[str, list[int]], values: dict[str, list[tuple[float, float]]]) -> float:  # fmt: skip
    """One corpus: each statistic's interval as the tables give it (`rankscale.tables.model_intervals`: ee's BCa,
    jackknife t or none by `rankscale.bca.stable_choice`; confidence's and self-alignment's `unsmooth_interval`),
    beside the jackknife t for those two and the jackknife estimators of confidence and self-alignment under the
    jackknife-bias rule (`_jackknife`), each from its own leave-one-document-out values, against the truth;
    `values` gathers each point and the plug-in's, for their bias against the truth."""
    pop = cell.population
    idx = rng.integers(0, pop.tokens.size, cell.documents)
    scale = sparse.diags(scale_of(cell, idx, rng))
    hist, logprob = sparse.csc_matrix(pop.hist[:, idx] @ scale), sparse.csc_matrix(pop.hist_logprob[:, idx] @ scale)
    n = idx.size
    draws = np.concatenate(list(resample_counts(n, REPLICATES, seed, "coverage")))
    rows = {"point": np.ones((1, n)), "reps": draws, "out": 1.0 - np.eye(n)}
    got = {k: corrected_blocks(hist, logprob, [w]) for k, w in rows.items()}
    for g in got.values():
        g["self_alignment_jackknife"] = g["self_alignment"] + g["confidence"] - g["confidence_jackknife"]
        g["confidence_jackknife_plug_in"] = g["confidence_plug_in"]
        g["self_alignment_jackknife_plug_in"] = g["self_alignment_plug_in"]
    df = bell_mccaffrey_df(np.asarray(hist.sum(axis=0)).ravel())
    for name in (*CORRECTED, "confidence_jackknife", "self_alignment_jackknife"):
        point, plug = float(got["point"][name][0]), float(got["point"][f"{name}_plug_in"][0])
        reps = point + got["reps"][name] - plug  # recentred, as `rankscale.decomposition_jackknife.recentred`
        values.setdefault(name, []).append((point, plug))
        target, out = truth[name.removesuffix("_jackknife")], got["out"][name]
        if name in UNSMOOTH:
            tally(tallies, name, unsmooth_interval(reps, point, out, LEVEL, BIAS_LIMIT, df), point, target)
            tally(tallies, f"{name} (jackknife t)", jackknife_t(point, out, LEVEL, df), point, target)
        else:
            tally(tallies, name, bca(reps, point, out, LEVEL, BIAS_LIMIT, df), point, target)
    return kish_documents(np.asarray(hist.sum(axis=0)).ravel())


def bias_against(values: list[tuple[float, float]], truth: float) -> str:
    """(mean - truth) / SD over the corpora of the estimator, and of the plug-in beside it."""
    v = np.asarray(values)
    jack, plug = ((v[:, j].mean() - truth) / v[:, j].std(ddof=1) for j in (0, 1))
    return f"{jack:+.2f} (plug-in {plug:+.2f})"


def population_truth(pop: Population, equal: bool) -> dict[str, float]:
    w = 1.0 / pop.tokens if equal else np.ones_like(pop.tokens)
    hist = sparse.csc_matrix(pop.hist @ sparse.diags(w))
    got = corrected_blocks(hist, sparse.csc_matrix(pop.hist_logprob @ sparse.diags(w)), [np.ones((1, w.size))])
    return {name: float(got[f"{name}_plug_in"][0]) for name in CORRECTED}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=Path, required=True, help="a finished run's ranks/ folder")
    parser.add_argument("--model", help="the model whose documents make the coverage populations (default: the last)")
    parser.add_argument("--replicates", type=int, default=REPLICATES)
    parser.add_argument("--sims", type=int, default=200, help="corpora per coverage cell (0: the bias table only)")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--write", action="store_true", help="replace this section of benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    started = time.time()
    bias: dict[tuple[str, str], list[float]] = {}
    for npz in sorted(args.ranks.glob("*/*.npz")):
        pop = Population.load(npz)
        dataset = npz.name.split("-")[0]
        for name, value in bias_row(pop, args.replicates, args.seed).items():
            bias.setdefault((dataset, name), []).append(value)
    bias_lines = [f"| {d} | {name} | {len(v)} | {np.median(v):+.2f} | {min(v):+.2f} to {max(v):+.2f} | "
                  f"{np.median(np.abs(v)):.2f} |" for (d, name), v in sorted(bias.items())]  # fmt: skip
    print("\n".join(bias_lines), flush=True)
    cover_lines = []
    for i, cell in enumerate(cells(args.ranks, args.model) if args.sims else []):
        rng = np.random.default_rng(args.seed + i)
        truth = population_truth(cell.population, cell.lengths is not None)
        tallies: dict[str, list[int]] = {}
        values: dict[str, list[tuple[float, float]]] = {}
        n_eff = [coverage_sim(cell, truth, rng, args.seed * 1000 + i * 100_003 + s, tallies, values)
                 for s in range(args.sims)]  # fmt: skip
        line = f"| {cell.name} | {cell.population.name} | {cell.documents} | {np.median(n_eff):.1f} |" + " ".join(
            f" {name}: interval {pct(t[1], t[0])}, covers {pct(t[2], t[1])}, point at/outside {t[3]}; "
            f"bias / SD {bias_against(values[name.split(' ')[0]], truth[name.split(' ')[0].removesuffix('_jackknife')])} |"
            for name, t in tallies.items()
        )
        cover_lines.append(line)
        print(line, flush=True)
    from harness import commit

    text = "\n".join(
        [
            "## CE's decomposition: bias against spread, and coverage on the run's own documents",
            "",
            f"Bias under resampling of each candidate estimator, (mean of {args.replicates} document-bootstrap replicates "
            f"- the documents' plug-in value, the bootstrap's truth) / their SD, over every rank array in {args.ranks.name}/ of a finished default run (per "
            "dataset: the median, range and median |bias| / SD over its models). "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node() or 'this machine'} "
            f"({os.cpu_count()} CPUs, shared), commit {commit()}, {time.time() - started:.0f} s.",
            "",
            "| dataset | statistic: estimator | models | median bias / SD | range | median abs |",
            "| --- | --- | --- | --- | --- | --- |",
            *bias_lines,
            "",
            *(
                [
                    f"Coverage of each statistic's {LEVEL:.0%} interval as the tables give it (ee: the jackknife "
                    f"over documents, BCa, the jackknife t or none by `rankscale.bca.stable_choice`, bias limit "
                    f"{BIAS_LIMIT:g}; confidence: Chao2, and self-alignment CE less ee and it: the replicates' SD "
                    f"with t, `unsmooth_interval`; {REPLICATES} replicates) on real-document nulls, {args.sims} "
                    "corpora a cell, the truth the population's plug-in value; beside them the jackknife t of those "
                    "two, and the jackknife estimators of both (`*_jackknife`, main's before) under the "
                    "jackknife-bias rule. % ± MC SE; bias / SD: the estimator's (mean - truth) / SD over the "
                    "corpora, and the plug-in's.",
                    "",
                    "| design | documents of | drawn | median n_eff | intervals |",
                    "| --- | --- | --- | --- | --- |",
                    *cover_lines,
                    "",
                ]
                if cover_lines
                else []
            ),
            f"`python benchmarks/histogram_bias.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        ]
    )
    print(text)
    if args.write:
        from harness import write_section

        write_section(Path(__file__).with_name("RESULTS.md"), "histogram_bias", text)


if __name__ == "__main__":
    main()
