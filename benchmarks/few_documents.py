"""Few documents: the lack-of-fit test, tau^2 and the intervals when the document covariance V is itself a bootstrap
over few documents (docs/science.md, "Few documents").

Synthetic datasets whose documents have the token counts of a real one (`--counts`: pydoc in the default run, 27
documents from 73 to 7,153 tokens, Kish's effective number 6.6; `--repeat R` repeats that list R times). A document
d scored by model m (the ladder's six sizes) has a mean cross-entropy

    ce_dm = c_m + delta_d + gamma_d t_m + eta_d + eps_dm,

c_m = C S_m^-alpha an exact power law (no size scatter: the null), delta_d ~ N(0, 0.25^2) the document's
difficulty, gamma_d ~ N(0, 0.06^2) how much more (or less) the larger models gain on it (t_m: log S scaled to
[-1, 1]), eta_d ~ N(0, 2.5^2 / n_d) and eps_dm ~ N(0, 0.6^2 / n_d) the mean of n_d tokens' noise, shared and per
model. This gives what pydoc gives the default ladder: documents' CE spread 0.3 nats, correlation 0.95-0.99 between
models, bootstrap SD of log CE about 0.014. Each simulation runs the workflow's own code: per-document sums, the
document bootstrap (`rankscale.bootstrap.replicate_totals`, B replicates), each model's CE and its interval
(metrics.csv's expanded percentile on Kish's n_eff, and the plain percentile), the power law's size level
(`rankscale.tables.noise.size_level_of`) with V taken as known (chi^2, as before), with its degrees of freedom from
Kish's n_eff (Hotelling's T^2), and with Q and its null from the documents' own influence and lengths
(`rankscale.laws.few_documents`: what the tables use under 30 effective documents), and the exponent's interval
from the workflow's refits with the size level (`LawNoise`).

`--noise documents` gives each document's CE a noise whose variance does not fall with its length (whole documents
differ, eps_dm ~ N(0, 0.06^2)) in place of the tokens' (eps_dm ~ N(0, 0.6^2 / n_d)), the other end of what the test
allows for.

    python benchmarks/few_documents.py [--sims 1000] [--replicates 1000] [--repeat 1 2 4 8]

Two studies of one piece each, without the rest of the path:

- `--study sign-flip`: the test from the documents (`few_documents_test`, its floor of 20 effective documents
  lifted) and chi^2 on exact laws whose documents are Gaussian with the counts' token counts, each document's
  influence a_u = n_u (x_u - mean) / N with x_u ~ N(0, I n_u^(power - 2)) (`--power 1`: the mean of its tokens'
  noise; 2: a document's own noise whatever its length): the share rejected at 5%.
- `--study expansion`: the mean of `--documents` Normal values bootstrapped over them as the workflow does
  (`replicate_totals`): coverage of the plain and of the expanded percentile interval (`interval(..., n_eff)`).

    python benchmarks/few_documents.py --study sign-flip [--sims 2000] [--power 1 2] [--repeat 1]
    python benchmarks/few_documents.py --study expansion [--sims 2000] [--documents 8]
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np

from rankscale.bootstrap import interval, kish_documents, replicate_totals
from rankscale.laws import FORMS, Points
from rankscale.laws.few_documents import Documents
from rankscale.tables.noise import LawNoise, Noise, covariance_df, size_level_of

SIZES = np.array([25_472, 77_568, 172_800, 473_088, 1_198_080, 3_159_552], dtype=np.float64)  # the ladder's S
PYDOC = [73, 84, 108, 109, 144, 164, 168, 182, 182, 196, 252, 288, 309, 328, 332, 341, 369, 377, 405, 498, 557, 902,
         1040, 1786, 2898, 3626, 7153]  # fmt: skip  # pydoc's documents under the default ladder's tokenizer
ALPHA = 0.018  # the default ladder's CE exponent on pydoc
CE_SMALLEST = 5.64
LEVEL = 0.95


@dataclass(frozen=True)
class Result:
    """One document-count scenario: rejection rates at 5%, the share with tau^2 > 0, coverages, in percent."""

    documents: int
    n_eff: float
    chi2_rejects: float
    hotelling_rejects: float
    documents_rejects: float  # the tables' test under FEW_DOCUMENTS effective documents (`laws.few_documents`)
    untestable: float  # Hotelling's F has no denominator df: too few documents to test
    tau_positive: float
    metric_coverage: float  # each model's CE interval (metrics.csv's: expanded percentile) covering c_m, all pooled
    metric_plain: float  # the plain percentile interval of earlier commits
    exponent_coverage: float  # the workflow's interval (documents + sizes)
    exponent_documents: float  # documents alone

    def line(self) -> str:
        return (f"{self.documents:4d} documents, n_eff {self.n_eff:6.1f}: lack of fit rejects {self.chi2_rejects:5.1f}% "
                f"(chi^2) / {self.hotelling_rejects:5.1f}% (Hotelling; untestable {self.untestable:4.1f}%) / "
                f"{self.documents_rejects:5.1f}% (from the documents); tau^2 > 0 "
                f"{self.tau_positive:5.1f}%; CE interval covers {self.metric_coverage:5.1f}% (plain percentile "
                f"{self.metric_plain:5.1f}%); exponent covers "
                f"{self.exponent_coverage:5.1f}% (documents alone {self.exponent_documents:5.1f}%)")  # fmt: skip


def simulate(counts: np.ndarray, sims: int, replicates: int, seed: int, noise: str = "tokens") -> Result:
    rng = np.random.default_rng(seed)
    form = FORMS["power_law"]
    points = Points.of(SIZES)
    c = CE_SMALLEST * (SIZES / SIZES[0]) ** -ALPHA
    t = np.linspace(-1.0, 1.0, len(SIZES))
    n = np.asarray(counts, dtype=np.float64)
    n_eff = kish_documents(n)
    nu = covariance_df([n_eff])
    units = np.arange(len(n))
    tallies = dict.fromkeys(
        ("chi2", "hotelling", "from_documents", "untestable", "tau", "metric", "plain", "exponent", "documents"), 0
    )
    for i in range(sims):
        delta = rng.normal(0.0, 0.25, len(n))[:, None]
        gamma = rng.normal(0.0, 0.06, len(n))[:, None] * t[None, :]
        eta = rng.normal(0.0, 2.5, len(n))[:, None] / np.sqrt(n)[:, None]
        eps = rng.normal(0.0, 0.6, (len(n), len(SIZES))) / np.sqrt(n)[:, None]
        if noise == "documents":  # a document's own per-model noise, whatever its length
            eps = rng.normal(0.0, 0.06, (len(n), len(SIZES)))
        ce = c[None, :] + delta + gamma + eta + eps  # [D, M] each document's mean CE
        sums = {"n": n, "ce": n[:, None] * ce}
        reps = replicate_totals(sums, units, len(n), replicates, seed, "few documents", str(i))
        y = sums["ce"].sum(axis=0) / n.sum()
        y_reps = reps["ce"] / reps["n"][:, None]
        for key, n_units in (("metric", n_eff), ("plain", math.inf)):
            low, high = interval(y_reps, LEVEL, n_eff=n_units)
            tallies[key] += int(((low <= c) & (c <= high)).sum())
        law = form.fit(points, y)
        groups = [str(s) for s in SIZES]
        influence = sums["ce"] / sums["ce"].sum(axis=0)[None, :] - (n / n.sum())[:, None]  # d log CE per document
        documents = Documents(influence, n)
        for name, df, each in (("chi2", math.inf, None), ("hotelling", nu, None), ("from_documents", nu, documents)):
            level = size_level_of(form, law, points, np.log(y), np.log(y_reps), groups, documents_df=df,
                                  documents=each)  # fmt: skip
            if level is None:
                continue
            if name == "chi2":
                tallies["tau"] += int(level.tau2 > 0)
            if np.isnan(level.q_p):
                tallies["untestable"] += int(name == "hotelling")
            else:
                tallies[name] += int(level.q_p < 0.05)
        honest = LawNoise.of(form, law, points, y, y_reps, Noise(groups, None, seed, nu), ("few", str(i)))
        for key, refits in (("exponent", honest.refit(form, law, points, 0)),
                            ("documents", form.fit_replicates(points, honest.documents, law, 0))):  # fmt: skip
            lo, hi = interval(refits["alpha"], LEVEL, float(law.row()["alpha"]))
            tallies[key] += int(lo <= ALPHA <= hi)
    pct = lambda k, total=sims: 100.0 * tallies[k] / total  # noqa: E731
    return Result(len(n), n_eff, pct("chi2"), pct("hotelling"), pct("from_documents"), pct("untestable"), pct("tau"),
                  pct("metric", sims * len(SIZES)), pct("plain", sims * len(SIZES)), pct("exponent"),
                  pct("documents"))  # fmt: skip


def weighted_documents(rng: np.random.Generator, tokens: np.ndarray, points: int,
                       power: float = 1.0) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each document's influence on the token-weighted mean of `points` quantities, a_u = n_u (x_u - mean) / N,
    with x_u ~ N(0, I n_u^(power - 2)): power 1, the mean of n_u tokens' noise; 2, a document's own noise whatever
    its length (Sum a_u = 0, and Sum a_u a_u^T is the bootstrap's V); and the mean itself."""
    x = rng.standard_normal((len(tokens), points)) * np.sqrt(tokens ** (power - 2.0))[:, None]
    mean = tokens @ x / tokens.sum()
    return tokens[:, None] * (x - mean[None, :]) / tokens.sum(), mean


