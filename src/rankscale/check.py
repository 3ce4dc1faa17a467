"""`rankscale check FILE [FILE ...] [--config KEY=VALUE ...]`: a configuration checked completely, nothing run.

Snakemake's command line reads `--configfile` before the workflow does, so a YAML syntax error there gets its
`Config file is not valid JSON or YAML`, with no file or line; and a dotted `--config` key stops it with a traceback.
This command reads the files and overrides as Snakemake would (`load_like_snakemake`, `parse_overrides`) but with
rankscale's loader, then runs the workflow's own configuration stage (`rankscale.plan.prepare`): the schema, the
plan and every refusal the workflow makes, each one line `config error in <file>: <key>: ...` (exit 1). A
configuration that passes gets what it plans: models, datasets and its results directory (exit 0). Run it where
you run snakemake (the clone's root): paths in a configuration are relative to it.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankscale.config import SCHEMA_PATH, ConfigError
from rankscale.downloads import hub_downloads
from rankscale.plan import (
    corpus_spec,
    figure_settings,
    run_checkpoints,
    summary_settings,
    table_settings,
    tokenize_source,
    tokenizer_params,
    tokenizer_sources,
    training_params,
    trajectory_settings,
    unpinned,
)
from rankscale.plan.errors import error_lines, shown
from rankscale.plan.overrides import parse_overrides
from rankscale.plan.prepare import REFUSED, Loaded, Prepared, load_like_snakemake, prepare, refusal, run_notes
from rankscale.plots import FIGURES
from rankscale.tables import TABLES

DEFAULT_CONFIG = SCHEMA_PATH.parents[2] / "config" / "config.yaml"  # the Snakefile's `configfile:`
SHOWN_NAMES = 6  # models named in the summary before `…`


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="rankscale", description="rankscale's command-line tools")
    commands = main.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check",
        help="check a configuration completely (YAML, schema, plan, every refusal) without running anything",
        description="Reads the files and overrides as snakemake does, then runs the workflow's own configuration "
        "stage: YAML (with line and column), the schema, the plan and every refusal, one line each (exit 1), or a "
        "summary of what the configuration plans (exit 0). Run it where you run snakemake.",
    )
    check.add_argument("files", nargs="*", metavar="FILE", help="configuration files, as given to --configfile")
    check.add_argument("--configfile", nargs="+", default=[], metavar="FILE", help="the same, as snakemake takes them")
    check.add_argument(
        "--config", nargs="+", default=[], metavar="KEY=VALUE", help="overrides, as snakemake takes them"
    )
    return main


@dataclass(frozen=True)
class Checked:
    """What `rankscale check` found: one line per problem, or the notes a run would print and what it plans."""

    errors: list[str]
    notes: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


def main(argv: Sequence[str] | None = None) -> int:
    """The console script `rankscale`: exit 0 with a summary of the plan, or 1 with one line per problem."""
    args = parser().parse_args(argv)
    checked = check([Path(f) for f in [*args.files, *args.configfile]], args.config, DEFAULT_CONFIG)
    for line in [*checked.errors, *checked.notes]:
        print(line, file=sys.stderr)
    if checked.summary:
        print("\n".join(checked.summary))
    return 1 if checked.errors else 0


def check(files: Sequence[Path], config_args: Sequence[str], default: Path) -> Checked:
    """The configuration of `--configfile files --config config_args` through the workflow's configuration stage."""
    try:
        overrides = parse_overrides(config_args)
        loaded = load_like_snakemake(files, default, overrides)
    except ConfigError as exc:
        return Checked(error_lines(exc, files, None))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)  # what the plan warns of (a family of one model)
        try:
            prepared = prepare(loaded.config, loaded.config_files, files, default, overrides)
        except REFUSED as exc:
            return Checked(refusal(exc, files, default, loaded.extends_default, overrides).splitlines())
    rule_settings(loaded.config, prepared)
    notes = run_notes(loaded.config, prepared, files, default, loaded.extends_default, overrides)
    warned = [f"warning: {w.message}" for w in caught if issubclass(w.category, UserWarning)]
    return Checked([], [f"rankscale: {line}" for line in [*notes, *warned]], summary(loaded, prepared))


def rule_settings(config: dict[str, Any], prepared: Prepared) -> None:
    """Every setting the rules compute from an accepted plan (workflow/rules/*.smk): none of it may fail, so a
    configuration that passes the check cannot stop a run later (tests/test_fuzz_config.py fuzzes this)."""
    plans = prepared.plans
    unpinned(config, plans)
    for tok, source in tokenizer_sources(plans).items():
        tokenize_source(plans, tok)
        tokenizer_params(source, tok)
    hub_downloads(plans)
    summary_settings(config)
    trajectory_settings(config)
    models, datasets = list(plans), sorted(config["datasets"])
    for dataset in datasets:
        corpus_spec(config, dataset)
        for model in models:
            prepared.layout.ranks(model, dataset)
            prepared.layout.summary(model, dataset)
    for table in TABLES:
        table_settings(config, table)
    for figure in FIGURES:
        figure_settings(config, figure, datasets, models)
    if config.get("ladder"):
        run_checkpoints(config)
        for plan in plans.values():
            if plan.ladder:
                training_params(config, plan)


def summary(loaded: Loaded, prepared: Prepared) -> list[str]:
    """What the configuration plans: its models (by family), datasets and results directory."""
    files = ", ".join(shown(f) for f in loaded.user_files) or f"{shown(loaded.config_files[-1])} (the default)"
    what = f"{files} with --config" if loaded.overrides else files
    families = sorted({plan.family for plan in prepared.plans.values()})
    datasets = sorted(loaded.config["datasets"])
    return [
        f"rankscale: {what}: valid; nothing was run",
        f"  models:   {len(prepared.plans)} in {len(families)} famil{'y' if len(families) == 1 else 'ies'} "
        f"({listed(families)}): {listed(list(prepared.plans))}",
        f"  datasets: {len(datasets)}: {listed(datasets)}",
        f"  results:  {prepared.layout.out}/",
    ]


def listed(names: Sequence[str]) -> str:
    """The first names, then `…`: a study of hundreds of models stays one line each."""
    return ", ".join(names[:SHOWN_NAMES]) + (", …" if len(names) > SHOWN_NAMES else "")


if __name__ == "__main__":
    sys.exit(main())
