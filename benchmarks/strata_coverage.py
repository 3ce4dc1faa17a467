"""Coverage of a stratum's exponent interval when tokens within a document are correlated (docs/science.md,
"Strata" and "Uncertainty"), through the strata tables' own code.

A family of six sizes whose tokens of frequency bin b have RBP_1 = exp(-C_b S^-alpha_b) (1 + u_d + v_d t(S)) in
document d (tests/test_strata.py's `Planted`: each document's difficulty u_d and its own gain with size v_d,
shared by its tokens and by every size; exponents 0.05 / 0.10 / 0.20 by bin; 60 documents of 100 tokens). Each
simulation draws the family, computes the per-document statistics of every stratum and their paired replicates
(`replicate_totals`, one draw a replicate for the whole family, as `summarize` draws them), and fits
strata_fits.csv (`strata_fits_table`). It counts how often the 95% interval of each bin's exponent holds the
planted one: the table's (documents and the sizes' scatter) and the resampled unit's alone; with documents as the
resampled unit, and with each token its own unit (a token bootstrap, which ignores the documents' effects).

    python benchmarks/strata_coverage.py [--sims 200] [--token-sims 50] [--replicates 400] [--token-replicates 200]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the planted family is tests/test_strata.py's, so both draw the same families
sys.path.insert(0, str(REPO / "src"))  # this checkout's package, not an installed copy

from rankscale.bootstrap import replicate_totals  # noqa: E402
from rankscale.laws import FORMS  # noqa: E402
from rankscale.rankfile import RankArrays  # noqa: E402
from rankscale.statistics import STRATIFIED, Totals  # noqa: E402
from rankscale.strata import StrataSettings, StrataTokens, assign, bin_labels  # noqa: E402
from rankscale.summary import per_document  # noqa: E402
from rankscale.tables import Replicates  # noqa: E402
from rankscale.tables.strata import strata_fits_table  # noqa: E402
from tests.synthetic import summary as synthetic_summary  # noqa: E402
from tests.test_strata import FREQUENCY_EDGES, LEVEL, PLANTED_WINDOWS, SIZES, Planted, frequency_law  # noqa: E402

COVERAGE = Planted(alphas=(0.05, 0.10, 0.20), n_docs=60, per_doc=100, difficulty=0.25, gain=0.25, vocab=500)
COVERAGE_STRATA = StrataSettings(["frequency"], {"frequency": FREQUENCY_EDGES}, [1])
USED = [*STRATIFIED, *(s.name for s in STRATIFIED.values())]  # what RBP_1 and CE read, of all tokens and by stratum


def simulate_fits(sim: int, replicates: dict[str, int]) -> dict[str, pd.DataFrame]:
    """One simulated family: its strata fits per resampled unit of `replicates` ("documents": summarize's
    per-document statistics and replicate totals; "tokens": the same, each token its own resampling unit)."""
    rng = np.random.default_rng(1000 + sim)
    target, bins, effects = COVERAGE.draw(rng)
    arrays = [COVERAGE.rank_arrays(rng, S, target, bins, effects) for S in SIZES]
    tokens = StrataTokens(target, arrays[0].doc, arrays[0].pos, PLANTED_WINDOWS, None)
    strata, index = assign(COVERAGE_STRATA, tokens)
    out = {}
    for unit, count in replicates.items():
        blocks = []  # (size, statistic, [units, ...])
        for i, a in enumerate(arrays):
            docs = a.doc if unit == "documents" else np.arange(a.rank.size, dtype=np.uint32)
            _, stats = per_document(RankArrays(a.rank, a.logprob, docs, a.pos, a.target), [1], [], [],
                                    (index, len(strata), [1]))  # fmt: skip
            blocks += [(i, name, stats[name]) for name in USED]
        # every statistic of every size in one matrix: one document draw per replicate for the whole family
        # (paired, as summarize draws them), and one product per block of replicates
        n_units = len(blocks[0][2])
        matrix = np.concatenate([b.reshape(n_units, -1).astype(np.float64) for _, _, b in blocks], axis=1)
        reps = replicate_totals({"all": matrix}, np.arange(n_units), n_units, count, sim, "f", "d")
        sums: list[dict[str, np.ndarray]] = [{} for _ in SIZES]
        rep: list[dict[str, np.ndarray]] = [{} for _ in SIZES]
        column = 0
        for i, name, b in blocks:
            width = b[0].size
            sums[i][name] = b.sum(axis=0)
            rep[i][name] = reps["all"][:, column : column + width].reshape(-1, *b.shape[1:])
            column += width
        summaries = [synthetic_summary(f"m{i}", S, sums[i], [1], strata_columns=strata, strata_k=[1])
                     for i, S in enumerate(SIZES)]  # fmt: skip
        totals = [Totals(r) for r in rep]
        out[unit] = strata_fits_table(summaries, FORMS["power_law"], Replicates(summaries, totals), LEVEL, 0, sim)
    return out


def coverage(sims: dict[str, int], replicates: dict[str, int]) -> dict[str, dict[str, float]]:
    """Per resampled unit and frequency bin, the share of 95% intervals of alpha that hold the planted alpha: the
    table's (`<unit>`) and the one the resampled unit alone gives (`<unit> alone`)."""
    covered: dict[str, Counter[str]] = {key: Counter() for unit in sims for key in (unit, f"{unit} alone")}
    for sim in range(max(sims.values())):
        units = {unit: replicates[unit] for unit, n in sims.items() if sim < n}
        for unit, fits in simulate_fits(sim, units).items():
            law = frequency_law(fits, "f")
            for label, alpha in zip(bin_labels(FREQUENCY_EDGES), COVERAGE.alphas, strict=True):
                covered[unit][label] += bool(law.loc[label, "alpha_ci_low"] <= alpha <= law.loc[label, "alpha_ci_high"])
                alone = law.loc[label, "alpha_ci_low_documents"] <= alpha <= law.loc[label, "alpha_ci_high_documents"]
                covered[f"{unit} alone"][label] += bool(alone)
    return {key: {label: n / sims[key.split()[0]] for label, n in counts.items()} for key, counts in covered.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=200, help="families with the document bootstrap")
    parser.add_argument("--token-sims", type=int, default=50, help="families with a token bootstrap (costlier)")
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--token-replicates", type=int, default=200)
    args = parser.parse_args()
    sims = {"documents": args.sims, "tokens": args.token_sims}
    replicates = {"documents": args.replicates, "tokens": args.token_replicates}
    start = time.perf_counter()
    found = coverage(sims, replicates)
    labels = bin_labels(FREQUENCY_EDGES)
    print(f"coverage of each frequency bin's planted alpha ({', '.join(map(str, COVERAGE.alphas))}) by 95% intervals; "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    print(f"| interval | simulations | B | {' | '.join(labels)} |")
    print("| --- | --- | --- |" + " --- |" * len(labels))
    for key, shares in found.items():
        unit = key.split()[0]
        cells = " | ".join(f"{100 * shares[b]:.1f} ± {100 * math.sqrt(shares[b] * (1 - shares[b]) / sims[unit]):.1f}%"
                           for b in labels)  # fmt: skip
        print(f"| {key} | {sims[unit]} | {replicates[unit]} | {cells} |")


if __name__ == "__main__":
    main()
