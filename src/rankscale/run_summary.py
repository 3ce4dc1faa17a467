"""What a run found, said when it ends: printed by the Snakefile's `onsuccess` handler.

After "N of N steps done" a reader wants to know where the results are, what the laws came out as, whether
anything warned, and how to open the report. This is that text, built from the run's tables (powerlaw_fits.csv,
through the landing page's reading of them: `rankscale.report.landing.headlines`) and its jobs' logs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rankscale.layout import RunFiles
from rankscale.report.command import COMMAND, report_command, report_refusal, write_report_command  # noqa: F401
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
