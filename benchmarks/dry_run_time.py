"""Wall time of `snakemake -n` in a finished run's directory, and of what a figure job imports.

Usage: python benchmarks/dry_run_time.py RUN_DIR [--repeats 5] [--figure fig3_rbp1]

RUN_DIR is a checkout whose results are complete (a copy of the default run), with the src/ and workflow/ to be
measured; each repeat is a fresh `snakemake -n` process there (PYTHONPATH=RUN_DIR/src), so the time is planning's:
Python and Snakemake starting, the Snakefile's imports, the configuration stage and the DAG. The figure job's time
is a fresh interpreter importing what workflow/scripts/figure.py imports, and the figure's plot function (resolved
from its entry where entries name it "module:function", else taken from the registry, which imported every topic).
Prints the median and every repeat; the machine's load shows in the spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIGURE_IMPORTS = """
import time
t = time.perf_counter()
from rankscale.plots import FIGURES
from rankscale.summary import SummaryPaths, load_histogram, load_replicates, read_summary
entry = FIGURES[{figure!r}]
plot = entry.plotter() if hasattr(entry, "plotter") else entry.plot
from rankscale.tables.base import Replicates, read_table
import sys
print(time.perf_counter() - t, len([m for m in sys.modules if m.startswith("rankscale.plots.")]))
"""


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--figure", default="fig3_rbp1")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.run_dir / "src")}
    snakemake = str(Path(sys.executable).parent / "snakemake")
    runs = [timed([snakemake, "-n", "--quiet"], args.run_dir, env) for _ in range(args.repeats)]
    print(f"snakemake -n: median {statistics.median(runs):.2f} s; {', '.join(f'{r:.2f}' for r in runs)}")
    figure = []
    for _ in range(args.repeats):
        out = subprocess.run([sys.executable, "-c", FIGURE_IMPORTS.format(figure=args.figure)], cwd=args.run_dir,
                             env=env, check=True, capture_output=True, text=True).stdout.split()  # fmt: skip
        figure.append((float(out[0]), int(out[1])))
    seconds = [s for s, _ in figure]
    print(f"figure job's imports ({args.figure}): median {statistics.median(seconds):.2f} s; "
          f"{', '.join(f'{s:.2f}' for s in seconds)}; rankscale.plots modules loaded: {figure[0][1]}")  # fmt: skip


if __name__ == "__main__":
    main()
