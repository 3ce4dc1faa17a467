"""What a run found, said when it ends: printed by the Snakefile's `onsuccess` handler.

After "N of N steps done" a reader wants to know where the results are, what the laws came out as, whether
anything warned, and how to open the report. This is that text, built from the run's tables (powerlaw_fits.csv,
through the landing page's reading of them: `rankscale.report.landing.headlines`) and its jobs' logs.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rankscale.atomic import atomic_path
from rankscale.layout import RunFiles
from rankscale.report.heavy_documents import TABLES as HEAVY_TABLES
from rankscale.report.heavy_documents import HeavyDocuments, heavy_documents
from rankscale.report.landing import Headline, Law, headlines, shown
from rankscale.tables.base import read_table

WARNING = " WARNING "  # how rankscale.logs formats a warning's line (warnings.warn's included: captured there)


@dataclass(frozen=True)
class Warnings:
    """The warnings in the logs of the jobs behind a run's results, and the logs that hold them."""

    count: int
    logs: tuple[str, ...]  # each log with at least one warning

    @classmethod
    def of(cls, logs: Sequence[Path]) -> Warnings:
        count, found = 0, []
        for path in logs:
            if not path.is_file():
                continue  # a job that has not logged (made by an older run, or not this configuration's)
            n = sum(WARNING in line for line in path.read_text(encoding="utf-8", errors="replace").splitlines())
            if n:
                count += n
                found.append(str(path))
        return cls(count, tuple(found))


def _relative(path: str | Path) -> str:
    """`path` relative to the working directory where it lies under it (as a user types it), else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def report_command(out: Path, config_files: Sequence[str | Path], default_config: str | Path) -> str:
    """The `snakemake --report` command that reports this run: its configuration files but the default's (which the
    Snakefile loads by itself), in the order given, as the user may paste it."""
    given = [_relative(f) for f in config_files if Path(f).resolve() != Path(default_config).resolve()]
    args = ["snakemake", "--report", str(out / "report.html")]
    return shlex.join(args + (["--configfile", *given] if given else []))  # one flag: a second would replace the first


def _alpha(law: Law | None) -> str:
    if law is None:
        return "not fitted"
    if law.note and law.note != "nan":
        return law.note
    a = law.alpha
    interval = "" if math.isnan(a.low) else f" [{shown(a.low)}, {shown(a.high)}]"
    return f"{shown(a.value)}{interval} (R² {shown(law.r2)})"


@dataclass(frozen=True)
class RunSummary:
    """A finished run: where its results are, each family x dataset's exponents, its datasets of few heavy documents
    (what they flag and why), its warnings, its report."""

    out: Path  # results/<run>
    laws: tuple[Headline, ...]
    level: float
    warnings: Warnings
    report: str  # the command that makes its report
    heavy: tuple[HeavyDocuments, ...] = ()

    @classmethod
    def of(cls, out: Path, level: float, logs: Sequence[Path], report: str) -> RunSummary:
        def table(name: str) -> pd.DataFrame:
            path = Path(RunFiles(out).table(name))
            return read_table(path) if path.is_file() else pd.DataFrame()

        laws = headlines(table("powerlaw_fits"), table("exponent_contrasts"))
        heavy = heavy_documents({name: table(name) for name in HEAVY_TABLES})
        return cls(out, tuple(laws), level, Warnings.of(logs), report, tuple(heavy))

    def text(self) -> str:
        lines = [f"rankscale: results in {self.out}/ (tables/, figures/, manifest.json)"]
        if self.laws:
            lines.append(f"  the laws' exponents alpha, with {self.level:.0%} intervals (powerlaw_fits.csv):")
            width = max(len(f"{h.family} / {h.dataset}") for h in self.laws)
            for h in self.laws:
                name = f"{h.family} / {h.dataset}".ljust(width)
                lines.append(f"    {name}  -log RBP_1: {_alpha(h.rbp1)};  CE: {_alpha(h.ce)}")
        else:
            lines.append("  no family has a law: every family has fewer than two sizes (cross_family.csv)")
        lines.extend(f"  {h.text()}" for h in self.heavy)
        if self.warnings.count:
            where = ", ".join(self.warnings.logs[:3]) + (", ..." if len(self.warnings.logs) > 3 else "")
            lines.append(f"  {self.warnings.count} warning(s) in the jobs' logs: {where}")
        else:
            lines.append("  no warnings in the jobs' logs")
        lines.append(f"  report: {self.report}")
        return "\n".join(lines)


COMMAND = "report/command.txt"  # under results/<run>/: the command that reports it, written when a run succeeds


def write_report_command(out: Path, command: str) -> None:
    """Keep the command that reports `out` beside its landing page, for a `--report` of another configuration to
    point to (`report_refusal`); rewritten only when it changes."""
    path = out / COMMAND
    if path.is_file() and path.read_text(encoding="utf-8") == command + "\n":
        return
    with atomic_path(path, suffix=".txt") as tmp:
        tmp.write_text(command + "\n", encoding="utf-8")


def _reported_runs(results: Path) -> dict[Path, str]:
    """Every run under `results` that has succeeded, and the command that reports it."""
    return {
        p.parent.parent.resolve(): p.read_text(encoding="utf-8").strip() for p in sorted(results.glob(f"*/{COMMAND}"))
    }


def report_refusal(argv: Sequence[str], out: Path, manifest: Path) -> str | None:
    """Why `snakemake --report` (its command line `argv`) would report nothing or the wrong run, with the command that
    reports what was meant; None where it reports this configuration's finished run (or with --report-after-run).

    Without its `--configfile` a report is of the default configuration: where that has not run, Snakemake would
    write a page of "Missing metadata" warnings and exit 0; where the report is put in another run's directory, it
    would hold this configuration's results."""
    args = list(argv)
    if "--report-after-run" in args:
        return None
    at = next((i for i, a in enumerate(args) if a == "--report" or a.startswith("--report=")), None)
    if at is None:
        return None
    if "=" in args[at]:
        target = Path(args[at].split("=", 1)[1])
    else:
        target = Path(args[at + 1]) if at + 1 < len(args) and not args[at + 1].startswith("-") else Path("report.html")
    runs = _reported_runs(out.parent)
    if not manifest.is_file():
        fix = ("report a run that has, with its configuration: " + "; ".join(f"`{c}`" for c in runs.values())
               if runs else "run the workflow first (`snakemake --cores N`, with the `--configfile` of your study)")  # fmt: skip
        return (f"rankscale: nothing to report: no run of this configuration has succeeded ({manifest} is missing); "
                f"{fix}")  # fmt: skip
    other = target.resolve().parent
    if other != out.resolve() and other in runs:
        return (f"rankscale: {target} is in another run's directory, but this command's configuration is that of "
                f"{out}/; report that run with its configuration: `{runs[other]}`")  # fmt: skip
    return None
