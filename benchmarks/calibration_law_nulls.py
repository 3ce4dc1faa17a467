"""Real-document nulls of the calibration laws: their exponent intervals' coverage, their exponent contrasts with
-log RBP_1, and their lack-of-fit test's level, on the run's own documents (real_document_nulls.py's designs).

The population: the final ladder sizes' per-document sums on pydoc and HumanEval (a finished run's summaries,
`.boot.npz`). Each law gets its own copy of them, scaled per model so the population lies exactly on a power law
in S (the law fitted to the population's own values); -log RBP_1 is imposed as real_document_nulls.py does.

The population's value of a metric (its truth) is the metric's own code (`rankscale.metrics.METRICS`) on the
population's totals with every square of a document's sum set to 0: the plug-in, what a sample's debiased squares
estimate when documents are drawn from the population (for a ratio of sums the squares are not read).
- Ratios of document sums: -log C(p) (the column of p in `nucleus_hits` scaled), brier (`sum_top1_brier`),
  |overconfidence| (`sum_top1_prob` and `top1_hits` both, so their difference scales), |entropy_gap|
  (`sum_logprob` and `sum_entropy`): the value scales with the factor, so the law is exact.
- The debiased distances calibration_error and pit_distance are homogeneous of degree 1 in the deviations: each
  document's per-bin deviations of y - c (`reliability_deviation`), or of the PIT (`pit_deviation`), scaled by f
  (their squares, recomputed from the units' sums, by f^2) scale the truth by f, so the law is exact for the
  truth; a sample's value is still a biased (clipped root of a debiased square) estimate of it.
- nucleus_star (p*(0.9), interpolated on the grid of C(p)) cannot be moved onto a law by scaling sums: its
  target is pseudo-true, the power law fitted to the population's own values. Those values scatter around it
  (tau > 0 is the truth here, fixed across simulations), which the random-effects interval treats as random:
  it is expected to over-cover.

Each simulation draws a sample's documents (`real_document_nulls.draw`), sums each unit's statistics (the squares
as squares of the unit's sums), draws B bootstrap replicates through `rankscale.bootstrap.replicate_totals`
(a square weighed by c^2, as the tables do), computes every point and replicate through `METRICS[name].compute`,
the units' influence through the tables' `Replicates.influence`, and the law's interval through `LawNoise`, the
contrast's through `exponent_contrast`, gated as powerlaw_fits gates them (`biased_models`: no law interval where
a model's bias-corrected interval of a bootstrap-interval metric is missing, `rankscale.bca.bca`). The lack of
fit is the tables' `lof_p` (the size level's; NaN under 20 effective documents: not testable).

    python benchmarks/calibration_law_nulls.py --summary-dir results/summary [--sims 300] [--replicates 400]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
from real_document_nulls import CELLS, LEVEL, Pool, draw, final_summaries, share

from rankscale import calibration as cal
from rankscale.bca import bca
from rankscale.bootstrap import interval, kish_documents, replicate_totals
from rankscale.laws import FORMS, Points
from rankscale.laws.few_documents import Documents
from rankscale.layout import Layout
from rankscale.metrics import METRICS
from rankscale.statistics import HITS, LOGPROB_SUM, TOKENS, Totals
from rankscale.tables.base import Replicates
from rankscale.tables.lawkit import exponent_contrast
from rankscale.tables.noise import LawNoise, Noise

# the per-document sums read (linear in the documents), and each square of a document's sum with the sum it squares
LINEAR = (TOKENS, LOGPROB_SUM, cal.NUCLEUS_HITS, cal.BIN_TOKENS, cal.BIN_DEVIATION, cal.CONFIDENCE_SUM,
          cal.TOP1_HITS, cal.BRIER_SUM, cal.ENTROPY_SUM, cal.PIT_DEVIATION)  # fmt: skip
SQUARE_OF = {cal.TOKENS_SQUARED.name: TOKENS.name, cal.PIT_DEVIATION_SQUARED.name: cal.PIT_DEVIATION.name,
             cal.BIN_TOKENS_SQUARED.name: cal.BIN_TOKENS.name,
             cal.BIN_DEVIATION_SQUARED.name: cal.BIN_DEVIATION.name}  # fmt: skip
RBP = "rbp"  # the law every calibration law is contrasted with: -log RBP_1


@dataclass(frozen=True)
class Imposition:
    """How a metric's law is imposed: which linear sums are scaled by the model's factor (the p column only, for
    `nucleus_hits`); none: the target is the law fitted to the population as it is (pseudo-true)."""

    metric: str
    scaled: tuple[str, ...]
    column: int | None = None


IMPOSITIONS = (
    *(Imposition(f"nucleus_{round(100 * p)}", (cal.NUCLEUS_HITS.name,), cal.P_GRID.index(p)) for p in cal.NUCLEUS_P),
    Imposition("brier", (cal.BRIER_SUM.name,)),
    Imposition("overconfidence", (cal.CONFIDENCE_SUM.name, cal.TOP1_HITS.name)),
    Imposition("entropy_gap", (LOGPROB_SUM.name, cal.ENTROPY_SUM.name)),
    Imposition("calibration_error", (cal.BIN_DEVIATION.name,)),
    Imposition("pit_distance", (cal.PIT_DEVIATION.name,)),
    Imposition("nucleus_star", ()),
)


def plug_in(sums: dict[str, np.ndarray]) -> Totals:
    """The population's totals [M, ...] with the documents' squares at 0: its metric values are the truth."""
    totals = {name: s.sum(axis=0) for name, s in sums.items()}
    return Totals({**totals, **{square: np.zeros_like(totals[base]) for square, base in SQUARE_OF.items()}})


def law_exponent(S: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """OLS of log y on log S: the power law's exponent alpha and its fitted y."""
    X = np.stack([np.ones_like(S), np.log(S)], axis=1)
    beta = np.linalg.lstsq(X, np.log(y), rcond=None)[0]
    return float(-beta[1]), np.exp(X @ beta)


