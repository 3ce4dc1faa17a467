"""What adding one model costs after a complete run (README: "Adding models and sharing rank arrays").

In a fresh copy of the working tree (no results/, no .snakemake/): time the full default run, then
append one ladder size through a second config file and time the rerun. The new model's own
training and extraction times, and the downstream analysis (its summaries, the tables and the
figures), come from Snakemake's `benchmark:` files. The target: the rerun costs at most the new
model's own time plus the downstream analysis, plus 20%.

    python benchmarks/add_model.py [--workdir DIR] [--cores 2]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
NEW_SIZE = {"name": "ladder-l4-d160", "layers": 4, "d_model": 160, "heads": 4}


def copy_tree(dest: Path) -> None:
    """Copy what git would hand a colleague (tracked and untracked-but-not-ignored files)."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src, dst = REPO / name.decode(), dest / name.decode()
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())


def timed_snakemake(workdir: Path, *args: str) -> float:
    """Wall time of one real Snakemake run; raises if it fails."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return wall


def planned_jobs(workdir: Path, *args: str) -> dict[str, int]:
    """Jobs per rule that a dry run plans, from Snakemake's job-stats table."""
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", *args], cwd=workdir, capture_output=True, text=True, check=True
    )
    counts: dict[str, int] = {}
    lines = (result.stdout + result.stderr).splitlines()
    if "Job stats:" in lines:
        for line in lines[lines.index("Job stats:") + 3 :]:
            parts = line.split()
            if len(parts) != 2 or parts[0] == "total":
                break
            counts[parts[0]] = int(parts[1])
    return counts


def bench_seconds(path: Path) -> float:
    """The `s` column of a Snakemake benchmark file."""
    with open(path) as fh:
        return float(next(csv.DictReader(fh, delimiter="\t"))["s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=None, help="fresh directory to run in (default: a temp dir)")
    parser.add_argument("--cores", default="2")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="rankscale-add-model-"))
    workdir.mkdir(parents=True, exist_ok=True)
    copy_tree(workdir)

    load_before = os.getloadavg()[0]  # other work on the machine inflates every wall time below
    full = timed_snakemake(workdir, "--cores", args.cores)

    config = yaml.safe_load((workdir / "config/config.yaml").read_text())
    sizes = config["ladder"]["sizes"] + [NEW_SIZE]  # Snakemake replaces lists when merging config files
    (workdir / "config/add_model.yaml").write_text(yaml.safe_dump({"ladder": {"sizes": sizes}}, sort_keys=False))
    configs = ["--configfile", "config/config.yaml", "config/add_model.yaml"]
    plan = planned_jobs(workdir, "--cores", args.cores, *configs)
    rerun = timed_snakemake(workdir, "--cores", args.cores, *configs)

    bench = workdir / "results/benchmarks"
    name = NEW_SIZE["name"]
    train = bench_seconds(bench / f"ladder_train/{name}.tsv")
    extract = sum(bench_seconds(p) for p in sorted((bench / f"extract/{name}").glob("*.tsv")))
    analysis = (
        sum(bench_seconds(p) for p in sorted((bench / f"summarize/{name}").glob("*.tsv")))
        + bench_seconds(bench / "tables.tsv")
        + bench_seconds(bench / "figures.tsv")
    )
    budget = 1.2 * (train + extract + analysis)
    report = {
        "cores": args.cores,
        "workdir": str(workdir),
        "full_run_s": round(full, 1),
        "added_model": name,
        "rerun_planned_jobs": plan,
        "rerun_s": round(rerun, 1),
        "new_model_train_s": round(train, 1),
        "new_model_extract_s": round(extract, 1),
        "downstream_analysis_s": round(analysis, 1),
        "target_s": round(budget, 1),
        "within_target": rerun <= budget,
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(report, indent=2))
    (workdir / "add_model_benchmark.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
