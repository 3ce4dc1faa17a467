"""What adding one model costs after a complete run (docs/sharing.md: "What adding a model costs").

In a fresh copy of the working tree (what git would hand a colleague: no results/, no .snakemake/):
time the full default run, then add one ladder size through a second config file and time the
rerun. The new model's own cost (its `ladder_train` and `extract` jobs) and the downstream analysis
(its `summarize` jobs and every `table` and `figure` job the rerun ran) come from Snakemake's
`benchmark:` files, counting only those the rerun wrote: results/benchmarks/{extract,summarize}/<model>/,
logs/ladder/<ladder key>/benchmarks/ (ladder_train) and results/<run>/benchmarks/{tables,figures}/.
Target: the rerun costs at most 1.2 x (the new model's own time + the downstream analysis).

    python benchmarks/add_model.py [--workdir DIR] [--cores 2]   # config/config.yaml (~15 min on 2 cores)
    python benchmarks/add_model.py --quick                        # config/smoke.yaml (a few minutes)

--device and --dtype become the extraction settings of both runs; --threads and --repeats are unused.
With --workdir the run is kept there, with the numbers in DIR/add_model_benchmark.json; without it,
a temporary directory is used and removed.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import yaml

from rankscale.layout import Layout
from rankscale.share import configured

NEW_SIZE = {"name": "ladder-l4-d160", "layers": 4, "d_model": 160, "heads": 4}
NEW_SMOKE_SIZE = {"name": "smoke-d", "layers": 2, "d_model": 48, "heads": 2}


def copy_tree(dest: Path) -> None:
    """Copy the tracked and untracked-but-not-ignored files."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=harness.REPO,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src, dst = harness.REPO / name.decode(), dest / name.decode()
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())


def snakemake(workdir: Path, *args: str, dry: bool = False) -> tuple[float, str]:
    """Wall time and output of one real Snakemake run; exits if it fails."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", *(["-n"] if dry else []), *args],
        cwd=workdir,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return time.perf_counter() - started, result.stdout + result.stderr


def job_stats(output: str) -> dict[str, int]:
    """Jobs per rule from Snakemake's job-stats table."""
    lines = output.splitlines()
    counts: dict[str, int] = {}
    if "Job stats:" in lines:
        for line in lines[lines.index("Job stats:") + 3 :]:
            parts = line.split()
            if len(parts) != 2 or parts[0] == "total":
                break
            counts[parts[0]] = int(parts[1])
    return counts


def seconds(paths: list[Path]) -> float:
    """Sum of the `s` column of Snakemake benchmark files."""
    total = 0.0
    for path in paths:
        with open(path) as fh:
            total += float(next(csv.DictReader(fh, delimiter="\t"))["s"])
    return total


