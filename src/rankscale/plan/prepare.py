"""The configuration stage of a run, as the workflow runs it before any job: read the files, validate and fill in
defaults, plan every model, check what the user wrote, lay out every file. One function, so the Snakefile
(workflow/rules/common.smk) and the configuration fuzzer (tests/test_fuzz_config.py) run the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankscale.config import SCHEMA_PATH, ConfigError, load_yaml, validate
from rankscale.corpus import CorpusError
from rankscale.layout import Layout
from rankscale.plan.checks import check_written
from rankscale.plan.errors import error_lines
from rankscale.plan.files import layout
from rankscale.plan.models import build_plan
from rankscale.plan.types import ModelPlan

REFUSED = (ConfigError, CorpusError)  # what a configuration can be refused with: one line per problem, no traceback


@dataclass(frozen=True)
class Prepared:
    plans: dict[str, ModelPlan]
    layout: Layout


def prepare(
    config: dict[str, Any],
    config_files: Sequence[str | Path],
    user_files: Sequence[str | Path],
    default_config: str | Path,
    overrides: Mapping[str, Any] | None = None,
    schema_path: str | Path = SCHEMA_PATH,
) -> Prepared:
    """Validate `config` (in place: defaults filled in) and plan it; raises one of REFUSED.

    `config_files`: every file Snakemake read (the default included where the user's extend it); `user_files`: the
    user's own (`--configfile`); `overrides`: the command line's `--config` (a run directory of their own)."""
    # Snakemake's loader lets a duplicate key win silently; what the user wrote (k values) is checked against the plan
    written = {str(f): load_yaml(f) for f in config_files}
    validate(config, Path(schema_path))
    plans = build_plan(config, validated=True)  # validated once, just above
    check_written(config, plans, [written[str(f)] for f in user_files])
    # every path (rankscale.layout): intermediates keyed by meaning, this configuration's own files under results/<run>
    return Prepared(plans, layout(config, plans, config_files, default_config, overrides))


def refusal(exc: Exception, user_files: Sequence[str | Path], default_config: str | Path, extends_default: bool) -> str:
    """The lines the workflow prints for a refused configuration, each naming its file."""
    default = default_config if extends_default or not user_files else None
    return "\n".join(error_lines(exc, [Path(f) for f in user_files], default))  # type: ignore[arg-type]
