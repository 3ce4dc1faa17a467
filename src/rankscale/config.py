"""The configuration: validated against workflow/schemas/config.schema.yaml, with its defaults filled in.

Every default lives in the schema (`default:`); `validate` fills them in, so the rest of the
code indexes keys without fallbacks (tests/test_defaults.py keeps it so).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from rankscale.errors import ConfigError  # noqa: F401  (where the configuration's users import it from)

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
NAME_HINT = " (names become file and directory names: letters, digits, '.', '_' and '-', not starting with '.')"


@cache
def load_schema(schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """workflow/schemas/config.schema.yaml, completed with the dataset sources of rankscale.sources.SOURCES."""
    schema: dict[str, Any] = load_yaml(schema_path)
    _add_dataset_sources(schema, schema_path)
    return schema


def _add_dataset_sources(schema: dict[str, Any], schema_path: Path) -> None:
    """Complete `$defs/dataset` from the sources the schema defines (`$defs/<name>_dataset`, one per source of
    `rankscale.sources.SOURCES`; tests/test_config.py keeps the two lists equal).

    `source` becomes one of those names, and each name gets a branch: an entry with `source: <name>` takes
    the keys of `$defs/<name>_dataset` (and its defaults). An entry whose source is unknown gets that one
    error, not one more for each of its keys. The names are read from the schema, not imported from
    `rankscale.sources`, which validates its entries with this module: no import climbs back up.
    """
    definitions = schema["$defs"]
    names = sorted(key.removesuffix("_dataset") for key in definitions if key.endswith("_dataset"))
    if not names:
        raise ConfigError(f"{schema_path}: no $defs/<name>_dataset: the schema defines no dataset source")
    dataset = definitions["dataset"]
    dataset["properties"]["source"]["enum"] = names
    dataset["allOf"] = [
        *(
            {
                "if": {"properties": {"source": {"const": name}}, "required": ["source"]},
                "then": {"$ref": f"#/$defs/{name}_dataset"},
            }
            for name in names
        ),
        {
            "if": {"properties": {"source": {"enum": names}}, "required": ["source"]},
            "else": {"additionalProperties": True},
        },
    ]


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's SafeLoader, except that a mapping key given twice is an error.

    Plain YAML loaders let the last duplicate win silently: a study would run with a value its
    author thinks they overrode, or not.
    """

    source = "<string>"

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(
                    f"duplicate key {key!r} (first given on line {seen[key]}); YAML would silently keep only the "
                    "last one: remove one of them",
                    origin=f"{self.source}:{line}",
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: str | Path) -> Any:
    """A YAML (or JSON) config file; a key given twice in one mapping is refused with file and line."""
    text = Path(path).read_text(encoding="utf-8")
    try:  # JSON first, as Snakemake reads config files (JSON with tabs is not YAML)
        return json.loads(text, object_pairs_hook=lambda pairs: _unique_pairs(pairs, path))
    except json.JSONDecodeError:
        pass
    loader = UniqueKeyLoader(text)
    loader.source = str(path)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        column = f" (column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"not valid YAML: {what}{column}; fix the syntax at that line", origin=where) from None
    finally:
        loader.dispose()


def _unique_pairs(pairs: list[tuple[str, Any]], path: str | Path) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise ConfigError(f"duplicate key {duplicates[0]!r} in one JSON object; remove one of them", origin=str(path))
    return dict(pairs)


