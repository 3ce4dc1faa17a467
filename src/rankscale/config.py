"""The configuration: validated against config/schema.yaml, with its defaults filled in.

Every default lives in the schema (`default:`); `validate` fills them in, so the rest of the
code indexes keys without fallbacks.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"


class ConfigError(ValueError):
    """The configuration is unusable; the message names the key and the value."""


@cache
def load_schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text())


def json_path(parts: Any) -> str:
    """`datasets.mine.text_fields[0]` from a jsonschema error path."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _validator_class() -> Any:
    """Draft 2020-12 that fills `default:` values into the instance as it validates."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    check_properties = base.VALIDATORS["properties"]

    def properties_with_defaults(validator: Any, properties: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if isinstance(instance, dict):
            for key, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema and key not in instance:
                    instance[key] = copy.deepcopy(subschema["default"])
        yield from check_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(base, {"properties": properties_with_defaults})


def problems(instance: Any, schema: Mapping[str, Any], where: str = "") -> list[str]:
    """One line per violation, each starting with the key path it concerns (defaults filled in as a side effect)."""
    validator = _validator_class()(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    lines = []
    for error in errors:
        path = json_path(error.absolute_path) if error.absolute_path else ""
        key = ".".join(p for p in (where, path) if p) or "(top level)"
        lines.append(f"{key}: {error.message}")
    return lines


def validate(config: dict[str, Any], schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """Check `config` against the schema and fill in every default, in place; one line per problem."""
    lines = problems(config, load_schema(Path(schema_path)))
    if lines:
        raise ConfigError(f"{schema_path}: the configuration is invalid:\n  " + "\n  ".join(lines))
    if config["models"] is None:  # `models:` left empty in YAML
        config["models"] = []
    _integral_floats_to_int(config)
    return config


def _integral_floats_to_int(node: Any) -> None:
    """In place: 64.0 -> 64, so a value reads the same however the YAML wrote it (the schema's
    "integer" accepts 64.0, and settings such as threads or batch sizes must be ints)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in list(items):
        if isinstance(value, float) and value.is_integer():
            node[key] = int(value)
        else:
            _integral_floats_to_int(value)


def dataset_spec(spec: Mapping[str, Any], where: str = "dataset") -> dict[str, Any]:
    """One dataset entry checked against the schema, with its source's defaults filled in."""
    schema = load_schema()
    out = copy.deepcopy(dict(spec))
    lines = problems(out, {"$ref": "#/definitions/dataset", "definitions": schema["definitions"]}, where)
    if lines:
        raise ConfigError("; ".join(lines))
    return out