def impose(sums: dict[str, np.ndarray], S: np.ndarray, how: Imposition) -> tuple[dict[str, np.ndarray], float]:
    """The population's sums with `how.metric`'s law imposed (module docstring), and the law's exponent."""
    metric = METRICS[how.metric]
    y = metric.to_law(metric.compute(plug_in(sums)))
    alpha, target = law_exponent(S, y)
    factor = metric.from_law(target) / metric.from_law(y)  # the value's factor (|value|'s for a signed metric)
    out = dict(sums)
    for name in how.scaled:
        scaled = sums[name].copy()
        f = factor.reshape(1, -1, *([1] * (scaled.ndim - 2)))
        if how.column is None:
            scaled *= f
        else:
            scaled[..., how.column] *= f[..., 0]
        out[name] = scaled
    return out, alpha


@dataclass(frozen=True)
class Packed:
    """Every law's sums side by side, so a sample's units and replicates take one product each: the linear sums
    [documents, columns] (an array shared by several laws held once) and, for each square a law reads, the columns
    of the sum it squares; where each (law, statistic) lies in them ((start, stop), shape per unit)."""

    linear: np.ndarray
    square_of: np.ndarray
    where: dict[tuple[str, str], tuple[bool, int, int, tuple[int, ...]]]  # (is a square, start, stop, shape)

    @classmethod
    def of(cls, arrays: dict[str, dict[str, np.ndarray]]) -> Packed:
        blocks: list[np.ndarray] = []
        placed: dict[int, tuple[int, int]] = {}
        where: dict[tuple[str, str], tuple[bool, int, int, tuple[int, ...]]] = {}
        squares: list[np.ndarray] = []
        width = sum_width = 0
        for law, sums in arrays.items():
            read = {TOKENS.name, *(s.name for s in METRICS[law].statistics)}
            for name in sorted(read | {SQUARE_OF[r] for r in read if r in SQUARE_OF}):
                if name in SQUARE_OF:
                    continue
                array = sums[name]
                if id(array) not in placed:
                    blocks.append(array.reshape(len(array), -1))
                    placed[id(array)] = (width, width + blocks[-1].shape[1])
                    width += blocks[-1].shape[1]
                where[law, name] = (False, *placed[id(array)], array.shape[1:])
            for square in sorted(r for r in read if r in SQUARE_OF):
                low, high, shape = where[law, SQUARE_OF[square]][1:]
                squares.append(np.arange(low, high))
                where[law, square] = (True, sum_width, sum_width + high - low, shape)
                sum_width += high - low
        return cls(np.concatenate(blocks, axis=1), np.concatenate(squares), where)

    def totals(self, law: str, linear: np.ndarray, squared: np.ndarray) -> Totals:
        """One law's sums [..., M, ...] from the packed ones (units' [units, C] or replicates' [B, C])."""
        lead = linear.shape[:-1]
        return Totals({name: (squared if is_square else linear)[..., a:b].reshape(*lead, *shape)
                       for (owner, name), (is_square, a, b, shape) in self.where.items() if owner == law})  # fmt: skip


