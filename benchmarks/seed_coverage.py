"""Coverage of a law's exponent interval when the training run is a source of noise (docs/science.md,
"Uncertainty": seeds within each size, then documents), through powerlaw_fits.csv's own code.

A family of six sizes, each trained with three seeds and scored on the same 80 documents of 60 tokens
(tests/test_seeds.py's `simulate`): -log RBP_1 = C S^-alpha holds for the population of training runs, each run
departs from it by a lognormal seed effect (`--seed-effect`), documents differ in difficulty (shared by every
run). Each simulation fits the law with `fits_table` (B = 400) twice: the runs pooled as seeds of their size
(the hierarchical bootstrap, then the sizes' scatter), and each run taken for a size of its own (documents, then
the sizes' scatter); it counts how often the table's interval, and the one of its resampled sources alone
(`alpha_ci_*_documents`: documents and seeds, or documents), holds the true exponent.

    python benchmarks/seed_coverage.py [--sims 200] [--seed-effect 0.08]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the synthetic family is tests/test_seeds.py's, so both draw the same families
sys.path.insert(0, str(REPO / "src"))  # this checkout's package, not an installed copy

from rankscale.laws import FORMS  # noqa: E402
from rankscale.tables.laws import fits_table  # noqa: E402
from tests.test_seeds import ALPHA, simulate  # noqa: E402


def coverage(seed_effect: float, pooled_seeds: bool, simulations: int) -> tuple[float, float]:
    """(the table's interval, the resampled sources' interval beside it): shares covering the true exponent."""
    covered = [0, 0]
    for sim in range(simulations):
        metrics, replicates = simulate(sim, seed_effect, pooled_seeds)
        fit = fits_table(metrics, FORMS["power_law"], replicates, 0.95, 0, sim).iloc[0]
        assert fit["noise"] == ("documents+seeds+sizes" if pooled_seeds else "documents+sizes")
        covered[0] += bool(fit["alpha_ci_low"] <= ALPHA <= fit["alpha_ci_high"])
        covered[1] += bool(fit["alpha_ci_low_documents"] <= ALPHA <= fit["alpha_ci_high_documents"])
    return covered[0] / simulations, covered[1] / simulations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--seed-effect", type=float, default=0.08, help="SD of a run's log deviation")
    args = parser.parse_args()
    start = time.perf_counter()
    pooled, seeds_only = coverage(args.seed_effect, pooled_seeds=True, simulations=args.sims)
    one_run, documents_only = coverage(args.seed_effect, pooled_seeds=False, simulations=args.sims)
    found = {"documents+seeds+sizes (runs as seeds)": pooled, "documents+seeds (runs as seeds)": seeds_only,
             "documents+sizes (runs as sizes)": one_run, "documents (runs as sizes)": documents_only}  # fmt: skip
    print(f"coverage of the true exponent by 95% intervals, seed effect {args.seed_effect}, {args.sims} families "
          f"each way; {time.perf_counter() - start:.0f} s")  # fmt: skip
    print("| interval | coverage |")
    print("| --- | --- |")
    for name, share in found.items():
        print(f"| {name} | {100 * share:.1f} ± {100 * math.sqrt(share * (1 - share) / args.sims):.1f}% |")


if __name__ == "__main__":
    main()
