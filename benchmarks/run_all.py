"""Run every benchmark module, each writing its own section of RESULTS.md.

    python benchmarks/run_all.py --write                  # every CPU section (~30 min on 2 quiet cores)
    python benchmarks/run_all.py --device cuda --write    # the GPU table: float32 and bfloat16 sections
    python benchmarks/run_all.py --quick                  # every module with tiny settings, then the GPU
                                                          # plan on the CPU with tiny stand-in shapes

Each module can also be run alone with the command printed under its section. A module that fails
is reported at the end (exit status 1); the others still run.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import re
import time
import traceback
from pathlib import Path

import harness

CPU_PLAN = [
    ("throughput", []),
    ("lmeval", []),
    ("memory", []),
    ("aggregation", []),
    ("add_model", []),
]
CUDA_PLAN = [
    (module, ["--device", "cuda", "--dtype", dtype])
    for dtype in ("float32", "bfloat16")
    for module in ("throughput", "lmeval", "memory")
]
PAPER = "pythia-1.4b,qwen2.5-0.5b"  # --quick swaps in tiny stand-ins with the same output columns
REHEARSAL = [
    ("throughput", ["--dtype", "bfloat16", "--models", PAPER, "--text", "random", "--batch-sizes", "auto"]),
    ("lmeval", ["--dtype", "bfloat16", "--models", PAPER, "--batch-sizes", "16"]),
    ("memory", ["--dtype", "bfloat16", "--model", "qwen2.5-0.5b"]),
]


def run(module: str, argv: list[str]) -> str | None:
    """module.main(argv); None (and the traceback printed) if it failed."""
    print(f"\n=== python benchmarks/{module}.py {' '.join(argv)}", flush=True)
    try:
        return importlib.import_module(module).main(argv)
    except (Exception, SystemExit) as exc:
        traceback.print_exception(exc)
        return None
    finally:
        gc.collect()


def written_sections(results: Path) -> dict[str, str | None]:
    """The CUDA sections a results file holds (benchmarks/gpu_session.sh writes them one step at a time)."""
    doc = results.read_text() if results.exists() else ""
    out: dict[str, str | None] = {}
    for name in re.findall(r"<!-- begin ([a-z0-9-]*-cuda-[a-z0-9-]+) -->", doc):
        out[name] = doc.split(f"<!-- begin {name} -->", 1)[1].split(f"<!-- end {name} -->", 1)[0]
    return out


def gpu_summary(texts: dict[str, str | None]) -> str:
    """The GPU section: the device and each module's target lines."""
    facts = harness.machine_facts(harness.torch.device("cuda" if harness.torch.cuda.is_available() else "cpu"))
    lines = [
        "## GPU",
        "",
        f"Measured on {facts['device']}, {time.strftime('%Y-%m-%d')}, commit {harness.commit()}; the sections "
        + ", ".join(f"`{s}`" for s in texts)
        + " below hold the tables. Targets:",
        "",
    ]
    for name, text in texts.items():
        targets = [line for line in (text or "").splitlines() if line.startswith("**Target**")]
        lines += [f"- `{name}`: " + (" ".join(targets) if targets else "**failed**, see the run's output")]
    command = ["bash benchmarks/gpu_session.sh   # one GPU session, every step under a time budget; or:",
               "python benchmarks/run_all.py --device cuda --write"]  # fmt: skip
    return "\n".join(lines + ["", "```bash", *command, "```"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--quick", action="store_true", help="tiny settings everywhere (measures nothing)")
    p.add_argument("--write", action="store_true", help="update each module's section of --results")
    p.add_argument("--results", type=Path, default=harness.RESULTS)
    p.add_argument("--only", help="comma-separated modules to run (default: all of the plan)")
    p.add_argument("--ladder-root", type=Path, help="also the trained-checkpoint sections of a finished workflow run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quiet-wait", type=float, default=0.0)
    p.add_argument("--summary", action="store_true", help="only the GPU summary, from the CUDA sections of --results")
    a = p.parse_args(argv)
    if a.summary:
        summary = gpu_summary(written_sections(a.results))
        print(summary)
        if a.write:
            harness.write_section(a.results, "gpu", summary)
        return 0
    common = ["--threads", str(a.threads)] if a.threads != 2 else []
    common += ["--results", str(a.results)] if a.results != harness.RESULTS else []
    common += (
        ["--quick"] * a.quick + ["--write"] * a.write + (["--quiet-wait", str(a.quiet_wait)] if a.quiet_wait else [])
    )
    plan = [(m, list(args)) for m, args in (CUDA_PLAN if a.device == "cuda" else CPU_PLAN)]
    if a.ladder_root and a.device == "cpu":
        plan += [(m, ["--ladder-root", str(a.ladder_root)]) for m in ("throughput", "lmeval")]
    if a.quick and a.device == "cpu":  # the GPU plan's code paths (CUDA defaults), on the CPU with tiny shapes
        plan += REHEARSAL
    if a.only:
        plan = [(m, args) for m, args in plan if m in a.only.split(",")]
    texts: dict[str, str | None] = {}
    for module, args in plan:
        texts[f"{module} {' '.join(args)}".strip()] = run(module, args + common)
    if a.device == "cuda":
        sections = {f"{m}-cuda-{args[args.index('--dtype') + 1]}": texts[f"{m} {' '.join(args)}"] for m, args in plan}
        summary = gpu_summary(sections)
        print(summary)
        if a.write:
            harness.write_section(a.results, "gpu", summary)
    failed = [name for name, text in texts.items() if text is None]
    print("\n" + ("failed: " + "; ".join(failed) if failed else f"all {len(texts)} runs finished"), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