def sign_flip_level(counts: np.ndarray, sims: int, power: float, seed: int) -> tuple[float, float]:
    """Shares of exact laws (six sizes) rejected at 5% by the test from the documents, its floor lifted, and by
    chi^2 on the documents' V, over `sims` Gaussian document sets (`weighted_documents`)."""
    from rankscale.laws.few_documents import few_documents_test
    from rankscale.laws.random_effects import lack_of_fit

    rng = np.random.default_rng(seed)
    tokens = np.asarray(counts, dtype=np.float64)
    X = np.stack([np.ones(len(SIZES)), np.log(SIZES)], axis=1)
    L = np.linalg.qr(X, mode="complete")[0][:, 2:]
    rejected = chi2 = 0
    for _ in range(sims):
        a, mean = weighted_documents(rng, tokens, len(SIZES), power)
        y = X @ np.array([1.0, -0.05]) + mean
        rejected += few_documents_test(L, y, Documents(a, tokens), min_documents=0.0)[1] < 0.05
        chi2 += lack_of_fit(X, y, a.T @ a)[2] < 0.05
    return rejected / sims, chi2 / sims


def expansion_coverage(documents: int, sims: int, replicates: int, seed: int) -> tuple[float, float]:
    """Coverage of the true mean 0 by the plain and the expanded 95% percentile interval of the mean of
    `documents` N(0, 1) values, bootstrapped over them (B `replicates`)."""
    rng = np.random.default_rng(seed)
    covered = {"plain": 0, "expanded": 0}
    for i in range(sims):
        values = rng.normal(0.0, 1.0, documents)
        units = np.arange(documents)
        reps = replicate_totals({"x": values}, units, documents, replicates, seed, "expanded", str(i))["x"] / documents
        for key, n_eff in (("plain", math.inf), ("expanded", float(documents))):
            low, high = interval(reps, LEVEL, n_eff=n_eff)
            covered[key] += int(low <= 0.0 <= high)
    return covered["plain"] / sims, covered["expanded"] / sims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeat", type=int, nargs="+", default=[1, 2, 4, 8], help="pydoc's counts repeated R times")
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--noise", choices=["tokens", "documents"], default="tokens")
    parser.add_argument("--study", choices=["workflow", "sign-flip", "expansion"], default="workflow")
    parser.add_argument("--power", type=float, nargs="+", default=[1.0, 2.0], help="sign-flip: documents' noise")
    parser.add_argument("--documents", type=int, default=8, help="expansion: documents per sample")
    args = parser.parse_args()
    se = lambda p: math.sqrt(p * (1.0 - p) / args.sims)  # noqa: E731
    if args.study == "sign-flip":
        print(f"{args.sims} Gaussian document sets a row, exact laws of six sizes; rejected at 5%")
        print("| R | n_eff | power | from the documents (floor lifted) | chi^2 |")
        print("| --- | --- | --- | --- | --- |")
        for r in args.repeat:
            counts = np.tile(PYDOC, r)
            for power in args.power:
                flip, chi2 = sign_flip_level(counts, args.sims, power, args.seed + r)
                print(f"| {r} | {kish_documents(np.asarray(counts, dtype=np.float64)):.1f} | {power:g} "
                      f"| {100 * flip:.1f} ± {100 * se(flip):.1f}% | {100 * chi2:.1f}% |", flush=True)  # fmt: skip
        return
    if args.study == "expansion":
        plain, expanded = expansion_coverage(args.documents, args.sims, args.replicates, args.seed)
        print(f"mean of {args.documents} Normal documents, {args.sims} samples, B = {args.replicates}: 95% interval "
              f"covers {100 * plain:.1f} ± {100 * se(plain):.1f}% (plain percentile), "
              f"{100 * expanded:.1f} ± {100 * se(expanded):.1f}% (expanded)")  # fmt: skip
        return
    print(f"{args.sims} simulations per row, B = {args.replicates}, alpha = {ALPHA}, no size scatter (the null), "
          f"{args.noise}' noise")  # fmt: skip
    for r in args.repeat:
        print(simulate(np.tile(PYDOC, r), args.sims, args.replicates, args.seed + r, args.noise).line(), flush=True)


if __name__ == "__main__":
    main()
