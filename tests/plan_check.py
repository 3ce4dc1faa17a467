"""The workflow's configuration stage run in-process: what `snakemake -n --configfile FILE` decides before any job
(loading, schema, plan, the checks of what the user wrote, layout, every setting the rules compute: `rankscale
check`), in milliseconds instead of a Snakemake start-up. tests/test_hardening.py proves on real `snakemake -n`
runs that the workflow prints exactly these lines."""

from __future__ import annotations

from contextlib import chdir
from pathlib import Path
from typing import Any

import yaml

from rankscale.check import check


def plan_everything(path: Path, default: Path) -> str | None:
    """`--configfile path` through the configuration stage and every setting its rules compute: the refusal's lines,
    or None where it is accepted."""
    return "\n".join(check([path], [], default).errors) or None


def refused(workdir: Path, config: dict[str, Any], name: str = "case.yaml") -> str | None:
    """`config` written to `workdir`/config/`name` and planned there as `snakemake -n --configfile config/<name>`
    would be in `workdir` (a copy of the workflow, tests/conftest.py's copy_workflow): the lines of its refusal, or
    None where it is accepted."""
    (workdir / "config" / name).write_text(yaml.safe_dump(config, sort_keys=False))  # ladder.corpus order matters
    with chdir(workdir):  # relative paths resolve as Snakemake's do there
        return plan_everything(Path("config") / name, workdir / "config/config.yaml")
