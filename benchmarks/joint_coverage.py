"""Coverage of the joint law's S-exponent interval (joint_fits.csv) with planted run and checkpoint scatter.

Six sizes of the default ladder, each trained once and saved at three token counts (18 points), around a planted
joint law log y = log(E + A S^-alpha + B D^-beta) + u_run + u_point + e: a run's deviation u_run ~ N(0, tau_run^2)
shared by its three checkpoints, each checkpoint's own u_point ~ N(0, tau_point^2), and document noise e ~ N(0, V)
(SDs 0.01-0.03 in log space, smaller for larger models and later checkpoints; correlation 0.9 within a run, 0.8
between runs: the paired bootstrap's shape). Each simulation draws B document replicates y_b = y e^(N(0, V)), fits
the law (least squares in log space), gives the replicates the size level and refits them, as joint_fits.csv does,
with three models of the scatter:

- `run+point`: the workflow's, a run's component and a checkpoint's (`rankscale.laws.components`);
- `point`: a deviation per checkpoint only (K = I, the checkpoints taken as independent sizes: before);
- `run`: a run's deviation only.

    python benchmarks/joint_coverage.py [--sims 2000] [--replicates 400] [--cells NAME ...]

Prints each cell's coverage of the planted alpha and beta with its Monte Carlo standard error, and mean widths.

`--run DIR` (a finished default run's results/, with summary/ and <config>/tables/) plants instead on the run's own
design: its 18 (S, D) points of one dataset's CE, the joint law joint_fits.csv fitted there (HumanEval: alpha 0.0295,
near its bound 0), and the document covariance of its own paired replicates (from the summaries' .boot.npz). Every
cell also counts alpha's interval as joint_fits.csv reports it (`rankscale.tables.training.joint_intervals`): none
where alpha is not identified (at a bound in the fit or in most refits, or an interval spanning [0, 5]), and the
coverage of the others.

    python benchmarks/joint_coverage.py --run results --config default --dataset humaneval --cells "runs only"
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rankscale.laws import FORMS, JointLaw, Points
from rankscale.laws.random_effects import size_matrix
from rankscale.tables.noise import LawNoise, Noise
from rankscale.tables.training import joint_intervals

JOINT = FORMS["joint"]
SIZES = np.array([25_472, 100_096, 335_712, 793_344, 1_779_840, 3_159_552], dtype=np.float64)  # the ladder's S
TOKENS = np.array([30_720, 100_352, 300_032], dtype=np.float64)  # its checkpoints' D
TRUTH = JointLaw(E=1.0, A=6.0, alpha=0.15, B=60.0, beta=0.4, n=18)  # y ~ 2-6: a CE-like law with a floor
LEVEL = 0.95
CELLS = {  # (tau_run, tau_point) in log space
    "no scatter": (0.0, 0.0),
    "runs only": (0.02, 0.0),
    "runs and checkpoints": (0.015, 0.02),
    "checkpoints only": (0.0, 0.02),
}
MODELS = ("run+point", "point", "run")


def document_covariance() -> np.ndarray:
    """V [18, 18] of log y: SD 0.03 at the smallest, earliest point down to 0.01; correlation 0.9 within a run
    and 0.8 between runs."""
    s_rank = np.repeat(np.arange(len(SIZES)), len(TOKENS))
    d_rank = np.tile(np.arange(len(TOKENS)), len(SIZES))
    sd = 0.03 - 0.012 * s_rank / (len(SIZES) - 1) - 0.008 * d_rank / (len(TOKENS) - 1)
    corr = np.where(s_rank[:, None] == s_rank[None, :], 0.9, 0.8)
    np.fill_diagonal(corr, 1.0)
    return corr * np.outer(sd, sd)


@dataclass(frozen=True)
class Design:
    """Where a simulation plants its law: the points (S, D), each point's run, the truth and the documents' V."""

    S: np.ndarray
    D: np.ndarray
    runs: list[str]
    truth: JointLaw
    V: np.ndarray


def ladder_design() -> Design:
    """The default ladder's sizes and checkpoints around `TRUTH`, with `document_covariance`."""
    S, D = np.repeat(SIZES, len(TOKENS)), np.tile(TOKENS, len(SIZES))
    return Design(S, D, [str(s) for s in S], TRUTH, document_covariance())


def run_design(results: Path, config: str, dataset: str) -> Design:
    """A finished run's own design for CE on `dataset`: its points with a D, the law joint_fits.csv fitted to them,
    and the covariance of log CE over the summaries' paired document replicates."""
    tables = results / config / "tables"
    metrics = pd.read_csv(tables / "metrics.csv")
    rows = metrics[(metrics["dataset"] == dataset) & (metrics["metric"] == "ce") & metrics["D"].notna()]
    fits = pd.read_csv(tables / "joint_fits.csv")
    fit = fits[(fits["dataset"] == dataset) & (fits["metric"] == "ce")]
    if rows.empty or fit.empty:
        raise SystemExit(f"{tables}: no CE points with D, or no joint law, on {dataset}")
    logs = []
    for model in rows["model"]:
        found = sorted((results / "summary" / model).glob(f"{dataset}-*.boot.npz"))
        if not found:
            raise SystemExit(f"{results / 'summary' / model}: no {dataset} summary")
        with np.load(found[0]) as boot:
            logs.append(np.log(-boot["rep_sum_logprob"] / boot["rep_n"]))
    V = np.cov(np.stack(logs, axis=1), rowvar=False)
    return Design(rows["S"].to_numpy(np.float64), rows["D"].to_numpy(np.float64), list(rows["replica_of"].astype(str)),
                  JointLaw.from_row(fit.iloc[0]), V)  # fmt: skip


