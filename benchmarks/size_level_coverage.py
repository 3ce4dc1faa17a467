"""Coverage of a law's intervals with a planted size level (docs/science.md, "Uncertainty"), through the project's
own code, with the Monte Carlo standard error of every coverage.

Synthetic families of six sizes: log y = X beta + u + e with document noise e ~ N(0, V) (a realistic, strongly
correlated V: the default run's own, or correlations 0.80-0.95) and a deviation per size u ~ N(0, tau^2).
Each simulation draws B document replicates y_b = y + N(0, V) (the paired bootstrap's stand-in), then judges:

- `exponent`: the workflow's interval (tau^2 by REML with the full V, the replicates given the size level by
  `rankscale.laws.random_effects.with_size_level`, the OLS exponent refitted on each, percentile interval), the
  analytic generalized-pivot interval (`pivot`) and the documents-only interval of earlier commits;
- `contrast`: the same for the exponent of the difference of two laws of the same models (correlated document
  noise and size deviations: the same procedure on the difference's own V and tau^2);
- `extrapolation`: the law fitted to the five smallest sizes predicts the largest, judged by extrapolation.csv's
  own code (`rankscale.tables.extrapolation.HeldOut.check`): does its interval hold the held-out value?
- `plug-in`: the held-out value by extrapolation.csv's pivot and by rules plugging a quantile of tau^2's pivot
  into its variance (`plug_in_cell`);
- `families`: two families of six sizes on the same documents (document noise correlated 0.5 between them),
  each with its own planted tau; family_contrasts.csv's own code (`rankscale.tables.families`) judges whether
  the interval of the exponents' difference holds the true difference.

    python benchmarks/size_level_coverage.py [--sims 2000] [--run-dir DIR [--configfile FILE ...]]
        [--studies exponent contrast extrapolation families plug-in]

With --run-dir, V is the default run's (HumanEval -log RBP_1's replicates) instead of the synthetic one. Its
summaries are those of --configfile (paths relative to DIR) or, without it, every HumanEval summary under
DIR/results/summary/ (refused when the directory holds several of one model: pass --configfile then).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rankscale.laws.pivot import mixture_interval
from rankscale.laws.power import ols
from rankscale.laws.random_effects import (
    fit_size_level,
    ols_map,
    replicate_covariance,
    size_matrix,
    with_size_level,
)
from rankscale.layout import Layout, fill
from rankscale.metrics import METRICS

SIZES = np.array([25_472, 77_568, 172_800, 473_088, 1_198_080, 3_159_552], dtype=np.float64)  # the ladder's S
ALPHA, LOG_C = 0.05, 1.0
DEFAULT_RUN_TAU = 0.017  # REML tau of HumanEval -log RBP_1 in the default run (commit fb0369c's ladder)
LEVEL = 0.95


def synthetic_covariance(sd: np.ndarray | None = None) -> np.ndarray:
    """Document covariance of log y: SDs 0.010-0.030 in log space (small models noisier), correlation
    0.95 between neighbouring sizes falling to 0.80 between the smallest and largest."""
    sd = np.linspace(0.03, 0.01, len(SIZES)) if sd is None else sd
    i = np.arange(len(SIZES))
    corr = 0.95 - 0.03 * np.abs(i[:, None] - i[None, :])
    np.fill_diagonal(corr, 1.0)
    return corr * np.outer(sd, sd)


@dataclass(frozen=True)
class Cell:
    """One planted tau and the coverages (and mean widths) of the intervals judged."""

    name: str
    tau: float
    sims: int
    covered: dict[str, float]
    width: dict[str, float]
    tau2_zero: float  # share of simulations where REML gave tau^2 = 0

    def line(self) -> str:
        cov = ", ".join(f"{k} {v:.1%} +/- {np.sqrt(v * (1 - v) / self.sims):.1%}" for k, v in self.covered.items())
        ratio = (
            f"; width sizes/documents {self.width['sizes'] / self.width['documents']:.2f}"
            if "sizes" in self.width
            else ""
        )
        return f"{self.name}: tau = {self.tau:.4g}; coverage {cov}{ratio}; tau^2 = 0 in {self.tau2_zero:.0%}"


def _design() -> tuple[np.ndarray, np.ndarray]:
    x = np.log(SIZES)
    return x, np.stack([np.ones_like(x), x], axis=1)


def _cell(name: str, tau: float, sims: int, hits: dict[str, int], widths: dict[str, float], zero: int) -> Cell:
    return Cell(name, tau, sims, {k: v / sims for k, v in hits.items()}, {k: v / sims for k, v in widths.items()},
                zero / sims)  # fmt: skip


def simulate_cell(V: np.ndarray, tau: float, sims: int, replicates: int, seed: int, name: str = "") -> Cell:
    """Coverage of the true exponent by the three 95% intervals over `sims` simulated families."""
    rng = np.random.default_rng(seed)
    x, X = _design()
    K = size_matrix(range(len(x)))
    truth = LOG_C - ALPHA * x
    chol = np.linalg.cholesky(V)
    hits, widths, zero = {"sizes": 0, "pivot": 0, "documents": 0}, {"sizes": 0.0, "pivot": 0.0, "documents": 0.0}, 0
    H = ols_map(X)
    for _ in range(sims):
        y = truth + tau * rng.standard_normal(len(x)) + chol @ rng.standard_normal(len(x))
        reps = y + rng.standard_normal((replicates, len(x))) @ chol.T
        V_hat = replicate_covariance(y, reps)
        level = fit_size_level(X, y, V_hat, K, np.array([0.0, 1.0]))
        assert level is not None and level.pivot is not None
        zero += level.at_zero
        slope = float((H @ y)[1])
        honest, _ = with_size_level(y, reps, K, level, rng)
        a, b = float(H[1] @ V_hat @ H[1]), float(H[1] @ K @ H[1])
        intervals = {
            "sizes": np.quantile(ols(x, honest)["slope"], [0.025, 0.975]),
            "pivot": mixture_interval(slope, a, [(b, level.pivot)], LEVEL),
            "documents": np.quantile(ols(x, reps)["slope"], [0.025, 0.975]),
        }
        for key, (low, high) in intervals.items():
            hits[key] += int(low <= -ALPHA <= high)
            widths[key] += float(high - low)
    return _cell(name, tau, sims, hits, widths, zero)


def extrapolation_cell(V: np.ndarray, tau: float, sims: int, replicates: int, seed: int, name: str = "") -> Cell:
    """Coverage of the largest size's value by extrapolation.csv's interval from the law of the five smaller."""
    from rankscale.laws import FORMS, Points
    from rankscale.tables.extrapolation import HeldOut
    from rankscale.tables.noise import size_level_of

    rng = np.random.default_rng(seed)
    x, X = _design()
    form, metric, n = FORMS["power_law"], METRICS["ce"], len(x) - 1
    points, groups = Points.of(SIZES), np.array([str(i) for i in range(len(x))])
    chol = np.linalg.cholesky(V)
    hits, widths, zero = {"pivot": 0}, {"pivot": 0.0}, 0
    for _ in range(sims):
        log_y = LOG_C - ALPHA * x + tau * rng.standard_normal(len(x)) + chol @ rng.standard_normal(len(x))
        log_reps = log_y + rng.standard_normal((replicates, len(x))) @ chol.T
        law = form.fit(points.take(slice(0, n)), np.exp(log_y[:n]))
        level = size_level_of(form, law, points.take(slice(0, n)), log_y[:n], log_reps[:, :n], groups[:n])
        zero += level is not None and level.at_zero
        held = HeldOut(form, law, points, log_y, log_reps, X, n, level, size_matrix(groups[:n]), "documents+sizes")
        judged = held.check(n, LEVEL, metric)
        hits["pivot"] += int(judged["covered"])
        widths["pivot"] += float(np.log(judged["predicted_ci_high"] / judged["predicted_ci_low"]))
    return _cell(name, tau, sims, hits, widths, zero)


PLUG_IN = (0.5, 0.7, 0.8, 0.9)  # quantiles of tau^2's pivot a plug-in rule for the held-out value tries


def plug_in_cell(V: np.ndarray, tau: float, sims: int, replicates: int, seed: int, name: str = "") -> Cell:
    """The held-out value of `extrapolation_cell` judged by the pivot's mixture interval (extrapolation.csv's)
    and by rules never narrower than documents alone that plug one quantile q of tau^2's pivot R into the
    variance, +/- z sqrt(a + b R_q): can one sit at <= 98% at tau = 0 and >= 95% at every tau?"""
    from rankscale.laws import FORMS, Points
    from rankscale.laws.pivot import half_width, variances
    from rankscale.tables.noise import size_level_of

    rng = np.random.default_rng(seed)
    x, X = _design()
    form, n, z = FORMS["power_law"], len(x) - 1, 1.959964
    points, groups = Points.of(SIZES), np.array([str(i) for i in range(len(x))])
    chol, H, K = np.linalg.cholesky(V), ols_map(X[:n]), size_matrix(groups[:n])
    b = 1.0 + float(X[n] @ H @ K @ H.T @ X[n])
    hits, zero = {"pivot": 0, **{f"R_q{q:g}": 0 for q in PLUG_IN}}, 0
    for _ in range(sims):
        log_y = LOG_C - ALPHA * x + tau * rng.standard_normal(len(x)) + chol @ rng.standard_normal(len(x))
        log_reps = log_y + rng.standard_normal((replicates, len(x))) @ chol.T
        law = form.fit(points.take(slice(0, n)), np.exp(log_y[:n]))
        level = size_level_of(form, law, points.take(slice(0, n)), log_y[:n], log_reps[:, :n], groups[:n])
        assert level is not None and level.pivot is not None
        zero += level.at_zero
        paired = (log_reps[:, n] - log_y[n]) - (log_reps[:, :n] - log_y[:n]) @ (H.T @ X[n])
        a, grid = float(np.var(paired, ddof=1)), level.pivot.grid()
        error = abs(log_y[n] - float(np.log(form.predict(law, points.take([n]))[0])))
        hits["pivot"] += int(error <= half_width(variances(a, [(b, level.pivot)]), LEVEL))
        for q in PLUG_IN:
            hits[f"R_q{q:g}"] += int(error <= z * np.sqrt(a + b * float(np.quantile(grid, q))))
    return _cell(name, tau, sims, hits, {}, zero)


def families_cell(V: np.ndarray, tau: float, sims: int, replicates: int, seed: int, name: str = "",
                  rho: float = 0.5) -> Cell:  # fmt: skip
    """Coverage of the true difference of two families' exponents by family_contrasts.csv's interval: six sizes
    each, the same documents (document noise correlated `rho` point by point), each family its own tau."""
    from rankscale.laws import FORMS, Points
    from rankscale.laws.random_effects import log_design
    from rankscale.tables.families import FamilyExponent, _contrast
    from rankscale.tables.noise import size_level_of

    rng = np.random.default_rng(seed)
    x, _ = _design()
    form, points, groups = FORMS["power_law"], Points.of(SIZES), np.array([str(i) for i in range(len(x))])
    M = len(x)
    joint = np.block([[V, rho * V], [rho * V, V]])
    chol = np.linalg.cholesky(joint)
    hits, widths, zero = {"pivot": 0}, {"pivot": 0.0}, 0
    alphas = (ALPHA, 0.8 * ALPHA)
    for _ in range(sims):
        noise = chol @ rng.standard_normal(2 * M)
        reps = rng.standard_normal((replicates, 2 * M)) @ chol.T
        exponents = []
        for f, alpha in enumerate(alphas):
            log_y = LOG_C - alpha * x + tau * rng.standard_normal(M) + noise[f * M : (f + 1) * M]
            log_reps = log_y + reps[:, f * M : (f + 1) * M]
            law = form.fit(points, np.exp(log_y))
            Xd, names = log_design(form, law, points)
            h = ols_map(Xd)[names.index("alpha")]
            level = size_level_of(form, law, points, log_y, log_reps, groups)
            assert level is not None
            zero += level.at_zero
            exponents.append(FamilyExponent(law.alpha, (log_reps - log_y) @ h, float(h @ h), level.tau2,
                                            level.pivot, "documents+sizes"))  # fmt: skip
        row = _contrast(exponents[0], exponents[1], LEVEL)
        hits["pivot"] += int(row["ci_low"] <= alphas[0] - alphas[1] <= row["ci_high"])
        widths["pivot"] += float(row["ci_high"] - row["ci_low"])
    cell = _cell(name, tau, sims, hits, widths, zero)
    return Cell(cell.name, tau, sims, cell.covered, cell.width, zero / (2 * sims))  # two families a simulation


def contrast_covariance(V: np.ndarray, rho: float = 0.9) -> np.ndarray:
    """V of the difference of two laws of the same models whose document noise correlates `rho` point by point
    (the second law's noise: rho e + sqrt(1 - rho^2) e', e' ~ N(0, V)): Var(e - rho e - ...) = 2 (1 - rho) V."""
    return 2.0 * (1.0 - rho) * V


@dataclass(frozen=True)
class RunLaw:
    """A finished run's law: its document covariance in log space, the REML tau, and the sizes."""

    V: np.ndarray
    tau: float
    V_contrast: np.ndarray  # of log(y / y_versus): the contrast's own covariance
    tau_contrast: float


def summary_files(run_dir: Path, dataset: str, config_files: list[str] | None = None) -> list[Path]:
    """The summaries of `dataset` in `run_dir`: those of the configuration `config_files` (as the workflow lays
    them out), or every `results/summary/<model>/<dataset>-<key>.json` when none is given."""
    if config_files:
        from rankscale.share import configured

        config, plans, files = configured(config_files, run_dir)
        if dataset not in config["datasets"]:
            raise SystemExit(f"{' '.join(config_files)}: no dataset {dataset!r}")
        return [run_dir / files.summary(model, dataset) for model in plans]
    from rankscale.canon import keyed_name

    found = sorted(run_dir.glob(f"{fill(Layout.SUMMARY, model='*', summary=f'{dataset}-*')}.json"))
    # `<dataset>-*` also matches a dataset whose name continues with "-...": keep this dataset's own
    found = [p for p in found if keyed_name(p.name.removesuffix(".json")) == dataset]
    models = [p.parent.name for p in found]
    if len(set(models)) < len(models):
        twice = sorted({m for m in models if models.count(m) > 1})
        raise SystemExit(f"{run_dir}: several summaries of {dataset!r} for {', '.join(twice)} (several "
                         "configurations ran there): pass --configfile to pick one")  # fmt: skip
    return found


def run_law(run_dir: Path, dataset: str = "humaneval", config_files: list[str] | None = None) -> RunLaw:
    """-log RBP_1 on `dataset` over the ladder's final models of a finished default run, and its contrast with CE
    (the README's headline), from the run's summaries and bootstrap replicates."""
    from rankscale.laws import FORMS, Points
    from rankscale.summary import SummaryPaths, load_replicates, read_summary
    from rankscale.tables import Replicates
    from rankscale.tables.noise import Noise, law_replicates, size_level_of

    read = [(read_summary(p), p) for p in summary_files(run_dir, dataset, config_files)]
    finals = sorted(((s, p) for s, p in read if s.final), key=lambda item: item[0].S)
    summaries = [s for s, _ in finals]
    replicates = Replicates(summaries, [load_replicates(s, SummaryPaths.beside(p)) for s, p in finals])
    form = FORMS["power_law"]
    points = Points.of([s.S for s in summaries])
    values, logs = {}, {}
    for name, k in (("rbp", 1), ("ce", None)):
        group = pd.DataFrame({"model": [s.model for s in summaries], "family": "ladder", "dataset": dataset,
                              "metric": name, "k": k})  # fmt: skip
        reps = law_replicates(group, replicates)
        metric = METRICS[name]
        y = metric.to_law(np.array([float(np.atleast_1d(metric.compute(s.totals()))[s.k.index(k) if k else 0])
                                    for s in summaries]))  # fmt: skip
        values[name], logs[name] = y, np.log(Noise.of(group, len(reps), None).apply(reps))
    taus = []
    for y, log_reps in ((values["rbp"], logs["rbp"]), (values["rbp"] / values["ce"], logs["rbp"] - logs["ce"])):
        level = size_level_of(form, form.fit(points, y), points, np.log(y), log_reps, [s.model for s in summaries])
        taus.append(float(np.sqrt(level.tau2)) if level else 0.0)
    return RunLaw(np.cov(logs["rbp"], rowvar=False), taus[0], np.cov(logs["rbp"] - logs["ce"], rowvar=False), taus[1])


STUDIES = {"exponent": simulate_cell, "contrast": simulate_cell, "extrapolation": extrapolation_cell,
           "families": families_cell, "plug-in": plug_in_cell}  # fmt: skip


def cells(V: np.ndarray, sims: int, replicates: int, seed: int, tau_estimate: float,
          simulate=simulate_cell) -> list[Cell]:  # fmt: skip
    """tau = 0, tau on the scale of the slope's document noise, of a point's, and near the run's estimate."""
    document_sd = float(np.sqrt(np.median(np.diag(V))))
    x, X = _design()
    residual_sd = float(np.sqrt(np.trace((np.eye(len(x)) - X @ ols_map(X)) @ V) / (len(x) - 2)))
    planted = {
        "no scatter": 0.0,
        "slope's document scale": residual_sd,  # the hardest: REML often says 0 where tau matters
        "document scale": document_sd,
        "default run's estimate": tau_estimate,
    }
    return [simulate(V, tau, sims, replicates, seed + i, name) for i, (name, tau) in enumerate(planted.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--tau", type=float, default=DEFAULT_RUN_TAU, help="the largest tau planted (log space)")
    parser.add_argument("--run-dir", type=Path, help="a finished default run: its V and tau instead of synthetic ones")
    parser.add_argument("--configfile", nargs="+", help="with --run-dir: the run's config files (relative to it)")
    parser.add_argument("--studies", nargs="+", choices=sorted(STUDIES), default=list(STUDIES))
    args = parser.parse_args()
    if args.run_dir:
        law = run_law(args.run_dir, config_files=args.configfile)
        print(f"V and tau of {args.run_dir}: HumanEval -log RBP_1 (tau {law.tau:.4f}) and its contrast with CE "
              f"(tau {law.tau_contrast:.4f}); correlations {np.round(np.corrcoef(law.V)[0], 2)}")  # fmt: skip
        V, tau, V_contrast, tau_contrast = law.V, law.tau, law.V_contrast, law.tau_contrast
    else:
        V, tau = synthetic_covariance(), args.tau
        V_contrast, tau_contrast = contrast_covariance(V), args.tau
    for offset, title in enumerate(STUDIES):
        if title not in args.studies:
            continue
        print(title, flush=True)
        cov, largest = (V_contrast, tau_contrast) if title == "contrast" else (V, tau)
        for cell in cells(cov, args.sims, args.replicates, args.seed + 100 * offset, largest, STUDIES[title]):
            print("  " + cell.line(), flush=True)


if __name__ == "__main__":
    main()
