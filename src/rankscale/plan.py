"""The configuration turned into concrete models, tokenizers and settings for the workflow.

`check_schema` validates shapes and types against config/schema.yaml; `build_plan` checks
what a schema cannot (duplicate names, missing paths and fields, remote code, pickle
checkpoints, families too small to fit) and resolves per-model settings from the global
defaults, so every rule sees one consistent plan. Every error names the key and the value,
and all of it runs before any job starts.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rankscale.corpus import PACKAGED
from rankscale.models import ModelSource
from rankscale.windows import WINDOW_KEYS

LADDER_DIR = "resources/ladder"


class ConfigError(ValueError):
    """The configuration is unusable; the message names the key and the value."""


# Settings that define a rank array: changing one reruns that model's extraction (DESIGN.md §2).
IDENTITY_KEYS = ("dtype", "head_dtype", "max_length", "stride", "max_windows_per_doc", "ties")
# Settings that only change how fast or where extraction runs.
RUNTIME_KEYS = (
    "device",
    "batch_size",
    "head_chunk",
    "device_map",
    "attn_implementation",
    "threads",
    "gpus",
    "mem_mb",
    "runtime",
)


@dataclass(frozen=True)
class ModelPlan:
    name: str
    family: str
    source: ModelSource
    ladder: bool
    tokenizer_key: str
    identity: dict[str, Any] = field(default_factory=dict)
    runtime: dict[str, Any] = field(default_factory=dict)
    expected_size: int | None = None  # published S, checked against the loaded model
    expected_vocab: int | None = None  # published len(tokenizer), checked at extraction
    dataset_windows: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-dataset window overrides

    def identity_for(self, dataset: str) -> dict[str, Any]:
        """The settings a rank array on `dataset` is computed with (the dataset's windows win)."""
        return {**self.identity, **self.dataset_windows.get(dataset, {})}

    def windows_for(self, dataset: str) -> dict[str, Any]:
        identity = self.identity_for(dataset)
        return {k: identity[k] for k in WINDOW_KEYS}

    def identity_params(self, dataset: str) -> dict[str, Any]:
        """Everything a rank array depends on, as Snakemake params (a change reruns extraction)."""
        return {
            "location": self.source.location,
            "revision": self.source.revision,
            "tokenizer": self.source.tokenizer_location,
            **self.identity_for(dataset),
        }


def slug(text: str) -> str:
    """A file-name-safe key: 'EleutherAI/pythia-70m' -> 'EleutherAI--pythia-70m'."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "-", text.replace("/", "--")).strip("-")


def _json_path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def check_schema(config: Mapping[str, Any], schema_path: str | Path) -> None:
    """Validate against the JSON schema; one line per violation, each naming its key path."""
    import jsonschema

    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"{_json_path(e.absolute_path)}: {e.message}" for e in errors]
        raise ConfigError(f"{schema_path}: the configuration is invalid:\n  " + "\n  ".join(lines))


def ladder_models(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    ladder = config.get("ladder") or {}
    family = ladder.get("family", "ladder")
    return [
        {
            "name": s["name"],
            "family": family,
            "ladder": True,
            **{k: v for k, v in s.items() if k in IDENTITY_KEYS + RUNTIME_KEYS},
        }
        for s in ladder.get("sizes", [])
    ]


def check_ladder(config: Mapping[str, Any]) -> None:
    for i, size in enumerate((config.get("ladder") or {}).get("sizes", [])):
        if size["d_model"] % size["heads"]:
            raise ConfigError(
                f"ladder.sizes[{i}].heads: {size['heads']} heads do not divide d_model = {size['d_model']} "
                f"(size {size['name']!r})"
            )


def _first_record(path: Path) -> dict[str, Any] | None:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    return json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{path}: first record is not valid JSON ({exc.msg})") from exc
    return None


def check_datasets(config: Mapping[str, Any], check_paths: bool = True) -> None:
    """Dataset entries that can be checked without loading them: names, paths, local fields."""
    from rankscale.corpus import get_field

    sections = {f"datasets.{k}": v for k, v in config.get("datasets", {}).items()}
    sections.update({f"ladder.corpus.{k}": v for k, v in ((config.get("ladder") or {}).get("corpus") or {}).items()})
    for where, spec in sections.items():
        source = spec.get("source")
        if spec.get("max_scored_tokens") and (spec.get("windows") or {}).get("max_windows_per_doc"):
            warnings.warn(
                f"{where}: max_scored_tokens counts every token of each document, but windows.max_windows_per_doc "
                "scores only the first windows: fewer targets than max_scored_tokens will be scored",
                stacklevel=2,
            )
        if source == "packaged" and spec.get("name") not in PACKAGED:
            raise ConfigError(f"{where}.name: unknown packaged corpus {spec.get('name')!r}; choose one of {PACKAGED}")
        if source in ("local", "hub") and not spec.get("path"):
            raise ConfigError(f"{where}.path: a {source} dataset needs `path`")
        if source == "local" and check_paths:
            path = Path(spec["path"])
            if not path.is_file():
                raise ConfigError(f"{where}.path: file {str(path)!r} does not exist")
            if path.stat().st_size == 0:
                raise ConfigError(f"{where}.path: file {str(path)!r} is empty")
            if path.suffix in (".jsonl", ".json"):
                record = _first_record(path)
                if record is None:
                    raise ConfigError(f"{where}.path: file {str(path)!r} holds no records")
                for text_field in spec.get("text_fields", ["text"]):
                    try:
                        get_field(record, text_field, f"{where}.text_fields")
                    except ValueError as exc:
                        raise ConfigError(f"{exc} in the first record of {str(path)!r}") from None


def check_local_model(path: Path, entry: Mapping[str, Any], where: str) -> None:
    """Refuse remote code and pickle checkpoints unless the entry opts in, before any job runs."""
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ConfigError(f"{where}.path: {str(path)!r} has no config.json (not a save_pretrained directory)")
    model_config = json.loads(config_file.read_text())
    if "auto_map" in model_config and not entry.get("trust_remote_code", False):
        raise ConfigError(
            f"{where}.trust_remote_code: model {entry['name']!r} at {str(path)!r} ships its own code "
            f"(auto_map: {sorted(model_config['auto_map'])}); set `trust_remote_code: true` only if you trust it"
        )
    has_safetensors = any(path.glob("*.safetensors")) or (path / "model.safetensors.index.json").exists()
    has_pickle = any(path.glob("*.bin")) or any(path.glob("*.pt"))
    if not has_safetensors and has_pickle and not entry.get("allow_pickle", False):
        raise ConfigError(
            f"{where}.allow_pickle: model {entry['name']!r} at {str(path)!r} has only pickle checkpoints (*.bin), "
            "which can run arbitrary code when loaded; convert it to safetensors or set `allow_pickle: true`"
        )


def _source(entry: Mapping[str, Any], where: str, check_paths: bool) -> tuple[ModelSource, str]:
    """Where a model comes from and the key of its tokenization jobs."""
    name = entry["name"]
    flags = {
        "trust_remote_code": bool(entry.get("trust_remote_code", False)),
        "allow_pickle": bool(entry.get("allow_pickle", False)),
    }
    tok_rev = {"tokenizer_revision": entry.get("tokenizer_revision")}
    if entry.get("ladder"):
        location = f"{LADDER_DIR}/models/{name}"
        return ModelSource(name=name, location=location, local=True, tokenizer=f"{LADDER_DIR}/tokenizer"), "ladder"
    if entry.get("path"):
        path = str(entry["path"])
        if check_paths:
            if not Path(path).exists():
                raise ConfigError(f"{where}.path: model {name!r} points at {path!r}, which does not exist")
            check_local_model(Path(path), entry, where)
            tokenizer = entry.get("tokenizer")
            if tokenizer and tokenizer.startswith(("/", ".")) and not Path(tokenizer).exists():
                raise ConfigError(f"{where}.tokenizer: {tokenizer!r} does not exist")
        source = ModelSource(name=name, location=path, local=True, tokenizer=entry.get("tokenizer"), **flags, **tok_rev)
        return source, _tokenizer_key(source)
    if entry.get("hub_id"):
        revision = entry.get("revision", "main")
        source = ModelSource(
            name=name, location=entry["hub_id"], revision=revision, tokenizer=entry.get("tokenizer"), **flags, **tok_rev
        )
        return source, _tokenizer_key(source)
    raise ConfigError(f"{where}: model {name!r} needs `hub_id` (with optional `revision`) or `path`")


def _tokenizer_key(source: ModelSource) -> str:
    """Models whose tokenizers load from the same place at the same revision share one key."""
    if source.tokenizer is None:
        return slug(source.location) if source.local else slug(f"{source.location}@{source.revision}")
    ref = source.tokenizer_ref
    return slug(source.tokenizer if ref in (None, "main") else f"{source.tokenizer}@{ref}")


def build_plan(config: Mapping[str, Any], check_paths: bool = True) -> dict[str, ModelPlan]:
    """Resolve every model entry (ladder sizes first) into a ModelPlan, in config order."""
    check_ladder(config)
    check_datasets(config, check_paths)
    defaults = config.get("extraction", {})
    plans: dict[str, ModelPlan] = {}
    n_ladder = len(ladder_models(config))
    for i, entry in enumerate(ladder_models(config) + list(config.get("models") or [])):
        where = f"ladder.sizes[{i}]" if entry.get("ladder") else f"models[{i - n_ladder}]"
        name = entry.get("name")
        if not name or not re.fullmatch(r"[A-Za-z0-9._-]+", str(name)):
            raise ConfigError(f"{where}.name: {name!r} must be non-empty and use only letters, digits, '.', '_' or '-'")
        if name in plans:
            raise ConfigError(f"{where}.name: duplicate model name {name!r}")
        if not entry.get("family"):
            raise ConfigError(f"{where}.family: model {name!r} has no family (needed to group models for fits)")
        source, tok_key = _source(entry, where, check_paths)
        identity = _merged(defaults, entry, IDENTITY_KEYS)
        # the head dtype only matters below float32; leaving it out for float32 models keeps
        # their arrays (and Snakemake params) identical to those computed before it existed
        if identity["dtype"] == "float32":
            del identity["head_dtype"]
        else:
            identity["head_dtype"] = identity["head_dtype"] or "float32"
        _check_windows(identity, where)
        windows = dataset_windows(config)
        for dataset, override in windows.items():
            _check_windows({**identity, **override}, f"datasets.{dataset}.windows (model {name!r})")
        plans[name] = ModelPlan(
            name=name,
            family=str(entry["family"]),
            source=source,
            ladder=bool(entry.get("ladder")),
            tokenizer_key=tok_key,
            identity=identity,
            runtime=_merged(defaults, entry, RUNTIME_KEYS),
            expected_size=entry.get("S"),
            expected_vocab=entry.get("vocab_size"),
            dataset_windows=windows,
        )
    if not plans:
        raise ConfigError("models: the configuration lists no models (ladder.sizes and models are both empty)")
    _warn_small_families(plans)
    return plans


def dataset_windows(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Window settings fixed by dataset entries (e.g. the authors' one 512-token window per document)."""
    return {
        name: {k: v for k, v in spec["windows"].items() if k in WINDOW_KEYS}
        for name, spec in config.get("datasets", {}).items()
        if spec.get("windows")
    }


def _check_windows(identity: Mapping[str, Any], where: str) -> None:
    length, stride = identity["max_length"], identity["stride"]
    if length is None or int(length) < 2:
        raise ConfigError(f"{where}.max_length: window length must be >= 2, got {length!r}")
    if stride is not None and not 1 <= int(stride) < int(length):
        raise ConfigError(f"{where}.stride: {stride!r} must be in 1..max_length-1 = {int(length) - 1}")


def _merged(defaults: Mapping[str, Any], entry: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: entry.get(k, defaults.get(k)) for k in keys}


def _warn_small_families(plans: Mapping[str, ModelPlan]) -> None:
    families: dict[str, list[str]] = {}
    for plan in plans.values():
        families.setdefault(plan.family, []).append(plan.name)
    for family, members in families.items():
        if len(members) < 2:
            warnings.warn(
                f"family {family!r} has only {members}: no power-law fit is possible for it "
                "(its points still appear in tables and figures)",
                stacklevel=2,
            )


def tokenizer_sources(plans: Mapping[str, ModelPlan]) -> dict[str, ModelSource]:
    """One source per tokenizer key (models sharing a key share one tokenization job)."""
    out: dict[str, ModelSource] = {}
    for plan in plans.values():
        out.setdefault(plan.tokenizer_key, plan.source)
    return out