@dataclass(frozen=True)
class Coverage:
    """One cell and model of the scatter: coverage of the planted exponents by the refits' percentile interval
    and the intervals' mean widths; for alpha, as joint_fits.csv reports it (`rankscale.tables.training.
    joint_intervals`): the share not identified (no interval: the fit or most refits at a bound, or an interval
    spanning [0, 5]), the coverage of the others, and of all with a missing interval claiming nothing."""

    covered: dict[str, float]
    width: dict[str, float]
    sims: int
    not_identified: float = 0.0
    identified: float = float("nan")

    def line(self, name: str) -> str:
        parts = []
        for p in ("alpha", "beta"):
            c = self.covered[p]
            se = np.sqrt(c * (1 - c) / self.sims)
            parts.append(f"{p} {c:.1%} +/- {se:.1%} (width {self.width[p]:.3f})")
        n = round(self.sims * (1 - self.not_identified))
        se = np.sqrt(self.identified * (1 - self.identified) / n) if n else float("nan")
        reported = self.not_identified + (1 - self.not_identified) * self.identified
        parts.append(f"alpha as joint_fits.csv reports it: not identified {self.not_identified:.1%}, the other {n} "
                     f"cover {self.identified:.1%} +/- {se:.1%}; {reported:.1%} +/- "
                     f"{np.sqrt(reported * (1 - reported) / self.sims):.1%} with none claiming nothing")  # fmt: skip
        return f"{name:>10}: " + "; ".join(parts)


def simulate(cell: tuple[float, float], sims: int, replicates: int, seed: int,
             models: tuple[str, ...] = MODELS, design: Design | None = None) -> dict[str, Coverage]:  # fmt: skip
    design = design or ladder_design()
    rng = np.random.default_rng(seed)
    S, D, runs = design.S, design.D, design.runs
    points = Points.joint(S, D)
    K_run = size_matrix(runs)
    kinds = {"run+point": (K_run, np.eye(len(S))), "point": (np.eye(len(S)),), "run": (K_run,)}
    chol = np.linalg.cholesky(design.V)
    truth = np.log(design.truth.at(S, D))
    run_index = np.unique(runs, return_inverse=True)[1]
    tau_run, tau_point = cell
    hits = {m: {"alpha": 0, "beta": 0} for m in models}
    widths = {m: {"alpha": 0.0, "beta": 0.0} for m in models}
    unidentified = dict.fromkeys(models, 0)
    inside = dict.fromkeys(models, 0)
    for i in range(sims):
        run_dev = (tau_run * rng.standard_normal(run_index.max() + 1))[run_index]
        log_y = truth + run_dev + tau_point * rng.standard_normal(len(S)) + chol @ rng.standard_normal(len(S))
        y = np.exp(log_y)
        reps = np.exp(log_y[None, :] + rng.standard_normal((replicates, len(S))) @ chol.T)
        law = JOINT.fit(points, y)
        for model in models:
            honest = LawNoise.of(JOINT, law, points, y, reps, Noise(runs, None, None), ("sim", str(i)), kinds[model])
            refitted = JOINT.fit_replicates(points, honest.replicates, law, 0)
            for p in ("alpha", "beta"):
                low, high = np.nanquantile(refitted[p], [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
                hits[model][p] += int(low <= getattr(design.truth, p) <= high)
                widths[model][p] += float(high - low)
            reported, missing, _ = joint_intervals(law, refitted, LEVEL, float(np.median(y)))
            if "alpha" in missing:
                unidentified[model] += 1
            else:
                inside[model] += int(reported["alpha_ci_low"] <= design.truth.alpha <= reported["alpha_ci_high"])
    return {
        m: Coverage({p: v / sims for p, v in hits[m].items()}, {p: v / sims for p, v in widths[m].items()}, sims,
                    unidentified[m] / sims,
                    inside[m] / (sims - unidentified[m]) if sims > unidentified[m] else float("nan"))  # fmt: skip
        for m in models
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--cells", nargs="+", choices=list(CELLS), default=list(CELLS))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--run", type=Path, help="a finished run's results folder: plant on its own design")
    parser.add_argument("--config", default="default")
    parser.add_argument("--dataset", default="humaneval")
    args = parser.parse_args()
    design = run_design(args.run, args.config, args.dataset) if args.run else None
    if design is not None:
        print(f"{args.run}/{args.config}, {args.dataset} CE: {design.truth}")
    for offset, name in enumerate(args.cells):
        started = time.perf_counter()
        result = simulate(CELLS[name], args.sims, args.replicates, args.seed + offset, tuple(args.models), design)
        tau_run, tau_point = CELLS[name]
        print(f"{name} (tau_run {tau_run}, tau_point {tau_point}; {args.sims} simulations, "
              f"{time.perf_counter() - started:.0f} s)")  # fmt: skip
        for model, coverage in result.items():
            print("  " + coverage.line(model))


if __name__ == "__main__":
    main()
