"""Defaults live once, in workflow/schemas/config.schema.yaml: the code gives no configured key a default of its own,
and the shipped configurations state only what differs from the schema, each with a reason."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rankscale.canon import canonical
from rankscale.config import ConfigError, json_path, load_schema, load_yaml, validate
from tests.conftest import REPO

CONFIGS = ["config.yaml", "smoke.yaml", "paper.yaml", "pythia_training.yaml", "bfloat16.yaml"]
CODE = sorted([*(REPO / "src/rankscale").rglob("*.py"), *(REPO / "workflow").rglob("*.py")])

# (file, name): a parameter that shares a configured key's name but holds something else. Keep it
# short, and say why each is not a setting.
NOT_SETTINGS = {
    ("src/rankscale/logs.py", "level"): "a logging level, not analysis.bootstrap.level",
    ("src/rankscale/remote.py", "name"): "a DVC remote's name (`share.py push -r`), not a model's `name`; None: DVC's default",
    **{
        ("src/rankscale/plots/declaration.py", key): (
            "FigureSettings: None (or empty) marks a setting the figure does not declare, and `get` refuses to read "
            "one; each declared value comes from the validated configuration (rankscale.plan.figure_settings)"
        )
        for key in ("rbp_k", "large_k", "emergence_extrapolate", "snr_threshold", "datasets", "models", "law_form",
                    "level", "refits", "seed")  # fmt: skip
    },
    ("src/rankscale/documents.py", "revision"): (
        "the commit `resolve_revision` returned; None where there is none, and the source reads the entry's "
        "configured `revision` as written (workflow/scripts/ladder_corpus.py passes none)"
    ),
}


def configured_keys(node: Any) -> set[str]:
    """Every property name of the schema, at any depth: the keys a configuration can set."""
    keys: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            keys |= set(node["properties"])
        for value in node.values():
            keys |= configured_keys(value)
    elif isinstance(node, list):
        for value in node:
            keys |= configured_keys(value)
    return keys


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for decorator in cls.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Name) and target.id == "dataclass") or (
            isinstance(target, ast.Attribute) and target.attr == "dataclass"
        ):
            return True
    return False


def _field_default(value: ast.expr) -> ast.expr | None:
    """The default a dataclass field's value gives it: `x: int = 3`, `field(default=...)` or `field(default_factory=...)`."""
    func = value.func if isinstance(value, ast.Call) else None
    if (isinstance(func, ast.Name) and func.id == "field") or (
        isinstance(func, ast.Attribute) and func.attr == "field"
    ):
        given = [k.value for k in value.keywords if k.arg in ("default", "default_factory")]  # type: ignore[union-attr]
        return given[0] if given else None
    return value


def _key(node: ast.expr, keys: set[str]) -> str | None:
    return node.value if isinstance(node, ast.Constant) and node.value in keys else None


def code_defaults(source: str, keys: set[str]) -> Iterator[tuple[int, str, str]]:
    """(line, key, what) for each default the code gives a name that is a configured key."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = [
                *zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True),
                *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None),
            ]
            for arg, default in pairs:
                if arg.arg in keys:
                    yield default.lineno, arg.arg, f"parameter `{arg.arg}` defaults to {ast.unparse(default)}"
        elif isinstance(node, ast.ClassDef) and _is_dataclass(node):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    default = _field_default(item.value)
                    if item.target.id in keys and default is not None:
                        yield (
                            item.lineno,
                            item.target.id,
                            f"dataclass field `{item.target.id}` defaults to {ast.unparse(default)}",
                        )
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("get", "setdefault", "pop") and len(node.args) == 2:
                if key := _key(node.args[0], keys):
                    yield node.lineno, key, f".{func.attr}({key!r}, {ast.unparse(node.args[1])})"
            if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) == 3:
                if key := _key(node.args[1], keys):
                    yield node.lineno, key, f"getattr(..., {key!r}, {ast.unparse(node.args[2])})"


def scan(keys: set[str]) -> list[tuple[str, int, str, str]]:
    return [
        (str(path.relative_to(REPO)), line, key, what)
        for path in CODE
        for line, key, what in code_defaults(path.read_text(encoding="utf-8"), keys)
    ]


KEYS = configured_keys(load_schema())


def test_no_code_default_of_a_configured_key() -> None:
    """The schema holds every default: code takes each configured value as a required argument
    (or indexes the validated config), so a default changed in the schema is the one in effect."""
    assert {"ties", "truncate", "level", "batch_size", "separator", "add_special_tokens", "rbp_k"} <= KEYS
    found = [f"{path}:{line}: {key}: {what}" for path, line, key, what in scan(KEYS) if (path, key) not in NOT_SETTINGS]
    assert not found, (
        "code defaults of configured keys (make the value required and pass the configured one):\n" + "\n".join(found)
    )


def test_every_allowed_name_is_still_there() -> None:
    """An allow-list entry whose parameter is gone would hide the next real code default of that name."""
    present = {(path, key) for path, _, key, _ in scan(KEYS)}
    assert set(NOT_SETTINGS) <= present, sorted(set(NOT_SETTINGS) - present)


def test_the_scan_finds_each_kind_of_code_default() -> None:
    source = """
