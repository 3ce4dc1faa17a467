"""The run manifest: what produced a configuration's results, for a reader who finds them months later.

Written by the workflow's `onsuccess` handler (Snakefile) after every successful run: the code's git commit
and whether the tree was dirty, the configuration's digest, package versions and host of the process that ran
snakemake, the devices and package versions the extraction jobs recorded in their sidecars, and per-rule job
counts and wall times from the jobs' benchmark files. It holds
no time stamp, so a run that changes nothing rewrites nothing.
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankscale.atomic import write_json
from rankscale.canon import canonical, short_hash
from rankscale.layout import DEFAULT_RUN, Layout, fill

if TYPE_CHECKING:
    from rankscale.plan.types import ModelPlan

PACKAGES = ("rankscale", "snakemake", "torch", "transformers", "tokenizers", "huggingface_hub", "datasets",
            "numpy", "scipy", "pandas", "matplotlib")  # fmt: skip


@dataclass(frozen=True)
class RuleTimes:
    """The jobs of one rule whose benchmark files exist, and their summed wall time."""

    jobs: int
    wall_s: float


@dataclass(frozen=True)
class Manifest:
    commit: str | None  # None outside a git checkout
    dirty: bool | None  # uncommitted changes to tracked files
    config_digest: str
    versions: dict[str, str | None]  # of the process that ran snakemake (summaries, tables and figures run here)
    host: dict[str, Any]  # the host that ran snakemake (on a cluster: the submitting host)
    devices: dict[str, int]  # device -> rank arrays scored on it
    extraction_versions: dict[str, list[str]]  # package -> the versions the extraction jobs recorded
    rules: dict[str, RuleTimes] = field(default_factory=dict)


def git_state(directory: Path) -> tuple[str | None, bool | None]:
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None, None
    return commit, bool(git("status", "--porcelain", "--untracked-files=no"))


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def benchmark_files(
    layout: Layout,
    plans: Mapping[str, ModelPlan],
    datasets: Sequence[str],
    tables: Iterable[str],
    figures: Iterable[str],
    families: Sequence[str],
) -> dict[str, list[Path]]:
    """The benchmark file of every job of this configuration, by rule: one entry per rule with a `benchmark:`
    (tests/test_manifest.py holds the rules to it), each path from the layout the rule's directive uses."""
    pairs = [(m, d) for m in plans for d in datasets]
    ggufs = [p for p in plans.values() if p.gguf]
    return {
        "extract": [Path(layout.extract_benchmark(m, d)) for m, d in pairs],
        "summarize": [Path(layout.summarize_benchmark(m, d)) for m, d in pairs],
        "trajectories": [Path(layout.run_benchmark("trajectories", f"{f}/{d}")) for f in families for d in datasets],
        "table": [Path(layout.run_benchmark("tables", t)) for t in tables],
        "figure": [Path(layout.run_benchmark("figures", f)) for f in figures],
        "ladder_train": [Path(layout.ladder.benchmark(m)) for m, plan in plans.items() if plan.ladder],
        "gguf_convert": [Path(Layout.gguf_benchmark(d)) for d in dict.fromkeys(p.gguf.digest for p in ggufs)],
    }


def rule_times(benchmarks: Mapping[str, Iterable[Path]]) -> dict[str, RuleTimes]:
    """Per rule, from Snakemake's benchmark files (a TSV whose `s` column is the job's wall time)."""
    out = {}
    for rule, paths in benchmarks.items():
        seconds = []
        for path in paths:
            lines = path.read_text().splitlines() if path.is_file() else []
            if len(lines) >= 2 and "s" in (header := lines[0].split("\t")):  # (`--touch` leaves them empty)
                seconds.append(float(lines[1].split("\t")[header.index("s")]))
        if seconds:
            out[rule] = RuleTimes(len(seconds), round(sum(seconds), 1))
    return out


def from_sidecars(sidecars: Iterable[Path]) -> tuple[dict[str, int], dict[str, list[str]]]:
    """What the extraction jobs themselves recorded: the devices they scored on (device: rank arrays) and the
    package versions they ran with (in their own environment, on their own node), each version seen."""
    devices: dict[str, int] = {}
    seen: dict[str, set[str]] = {}
    for path in sidecars:
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # not there (a run of some targets), or not a sidecar (`--touch` on placeholders)
        if isinstance(meta, dict):
            device = str(meta.get("device"))
            devices[device] = devices.get(device, 0) + 1
            for name, version in (meta.get("versions") or {}).items():
                seen.setdefault(name, set()).add(str(version))
    return dict(sorted(devices.items())), {name: sorted(v) for name, v in sorted(seen.items())}


def build(
    config: Mapping[str, Any], code_dir: Path, sidecars: Iterable[Path], benchmarks: Mapping[str, Iterable[Path]]
) -> Manifest:
    import os

    commit, dirty = git_state(code_dir)
    host = {"name": platform.node(), "platform": platform.platform(), "cpus": os.cpu_count()}
    devices, extraction_versions = from_sidecars(sidecars)
    return Manifest(commit, dirty, short_hash(canonical(dict(config))), versions(), host, devices,
                    extraction_versions, rule_times(benchmarks))  # fmt: skip


def write(manifest: Manifest, path: Path) -> bool:
    """Write it unless the file already says the same; whether it was written."""
    data = asdict(manifest)
    if path.is_file() and json.loads(path.read_text()) == json.loads(json.dumps(data)):
        return False
    write_json(path, data)
    return True


REPORTED = fill(Layout.MANIFEST, run=DEFAULT_RUN)  # the workflow sets its configuration's (common.smk)


def report_fields(path: str | Path) -> dict[str, str | int | float]:
    """The manifest flattened for the report's landing page (`snakemake --report-metadata`, one level only)."""
    path = Path(path)
    if not path.is_file():
        return {"manifest": f"{path} does not exist yet (it is written when a run succeeds)"}
    data = json.loads(path.read_text())
    dirty = {True: " (uncommitted changes)", False: "", None: ""}[data["dirty"]]
    fields: dict[str, str | int | float] = {
        "commit": f"{data['commit'] or 'not a git checkout'}{dirty}",
        "configuration digest": data["config_digest"],
        "host": f"{data['host']['name']} ({data['host']['platform']}, {data['host']['cpus']} CPUs)",
        "devices": ", ".join(f"{device}: {n} rank arrays" for device, n in data["devices"].items()) or "none",
        "versions (snakemake's process)": ", ".join(f"{n} {v}" for n, v in data["versions"].items() if v),
        "versions (extraction jobs)": ", ".join(f"{n} {'/'.join(v)}" for n, v in data["extraction_versions"].items())
        or "none",
    }
    for rule, times in data["rules"].items():
        fields[f"wall time: {rule}"] = f"{times['wall_s']:.1f} s in {times['jobs']} jobs"
    return fields


def report_totals(path: str | Path) -> dict[str, int | float]:
    """The manifest's totals for `snakemake --report-metadata`, which shows numbers only (text comes out as
    docutils' parts); empty before any run, and a report without metadata opens on its rule graph instead."""
    path = Path(path)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    rules = data["rules"].values()
    return {
        "jobs timed": sum(int(r["jobs"]) for r in rules),
        "wall time of those jobs, s": round(sum(float(r["wall_s"]) for r in rules), 1),
        "rank arrays": sum(int(n) for n in data["devices"].values()),
    }
