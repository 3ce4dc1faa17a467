"""The workflow's configuration stage run in-process: what `snakemake -n --configfile FILE` decides before any job
(loading, schema, plan, the checks of what the user wrote, layout, every setting the rules compute), in
milliseconds instead of a Snakemake start-up. tests/test_hardening.py proves on real `snakemake -n` runs that the
workflow prints exactly these lines."""

from __future__ import annotations

import copy
from contextlib import chdir
from pathlib import Path
from typing import Any

import yaml
from snakemake.utils import update_config

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
from rankscale.plan.prepare import REFUSED, prepare, refusal
from rankscale.plots import FIGURES
from rankscale.tables import TABLES


def load_like_snakemake(path: Path, default: Path) -> tuple[dict[str, Any], list[Path]]:
    """What Snakemake hands the Snakefile for `--configfile path`: the file alone where it sets `datasets`, else laid
    over the default (the Snakefile's `configfile:`), and the files read, in Snakemake's order."""
    given = yaml.safe_load(path.read_text())
    if not isinstance(given, dict):
        given = {}
    if "datasets" in given:
        return copy.deepcopy(given), [path]
    config = yaml.safe_load(default.read_text())
    update_config(config, given)
    return config, [default, path]


def plan_everything(path: Path, default: Path) -> str | None:
    """The workflow's configuration stage and every setting its rules compute; the refusal's lines, or None."""
    config, files = load_like_snakemake(path, default)
    try:
        prepared = prepare(config, files, [path], default)
    except REFUSED as exc:
        return refusal(exc, [path], default, len(files) > 1)
    plans = prepared.plans
    # what common.smk and the rules compute from the plan: none of it may fail on a configuration that was accepted
    unpinned(config, plans)
    tokenizers = tokenizer_sources(plans)
    for tok, source in tokenizers.items():
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
    return None


def refused(workdir: Path, config: dict[str, Any], name: str = "case.yaml") -> str | None:
    """`config` written to `workdir`/config/`name` and planned there as `snakemake -n --configfile config/<name>`
    would be in `workdir` (a copy of the workflow, tests/conftest.py's copy_workflow): the lines of its refusal, or
    None where it is accepted."""
    (workdir / "config" / name).write_text(yaml.safe_dump(config, sort_keys=False))  # ladder.corpus order matters
    with chdir(workdir):  # relative paths resolve as Snakemake's do there
        return plan_everything(Path("config") / name, workdir / "config/config.yaml")