def main(argv: list[str] | None = None) -> str:
    p = harness.parser(__doc__, repeats=1)
    p.add_argument("--workdir", type=Path, help="fresh directory to run in (default: a new temporary one)")
    p.add_argument("--cores", default="2")
    b = harness.start("add_model", p, argv)
    a = b.args
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="rankscale-add-model-"))
    workdir.mkdir(parents=True, exist_ok=True)
    copy_tree(workdir)
    base, new = ("config/smoke.yaml", NEW_SMOKE_SIZE) if a.quick else ("config/config.yaml", NEW_SIZE)
    config = yaml.safe_load((workdir / base).read_text())
    (workdir / "config/bench.yaml").write_text(yaml.safe_dump({"extraction": {"device": a.device, "dtype": a.dtype}}))
    sizes = config["ladder"]["sizes"] + [new]  # Snakemake replaces lists when it merges config files
    (workdir / "config/add_model.yaml").write_text(yaml.safe_dump({"ladder": {"sizes": sizes}}, sort_keys=False))
    first = ["--cores", a.cores, "--configfile", base, "config/bench.yaml"]
    full, _ = snakemake(workdir, *first)
    rerun_args = [*first, "config/add_model.yaml"]
    plan = job_stats(snakemake(workdir, *rerun_args, dry=True)[1])
    rerun_start = time.time()
    rerun, _ = snakemake(workdir, *rerun_args)

    _, _, files = configured(rerun_args[rerun_args.index("--configfile") + 1 :], workdir)
    bench = {  # where each rule's benchmark files are (rankscale.layout, workflow/rules/ladder.smk)
        "ladder_train": workdir / Path(files.ladder.benchmark()).parent,
        "extract": workdir / Path(Layout.EXTRACT_BENCHMARK).parents[1],  # <model>/<ranks>.tsv below it
        "summarize": workdir / Path(Layout.SUMMARIZE_BENCHMARK).parents[1],
        "tables": workdir / Path(files.run_benchmark("tables", "any")).parent,
        "figures": workdir / Path(files.run_benchmark("figures", "any")).parent,
    }
    fresh = lambda rule, pattern: sorted(  # noqa: E731
        q for q in bench[rule].glob(pattern) if q.stat().st_mtime >= rerun_start
    )
    name = new["name"]
    # the new size is its final model and its checkpoints (<name>-t<tokens>): all of them are its own cost
    own = {rule: fresh(rule, f"{name}.tsv") + fresh(rule, f"{name}-t*.tsv") for rule in ("ladder_train",)}
    own |= {rule: fresh(rule, f"{name}/*.tsv") + fresh(rule, f"{name}-t*/*.tsv") for rule in ("extract", "summarize")}
    others = {str(q) for rule in own for q in fresh(rule, "**/*.tsv")} - {
        str(q) for paths in own.values() for q in paths
    }
    if others:
        raise SystemExit(f"the rerun trained, scored or summarized other models too: {sorted(others)}")
    own_train, own_extract = seconds(own["ladder_train"]), seconds(own["extract"])
    summaries, tables, figures = own["summarize"], fresh("tables", "*.tsv"), fresh("figures", "*.tsv")
    parts = {"summaries": seconds(summaries), "tables": seconds(tables), "figures": seconds(figures)}
    analysis = sum(parts.values())
    budget = 1.2 * (own_train + own_extract + analysis)
    report = {
        "config": base,
        "cores": a.cores,
        "full_run_s": round(full, 1),
        "added_model": name,
        "rerun_planned_jobs": plan,
        "rerun_s": round(rerun, 1),
        "new_model_train_s": round(own_train, 1),
        "new_model_extract_s": round(own_extract, 1),
        "downstream_analysis_s": round(analysis, 1),
        "target_s": round(budget, 1),
        "within_target": rerun <= budget,
    }
    if a.workdir:
        (workdir / "add_model_benchmark.json").write_text(json.dumps(report, indent=2) + "\n")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    jobs = ", ".join(f"{n} × `{rule}`" for rule, n in plan.items() if rule != "all")
    lines = [
        f"`{base}` in a fresh copy of the working tree, `snakemake --cores {a.cores}`; then one ladder size added "
        f"(`{json.dumps(new)}`) through a second config file and the rerun timed. Own and downstream times are "
        "the `benchmark:` files the rerun wrote.",
        "",
        "| measured | wall time |",
        "|---|---|",
        f"| full run, fresh copy | {full:.0f} s |",
        f"| rerun after adding the size: {jobs} | **{rerun:.0f} s** |",
        f"| the new size's own training + extraction ({len(own['ladder_train'])} models: the final one and its "
        f"checkpoints; {own_train:.0f} s + {own_extract:.0f} s) | {own_train + own_extract:.0f} s |",
        f"| downstream analysis ({len(summaries)} summaries {parts['summaries']:.0f} s, {len(tables)} tables "
        f"{parts['tables']:.0f} s, {len(figures)} figures {parts['figures']:.0f} s) | {analysis:.0f} s |",
        f"| target: 1.2 × (own + downstream) | {budget:.0f} s: {'met' if rerun <= budget else 'missed'} |",
        "",
        "Jobs run side by side on the cores, so the rerun can take less than the sum of its jobs.",
    ]
    return b.finish(b.section("add-model"), "Adding a model after a complete run", "\n".join(lines))


if __name__ == "__main__":
    main()
