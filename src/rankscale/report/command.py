"""The command that reports a run, kept beside its results, and why a `--report` would report nothing or the wrong
run: the Snakefile asks this while planning, so it imports no pandas (`rankscale.run_summary` says what a run found)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from rankscale.atomic import atomic_path


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
