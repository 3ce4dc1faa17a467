"""Command-line overrides (`snakemake --config key=value ...`): parsed as Snakemake parses them, with YAML types.

Snakemake's command line turns a `--config` value into an int, a float or True/False where it reads as one, and
else parses it with YAML's BaseLoader, which keeps every scalar inside a mapping or list a string:
`--config 'extraction={max_length: 64}'` arrives as `{'max_length': '64'}` and fails the schema. `parse_overrides`
reads the same arguments with YAML types (`64` an integer, `'64'` a string), so the workflow and `rankscale check`
see what the user wrote. Snakemake takes top-level keys only: it stops at `--config extraction.max_length=64` with a
traceback before it reads the workflow, so the workflow never sees one; `rankscale check` refuses such a key in one
line with the form that works.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from snakemake.utils import update_config

from rankscale.config import ConfigError, UniqueKeyLoader

SOURCE = "--config"  # what an error in an override names as its source (rankscale.plan.errors)
KEY = re.compile(r"[a-zA-Z_][\w-]*\w$")  # a key Snakemake's command line accepts (snakemake.cli.parse_config)


def parse_overrides(arguments: Sequence[str]) -> dict[str, Any]:
    """`--config` arguments (`key=value`, in order) as the configuration they set; raises ConfigError (origin
    `--config`) for an argument Snakemake would refuse or a structured value that is not YAML."""
    out: dict[str, Any] = {}
    for argument in arguments:
        key, value = _split(argument)
        if "." in key and KEY.match(key.replace(".", "_")):
            raise ConfigError(_nested_hint(key, value), origin=SOURCE)
        if not KEY.match(key):
            raise ConfigError(f"{key or '(empty key)'}: not a configuration key (letters, digits, '_' and '-'); "
                              "write `--config key=value`", origin=SOURCE)  # fmt: skip
        update_config(out, {key: parse_value(key, value)})
    return out


def _split(argument: str) -> tuple[str, str]:
    """`key=value` as Snakemake splits it: at the first `=`, quotes stripped from the value's ends."""
    if "=" not in argument:
        raise ConfigError(f"{argument}: no `=`; write `--config key=value` (one argument each)", origin=SOURCE)
    key, value = argument.split("=", 1)
    return key, value.strip("'\"")


def parse_value(key: str, value: str) -> Any:
    """A value as Snakemake's command line types it (int, float, `True`/`False`, else text), except that a mapping
    or a list is read as YAML with its types, not as text throughout."""
    if value == "":
        return None
    for parse in (int, float):
        try:
            return parse(value)
        except ValueError:
            pass
    if value in ("True", "False"):
        return value == "True"
    if not value.lstrip().startswith(("{", "[")):
        return value  # a scalar: Snakemake keeps it as text (`run=0123` stays '0123')
    loader = UniqueKeyLoader(value)
    loader.source = SOURCE
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        column = f" at column {mark.column + 1} of its value" if mark is not None else ""
        raise ConfigError(f"{key}: not valid YAML{column}: {what}; write e.g. `{key}={{name: value}}`",
                          origin=SOURCE) from None  # fmt: skip
    except ConfigError as exc:  # a key given twice
        raise ConfigError(f"{key}: {exc}", origin=SOURCE) from None
    finally:
        loader.dispose()


def _nested_hint(dotted: str, value: str) -> str:
    """A dotted key refused, with the nested form Snakemake takes (`a.b=1` -> `a={b: 1}`)."""
    top, *inner = dotted.split(".")
    nested: Any = _yaml_value(value)
    for part in reversed(inner):
        nested = {part: nested}
    flow = yaml.safe_dump(nested, default_flow_style=True, sort_keys=False, width=10**6).strip()
    return (
        f"{dotted}: Snakemake's --config sets top-level keys only (it stops at a dotted key with a traceback); "
        f"write --config '{top}={flow}' (merged into the `{top}:` settings)"
    )


def _yaml_value(value: str) -> Any:
    try:
        return yaml.safe_load(value) if value else None
    except yaml.YAMLError:
        return value


def apply_overrides(config: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """Lay `overrides` over `config` in place, as Snakemake does (mappings merge, anything else replaces): over a
    configuration Snakemake already laid them over as text, this gives them their YAML types."""
    update_config(config, dict(overrides))


def override_note(overrides: Mapping[str, Any], out: str) -> str | None:
    """One line where `--config` overrides give the run a results directory of its own (`rankscale.layout.run_name`):
    without it, a run would plan into a directory nobody named."""
    if not overrides:
        return None
    if "run" in overrides:
        return f"note: --config sets run={overrides['run']}: this run writes {out}/"
    return (
        f"note: --config overrides make this a configuration of its own: it writes {out}/ (its name and the "
        "overrides' digest; the same overrides, the same directory); name it with --config run=NAME"
    )