@dataclass(frozen=True)
class Population:
    """A dataset's documents [U] scored by the final sizes S [M]: every linear sum [U, M, ...], -log RBP_1 imposed
    (`Pool`: `hits` at k = 1), each calibration law's imposed sums and exponent, all packed."""

    pool: Pool
    sums: dict[str, np.ndarray]
    laws: dict[str, tuple[dict[str, np.ndarray], float]]
    packed: Packed

    @classmethod
    def of(cls, pool: Pool, sums: dict[str, np.ndarray]) -> Population:
        sums = {**sums, TOKENS.name: np.repeat(pool.tokens[:, None], len(pool.S), axis=1),
                HITS.name: pool.hits[:, :, None]}  # fmt: skip
        laws = {how.metric: impose(sums, pool.S, how) for how in IMPOSITIONS}
        return cls(pool, sums, laws, Packed.of({RBP: sums, **{n: law[0] for n, law in laws.items()}}))

    @classmethod
    def load(cls, summary_dir: Path, dataset: str, pool: Pool) -> Population:
        S, boots = final_summaries(summary_dir, dataset)
        assert np.array_equal(S, pool.S)
        per_model = []
        for path in boots:
            with np.load(path) as boot:
                per_model.append({s.name: boot[f"doc_{s.name}"].astype(np.float64) for s in LINEAR})
        return cls.of(pool, {s.name: np.stack([m[s.name] for m in per_model], axis=1) for s in LINEAR})


@dataclass(frozen=True)
class _Scored:
    """What `Replicates` reads of a summary: its key (model, dataset) and k grids."""

    key: tuple[str, str]
    k: tuple[int, ...] = (1,)
    strata_k: tuple[int, ...] = ()


@dataclass
class Counts:
    """One law's counts over a cell's simulations."""

    fitted: int = 0  # samples where every size's value is finite and positive: a law to fit
    gated: int = 0  # of those, samples the tables give no interval (a model's bc interval missing)
    covered: int = 0  # the tables' interval holds the imposed exponent (of those with an interval)
    covered_ungated: int = 0  # the percentile interval, gate ignored, holds it (of all fitted)
    contrast: int = 0  # the contrast's interval (gated like the law) holds the imposed difference
    testable: int = 0  # lof_p finite (n_eff >= 20)
    rejected: int = 0  # lof_p < 0.05
    error: list[float] = field(default_factory=list)  # law's alpha - imposed alpha
    diagnosed: int = 0  # of those fitted, samples with the two counts below (files saved before them have none)
    tau_positive: int = 0  # REML's tau^2 > 0 (the null's is 0)
    covered_documents: int = 0  # the documents-alone interval (alpha_ci_*_documents) holds it


def has_interval(reps: np.ndarray, value: float) -> bool:
    """Whether metrics.csv gives a bootstrap-interval metric of one model an interval: its bias-corrected percentiles
    (`rankscale.bca.bca`, no jackknife: `ci_method` bc) hold the estimate. A law of a model without one gets none
    (`rankscale.tables.lawkit.biased_models`)."""
    found = bca(np.asarray(reps, dtype=np.float64), float(value), np.zeros(0), LEVEL)
    return bool(np.isfinite(found.low) and np.isfinite(found.high))


