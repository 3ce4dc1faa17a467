"""Time of `snakemake -n` in finished runs' directories, and of what a figure job imports, before and after a change.

Usage: python benchmarks/dry_run_time.py RUN_DIR [RUN_DIR ...] [--repeats 5] [--figure fig3_rbp1] [--cold]

Each RUN_DIR is a checkout whose results are complete (a copy of the default run) with the src/ and workflow/ to be
measured; the directories take turns, repeat by repeat, so a change in the machine's load falls on all of them. Each
repeat is a fresh `snakemake -n` process (PYTHONPATH=RUN_DIR/src): Python and Snakemake starting, the Snakefile's
imports, the configuration stage and the DAG. The figure job's time is a fresh interpreter importing what
workflow/scripts/figure.py imports and the figure's plot function (resolved from its entry where entries name it
"module:function", else the registry's, which imported every topic). Wall time and CPU time (user + system, of the
child processes: less moved by other work on a shared machine) are medians over the repeats.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIGURE_IMPORTS = """
import sys, time
t = time.perf_counter()
from rankscale.plots import FIGURES
from rankscale.summary import SummaryPaths, load_histogram, load_replicates, read_summary
entry = FIGURES[__FIGURE_NAME__]
plot = entry.plotter() if hasattr(entry, "plotter") else entry.plot
from rankscale.tables.base import Replicates, read_table
topics = ("emergence", "extrapolation", "laws", "lognormal", "seeds", "strata", "tokens", "training")
print(time.perf_counter() - t, sum("rankscale.plots." + topic in sys.modules for topic in topics))
"""


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and stdout of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dirs", type=Path, nargs="+")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--figure", default="fig3_rbp1")
    # planning's table and figure digests afresh, as after any edit (rankscale.fingerprint.CODE_CACHE removed)
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    snakemake = str(Path(sys.executable).parent / "snakemake")
    figure = FIGURE_IMPORTS.replace("__FIGURE_NAME__", repr(args.figure))
    dry: dict[Path, list[tuple[float, float]]] = {d: [] for d in args.run_dirs}
    imports: dict[Path, list[tuple[float, int]]] = {d: [] for d in args.run_dirs}
    for _ in range(args.repeats):
        for run_dir in args.run_dirs:
            env = {**os.environ, "PYTHONPATH": str(run_dir / "src")}
            if args.cold:
                (run_dir / ".snakemake/rankscale/code.json").unlink(missing_ok=True)
            wall, cpu, _ = timed([snakemake, "-n", "--quiet"], run_dir, env)
            dry[run_dir].append((wall, cpu))
            _, _, out = timed([sys.executable, "-c", figure], run_dir, env)
            seconds, topics = out.split()
            imports[run_dir].append((float(seconds), int(topics)))
    for run_dir in args.run_dirs:
        walls, cpus = zip(*dry[run_dir], strict=True)
        seconds = [s for s, _ in imports[run_dir]]
        print(f"{run_dir}: snakemake -n wall median {statistics.median(walls):.2f} s "
              f"({', '.join(f'{w:.2f}' for w in walls)}), CPU median {statistics.median(cpus):.2f} s; "
              f"figure job's imports ({args.figure}) median {statistics.median(seconds):.2f} s "
              f"({', '.join(f'{s:.2f}' for s in seconds)}), plot topic modules imported: {imports[run_dir][0][1]} of 8")  # fmt: skip


if __name__ == "__main__":
    main()
