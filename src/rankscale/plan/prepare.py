"""The configuration stage of a run, as the workflow runs it before any job: read the files, validate and fill in
defaults, plan every model, check what the user wrote, lay out every file. One function, so the Snakefile
(workflow/rules/common.smk), `rankscale check` (rankscale.check) and the configuration fuzzer
(tests/test_fuzz_config.py) run the same code; `load_like_snakemake` reads the files as Snakemake does for the two
that run without it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snakemake.utils import update_config

from rankscale.config import SCHEMA_PATH, ConfigError, load_yaml, validate
from rankscale.corpus import CorpusError
from rankscale.layout import Layout
from rankscale.plan.checks import check_written, unpinned_note
from rankscale.plan.errors import error_lines, inherited_note
from rankscale.plan.files import layout
from rankscale.plan.models import build_plan
from rankscale.plan.overrides import override_note
from rankscale.plan.types import ModelPlan

REFUSED = (ConfigError, CorpusError)  # what a configuration can be refused with: one line per problem, no traceback


@dataclass(frozen=True)
class Prepared:
    plans: dict[str, ModelPlan]
    layout: Layout


@dataclass(frozen=True)
class Loaded:
    """A configuration as Snakemake hands it to the Snakefile, and the files it was read from."""

    config: dict[str, Any]
    config_files: list[Path]  # every file read, in Snakemake's order (`workflow.configfiles`): the user's, the default
    user_files: list[Path]  # the `--configfile`s
    overrides: dict[str, Any] = field(default_factory=dict)  # `--config`, with YAML types (rankscale.plan.overrides)

    @property
    def extends_default(self) -> bool:
        """The user's files (and overrides) set no `datasets:`, so they are laid over the default (Snakefile)."""
        return len(self.config_files) > len(self.user_files)


def load_like_snakemake(
    user_files: Sequence[str | Path], default_config: str | Path, overrides: Mapping[str, Any] | None = None
) -> Loaded:
    """What `snakemake --configfile user_files --config overrides` hands the Snakefile: the files merged in order and
    the overrides over them; where none of them sets `datasets:`, all of that laid over the default configuration
    (the Snakefile's `configfile:`, merged as Snakemake's `Workflow.configfile` merges). Each file is read with
    rankscale's loader, so a syntax error is refused with its file, line and column (Snakemake names neither)."""
    given: dict[str, Any] = {}
    for path in user_files:
        update_config(given, read_config_file(path))
    update_config(given, dict(overrides or {}))
    files = [Path(f) for f in user_files]
    if "datasets" in given:
        return Loaded(given, files, files, dict(overrides or {}))
    config = copy.deepcopy(given)
    update_config(config, read_config_file(default_config))
    update_config(config, given)
    return Loaded(config, [*files, Path(default_config)], files, dict(overrides or {}))


def read_config_file(path: str | Path) -> dict[str, Any]:
    """One configuration file: a mapping of settings, as Snakemake requires; refused naming the file otherwise."""
    try:
        data = load_yaml(path)
    except FileNotFoundError:
        raise ConfigError("no such file", origin=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read it ({exc})", origin=str(path)) from None
    if not isinstance(data, dict):
        what = "nothing" if data is None else f"a {type(data).__name__}"
        raise ConfigError(
            f"(top level): the file holds {what}, not a mapping of settings (Snakemake refuses it: `Config file must "
            "be given as JSON or YAML with keys at top level`); write one `key: value` per setting",
            origin=str(path),
        )
    return data


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
    overridden = [dict(overrides)] if overrides else []  # what the command line wrote counts as written too
    check_written(config, plans, [*(written[str(f)] for f in user_files), *overridden])
    # every path (rankscale.layout): intermediates keyed by meaning, this configuration's own files under results/<run>
    return Prepared(plans, layout(config, plans, config_files, default_config, overrides))


def refusal(
    exc: Exception, user_files: Sequence[str | Path], default_config: str | Path, extends_default: bool,
    overrides: Mapping[str, Any] | None = None,
) -> str:  # fmt: skip
    """The lines the workflow prints for a refused configuration, each naming its file (`--config` for a key the
    command line's `overrides` set)."""
    default = default_config if extends_default or not user_files else None
    return "\n".join(error_lines(exc, [Path(f) for f in user_files], default, overrides))  # type: ignore[arg-type]


def run_notes(
    config: Mapping[str, Any], prepared: Prepared, user_files: Sequence[str | Path], default_config: str | Path,
    extends_default: bool, overrides: Mapping[str, Any] | None = None,
) -> list[str]:  # fmt: skip
    """What a run says once before it starts (each printed after `rankscale: `), not errors: the default's settings a
    file inherits, inputs read at a branch, and the results directory `--config` overrides give the run."""
    notes = [
        inherited_note(user_files, default_config) if extends_default else None,
        unpinned_note(config, prepared.plans),
        override_note(overrides or {}, prepared.layout.out),
    ]
    return [note for note in notes if note]