def json_path(parts: Any) -> str:
    """`datasets.mine.text_fields[0]` from a jsonschema error path."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _validator_class(root: Mapping[str, Any]) -> Any:
    """Draft 2020-12 that fills `default:` values into the instance as it validates.

    A property's `default:` is filled in where the key is missing; an object's `default:` is
    also filled in key by key where the object is given (how `extraction:` holds the defaults of
    the extraction settings, which model entries accept too without defaults of their own).
    `unevaluatedProperties: false` refuses the keys that no subschema applying to the object
    defines (`properties`, through `$ref`, `allOf` and `if`/`then`/`else`). Unlike the
    spec's annotations, a key stays known where a value under it or a sibling is invalid: a
    bad value gets its own error, never a second one calling its key (and its neighbours')
    unexpected.
    """
    import jsonschema

    base = jsonschema.Draft202012Validator
    check_properties = base.VALIDATORS["properties"]

    def properties_with_defaults(validator: Any, properties: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if isinstance(instance, dict):
            for key, subschema in properties.items():
                if not isinstance(subschema, dict) or "default" not in subschema:
                    continue
                default = subschema["default"]
                if key not in instance:
                    instance[key] = copy.deepcopy(default)
                elif isinstance(default, dict) and isinstance(instance[key], dict):
                    for inner, value in default.items():
                        instance[key].setdefault(inner, copy.deepcopy(value))
        yield from check_properties(validator, properties, instance, schema)

    def defined_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str] | None:
        """The keys the branches that apply to `instance` define (None: any key is allowed)."""
        if not isinstance(schema, dict):
            return set()
        if schema.get("additionalProperties") is True:
            return None
        defined: set[str] | None = set(schema.get("properties", {}))
        parts = list(schema.get("allOf", []))
        if "$ref" in schema:
            parts.append(_resolve(root, schema["$ref"]))
        if "if" in schema:
            parts.append(schema.get("then" if validator.evolve(schema=schema["if"]).is_valid(instance) else "else"))
        for part in parts:
            inner = defined_keys(validator, instance, part)
            defined = None if defined is None or inner is None else defined | inner
        return defined

    def unevaluated_properties(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if unevaluated is not False:
            raise ValueError(f"the schema's unevaluatedProperties: only `false` is supported, not {unevaluated!r}")
        if isinstance(instance, dict):
            defined = defined_keys(validator, instance, schema)
            if defined is None:
                return
            elsewhere = all_keys(schema, root)
            for key in sorted(set(instance) - defined, key=str):
                hint = "another kind of entry (`source:`) has it; remove it" if key in elsewhere else did_you_mean(key, defined)
                yield jsonschema.ValidationError(f"unknown key ({key!r} was unexpected); {hint}")

    return jsonschema.validators.extend(
        base, {"properties": properties_with_defaults, "unevaluatedProperties": unevaluated_properties}
    )


def all_keys(schema: Any, root: Mapping[str, Any] | None = None, seen: frozenset[str] = frozenset()) -> set[str]:
    """Every key an object under `schema` may have, whichever branch applies (for suggestions)."""
    if not isinstance(schema, dict):
        return set()
    root = root if root is not None else load_schema()
    keys = set(schema.get("properties", {}))
    for part in [*schema.get("allOf", []), schema.get("then"), schema.get("else")]:
        keys |= all_keys(part, root, seen)
    ref = schema.get("$ref")
    if ref and ref not in seen:
        keys |= all_keys(_resolve(root, ref), root, seen | {ref})
    return keys


def did_you_mean(key: str, known: set[str]) -> str:
    """`did you mean 'x'?` for a misspelt key (difflib), else the keys known there."""
    import difflib

    close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"known keys here: {', '.join(sorted(known))}" if known else "remove it"


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    """The subschema a local `$ref` ("#/$defs/name") points at."""
    if not ref.startswith("#/"):
        raise ValueError(f"the schema's $ref: only local references ('#/...') are supported, not {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def problems(instance: Any, schema: Mapping[str, Any], where: str = "") -> list[str]:
    """One line per violation, each starting with the key path it concerns (defaults filled in as a side effect)."""
    validator = _validator_class(schema)(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    name_pattern = schema["$defs"]["name"]["pattern"]  # model, ladder size and dataset names
    lines = []
    for error in errors:
        path = json_path(error.absolute_path) if error.absolute_path else ""
        key = ".".join(p for p in (where, path) if p) or "(top level)"
        hint = NAME_HINT if error.validator == "pattern" and error.validator_value == name_pattern else ""
        lines.append(f"{key}: {error.message}{hint}{_fix(error)}")
    return lines


def _fix(error: Any) -> str:
    """What to write instead, for the schema's common refusals (the message says what is wrong)."""
    value = error.validator_value
    fixes = {
        "enum": lambda: "; write one of these",
        "type": lambda: f"; write {'an' if str(value)[0] in 'aeiou' else 'a'} {value}",
        "required": lambda: f"; add `{error.message.split(chr(39))[1]}:`" if "'" in error.message else "",
        "minimum": lambda: f"; use a value of at least {value}",
        "exclusiveMinimum": lambda: f"; use a value above {value}",
        "maximum": lambda: f"; use a value of at most {value}",
        "minItems": lambda: f"; give at least {value}",
        "pattern": lambda: "; rename it",
    }
    return fixes[error.validator]() if error.validator in fixes else ""


def refuse_old_forms(config: Mapping[str, Any]) -> None:
    """Keys whose form changed, refused with the form to write instead (before the schema's generic message)."""
    datasets = config.get("datasets") if isinstance(config, Mapping) else None
    for name, spec in (datasets or {}).items() if isinstance(datasets, Mapping) else ():
        if isinstance(spec, Mapping) and "max_scored_tokens" in spec:
            suggested = f"max_bytes: {4 * int(spec['max_scored_tokens'])}" if spec["max_scored_tokens"] else "max_bytes"
            raise ConfigError(
                f"datasets.{name}.max_scored_tokens: removed. It kept documents per tokenizer, so two families scored "
                "different documents and could not be compared draw by draw; cap the dataset itself instead, in "
                f"UTF-8 bytes of text, the same documents for every tokenizer: `{suggested}` (about 4 bytes a token "
                "for English text and code)"
            )
    ladder = config.get("ladder") if isinstance(config, Mapping) else None
    if not isinstance(ladder, Mapping):
        return
    corpus = ladder.get("corpus")
    if isinstance(corpus, Mapping):
        entries = ", ".join(json.dumps(spec) for spec in corpus.values())
        raise ConfigError(
            "ladder.corpus: a mapping gives its entries no order, but their order is the training text's; "
            f"write it as a list, in the order you mean (was {list(corpus)}): `corpus: [{entries}]`"
        )
    train = ladder.get("train")
    if isinstance(train, Mapping) and "seed" in train:
        raise ConfigError(
            f"ladder.train.seed: replaced by ladder.train.seeds, a list (each size is trained once per seed; the "
            f"first keeps the sizes' names): write `seeds: [{train['seed']}]`"
        )


def validate(config: dict[str, Any], schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """Check `config` against the schema and fill in every default, in place; one line per problem."""
    refuse_old_forms(config)
    lines = problems(config, load_schema(Path(schema_path)))
    if lines:  # one line per problem, each naming its key (the workflow names the file: rankscale.plan.errors)
        raise ConfigError("\n".join(lines))
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
    lines = problems(out, {"$ref": "#/$defs/dataset", "$defs": schema["$defs"]}, where)
    if lines:
        raise ConfigError("; ".join(lines))
    return out