from dataclasses import dataclass, field

def f(x, ties="ge", *, truncate=True, other=1): ...
def g(level, seed): ...

@dataclass(frozen=True)
class Settings:
    batch_size: int = 8
    head_chunk: list = field(default_factory=list)
    stride: int = field(repr=False)
    dtype: str

class NotADataclass:
    threads: int = 1

spec.get("separator", "\\n")
spec.get("separator")
spec.setdefault("seed", 0)
getattr(args, "level", 0.95)
getattr(args, "level")
"""
    found = [(line, key) for line, key, _ in code_defaults(source, KEYS)]
    assert sorted(found) == [
        (4, "ties"),
        (4, "truncate"),
        (9, "batch_size"),
        (10, "head_chunk"),
        (17, "separator"),
        (19, "seed"),
        (20, "level"),
    ]


def key_lines(path: Path) -> dict[tuple[Any, ...], int]:
    """The line (0-based) of every mapping key of a YAML file, by key path (list items by index), parents first."""
    lines: dict[tuple[Any, ...], int] = {}

    def walk(node: yaml.Node, prefix: tuple[Any, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                lines[(*prefix, key.value)] = key.start_mark.line
                walk(value, (*prefix, key.value))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*prefix, i))

    walk(yaml.compose(path.read_text()), ())
    return lines


def get(config: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        config = config[part]
    return config


def without(config: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    trial = copy.deepcopy(config)
    del get(trial, path[:-1])[path[-1]]
    return trial


def default_of(config: dict[str, Any], path: tuple[Any, ...]) -> tuple[bool, Any]:
    """(has a default, the default): drop the key and let validation fill it back in."""
    try:
        trial = validate(without(config, path))
    except ConfigError:
        return False, None  # a required key
    parent = get(trial, path[:-1])
    return (path[-1] in parent), parent.get(path[-1])


@pytest.mark.parametrize("name", CONFIGS)
def test_configs_restate_no_default(name: str) -> None:
    """A key whose removal changes nothing once validated restates the schema's default: leave it out."""
    path = REPO / "config" / name
    config = load_yaml(path)
    full = canonical(validate(copy.deepcopy(config)))
    restated: dict[tuple[Any, ...], int] = {}
    for key, line in key_lines(path).items():
        if any(key[: len(r)] == r for r in restated):
            continue  # inside a section already reported
        try:
            same = canonical(validate(without(config, key))) == full
        except ConfigError:
            continue  # a required key
        if same:
            restated[key] = line
    assert not restated, f"config/{name} restates workflow/schemas/config.schema.yaml's defaults (leave them out): " + ", ".join(
        f"{json_path(key)} (line {line + 1})" for key, line in restated.items()
    )


SETTINGS = ("extraction", "analysis", "figures", "tokenization", "ladder")  # not the data: datasets, ladder.corpus


@pytest.mark.parametrize("name", CONFIGS)
def test_configs_state_non_default_values_only_with_a_reason(name: str) -> None:
    """A setting differing from the schema's default needs a comment on its line saying why."""
    path = REPO / "config" / name
    config = yaml.safe_load(path.read_text())
    text = path.read_text().splitlines()
    undocumented = []
    for key, line in key_lines(path).items():
        if key[0] not in SETTINGS or key[:2] == ("ladder", "corpus") or isinstance(get(config, key), dict):
            continue
        has_default, default = default_of(config, key)
        if has_default and canonical(default) != canonical(get(config, key)) and "#" not in text[line]:
            undocumented.append(f"{json_path(key)} = {get(config, key)!r} (default {default!r})")
    assert not undocumented, f"config/{name} differs from the schema's defaults without a comment: {undocumented}"


def defined_keys(schema: dict[str, Any], node: dict[str, Any]) -> set[str]:
    """The property names `node` defines, following `$ref` and `allOf`."""
    keys = set(node.get("properties", {}))
    refs = [node["$ref"]] if "$ref" in node else []
    for part in node.get("allOf", []):
        keys |= defined_keys(schema, part)
    for ref in refs:
        keys |= defined_keys(schema, schema["$defs"][ref.removeprefix("#/$defs/")])
    return keys


def test_extraction_gives_every_model_setting_its_default() -> None:
    """Model entries accept the extraction settings without defaults; `extraction:` holds one for each."""
    schema = load_schema()
    settings = defined_keys(schema, schema["$defs"]["extraction_settings"])
    assert {"max_length", "stride", "ties", "dtype", "runtime"} <= settings
    assert set(schema["properties"]["extraction"]["default"]) == settings
    config = validate(
        {
            "datasets": {"d": {"source": "packaged", "name": "humaneval"}},
            "extraction": {"batch_size": 4},
            "models": [{"name": "m", "family": "f", "hub_id": "org/m", "dtype": "bfloat16"}],
        }
    )
    assert set(config["extraction"]) == settings and config["extraction"]["batch_size"] == 4
    model = config["models"][0]
    assert model["dtype"] == "bfloat16" and not (settings - {"dtype"}) & set(model)  # the rest: from `extraction:`