def sample_laws(population: Population, rows: np.ndarray, replicates: int, seed: int,
                counts: dict[str, Counts]) -> float:  # fmt: skip
    """One sample: every law's interval, contrast and lack of fit through the tables' code; its n_eff."""
    S, M = population.pool.S, len(population.pool.S)
    packed = population.packed
    linear = rows @ packed.linear
    squared = linear[:, packed.square_of] ** 2  # the squares of the units' sums
    size = len(rows)
    reps = replicate_totals({"linear": linear, "squared": squared}, np.arange(size), size, replicates, seed,
                            "calibration-law-nulls", squared=("squared",))  # fmt: skip
    names = [RBP, *population.laws]
    units = {n: packed.totals(n, linear, squared) for n in names}
    scored = [_Scored((f"m{j}", n)) for n in names for j in range(M)]
    by_model = [Totals({k: v[:, j] for k, v in units[n].items()}) for n in names for j in range(M)]
    influence = Replicates(scored, [Totals({})] * len(scored), by_model).influence  # type: ignore[arg-type]
    tokens = units[RBP][TOKENS.name][:, 0]
    n_eff = kish_documents(tokens)
    noise = Noise([str(s) for s in S], None, 0, n_eff - 1.0)
    points, form = Points.of(S), FORMS["power_law"]
    fitted = {}
    for n in names:
        metric = METRICS[n]
        point = Totals({k: v.sum(axis=0) for k, v in units[n].items()})
        rep = packed.totals(n, reps["linear"], reps["squared"])
        values, rep_values = metric.compute(point), metric.compute(rep)
        if n == RBP:
            values, rep_values = values[:, 0], rep_values[:, :, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            y, y_reps = metric.to_law(values), metric.to_law(rep_values)
        if not np.all(np.isfinite(y) & (y > 0)):
            continue
        gated = metric.weight is None and not all(has_interval(rep_values[:, j], values[j]) for j in range(M))
        columns = [influence(f"m{j}", n, metric.name, 1 if n == RBP else None) for j in range(M)]
        documents = Documents(np.stack(columns, axis=1), tokens)
        law = form.fit(points, y)
        fitted[n] = (law, y, y_reps, documents, gated)
        if n == RBP:
            continue
        c, truth = counts[n], population.laws[n][1]
        c.fitted += 1
        c.gated += gated
        honest = LawNoise.of(form, law, points, y, y_reps, noise.with_documents(documents), ("null", n))
        refitted, alone = honest.refit_both(form, law, points, 0)
        low, high = interval(refitted["alpha"], LEVEL, law.alpha)
        low_documents, high_documents = interval(alone["alpha"], LEVEL, law.alpha)
        c.covered_documents += bool(low_documents <= truth <= high_documents)
        c.diagnosed += 1
        c.tau_positive += bool(honest.size_level is not None and honest.size_level.tau2 > 0)
        c.covered_ungated += bool(low <= truth <= high)
        c.covered += bool(low <= truth <= high) and not gated
        c.error.append(float(law.alpha) - truth)
        q_p = honest.size_level.q_p if honest.size_level is not None else math.nan
        c.testable += bool(np.isfinite(q_p))
        c.rejected += bool(q_p < 0.05)
    if RBP not in fitted:
        return n_eff
    law_b, y_b, reps_b, documents_b, _ = fitted[RBP]
    for n, (law, y, y_reps, documents, gated) in fitted.items():
        if n == RBP or gated:
            continue
        contrast = exponent_contrast(form, points, (law, law_b), (y, y_b), (y_reps, reps_b), noise, ("null", n, RBP),
                                     0, (documents, documents_b))  # fmt: skip
        low, high = interval(contrast.replicates, LEVEL, contrast.point)
        counts[n].contrast += bool(low <= population.laws[n][1] - population.pool.alpha_rbp <= high)
    return n_eff


def simulate(cell: str, pools: dict[str, Pool], populations: dict[str, Population], sims: int, replicates: int,
             seed: int) -> tuple[dict[str, Counts], int, float]:  # fmt: skip
    """A cell's counts per law, its simulations and their summed n_eff."""
    rng = np.random.default_rng([seed, CELLS.index(cell)])
    counts = {how.metric: Counts() for how in IMPOSITIONS}
    n_eff = 0.0
    for _ in range(sims):
        pool, rows = draw(cell, pools, rng)
        n_eff += sample_laws(populations[cell.split("-")[0]], rows, replicates, int(rng.integers(2**31)), counts)
    return counts, sims, n_eff


def report(cell: str, counts: dict[str, Counts], sims: int, n_eff: float, seconds: float) -> None:
    """A cell's rows of the table, one per law."""
    for n, c in counts.items():
        with_interval = c.fitted - c.gated
        error = np.asarray(c.error)
        bias = f"{error.mean() / error.std():+.2f}" if error.size > 1 and error.std() > 0 else "n/a"
        print(f"| {cell} | {n_eff:.1f} | {METRICS[n].law} | {c.fitted}/{sims} | {share(c.gated, c.fitted)} | "
              f"{share(c.covered, with_interval)} | {share(c.covered_ungated, c.fitted)} | "
              f"{share(c.contrast, with_interval)} | {bias} | {share(c.testable, c.fitted)} | "
              f"{share(c.rejected, c.testable)} | {share(c.covered_documents, c.diagnosed)} | "
              f"{share(c.tau_positive, c.diagnosed)} | {seconds:.0f} |", flush=True)  # fmt: skip


def merged(paths: list[Path]) -> dict[str, tuple[dict[str, Counts], int, float, float]]:
    """The cells of several `--save` files (runs with different `--seed`s) added together."""
    out: dict[str, tuple[dict[str, Counts], int, float, float]] = {}
    for path in paths:
        for cell, saved in json.loads(path.read_text()).items():
            counts = {n: Counts(**c) for n, c in saved["counts"].items()}
            if cell in out:
                old, sims, n_eff, seconds = out[cell]
                for n, c in counts.items():
                    o = old[n]
                    counts[n] = Counts(*(getattr(o, f.name) + getattr(c, f.name) for f in fields(Counts)))
                out[cell] = counts, sims + saved["sims"], n_eff + saved["n_eff"], seconds + saved["seconds"]
            else:
                out[cell] = counts, saved["sims"], saved["n_eff"], saved["seconds"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--summary-dir", type=Path, default=Path(Layout.SUMMARY).parents[1])
    parser.add_argument("--sims", type=int, default=300)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--cells", nargs="+", default=list(CELLS), choices=CELLS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, help="write the cells' counts here (JSON), for --combine")
    parser.add_argument("--combine", type=Path, nargs="+", help="print the table of these --save files, added")
    args = parser.parse_args()
    print("| cell | n_eff | law | fitted | no interval (gate) | exponent covers | ungated | contrast vs −log RBP_1 "
          "| bias / SD of alpha | lof testable | lof rejects (testable) | documents alone covers | tau² > 0 | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    if args.combine:
        for cell, (counts, sims, n_eff, seconds) in merged(args.combine).items():
            report(cell, counts, sims, n_eff / max(sims, 1), seconds)
        return
    pools = {d: Pool.load(args.summary_dir, d) for d in ("pydoc", "humaneval")}
    populations = {d: Population.load(args.summary_dir, d, pool) for d, pool in pools.items()}
    for d, population in populations.items():
        print(f"{d}: {len(population.pool.tokens)} documents; imposed alpha: -log RBP_1 "
              f"{population.pool.alpha_rbp:.4f}, " + ", ".join(f"{METRICS[n].law} {a:.4f}"
                                                               for n, (_, a) in population.laws.items()))  # fmt: skip
    saved = {}
    for cell in args.cells:
        start = time.perf_counter()
        counts, sims, n_eff = simulate(cell, pools, populations, args.sims, args.replicates, args.seed)
        seconds = time.perf_counter() - start
        report(cell, counts, sims, n_eff / max(sims, 1), seconds)
        saved[cell] = {"sims": sims, "n_eff": n_eff, "seconds": seconds,
                       "counts": {n: asdict(c) for n, c in counts.items()}}  # fmt: skip
        if args.save:
            args.save.write_text(json.dumps(saved))


if __name__ == "__main__":
    main()
