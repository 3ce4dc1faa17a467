"""The configuration turned into concrete models, tokenizers and settings for the workflow.

The JSON schema (config/schema.yaml) checks shapes and types; this module checks what a
schema cannot (duplicate names, missing paths, families too small to fit) and resolves
per-model settings from the global defaults, so every rule sees one consistent plan.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankscale.models import ModelSource

LADDER_DIR = "resources/ladder"


class ConfigError(ValueError):
    """The configuration is unusable; the message names the key and the value."""


# Settings that define a rank array: changing one reruns that model's extraction (DESIGN.md §2).
IDENTITY_KEYS = ("dtype", "max_length", "stride", "max_windows_per_doc", "ties")
# Settings that only change how fast or where extraction runs.
RUNTIME_KEYS = ("device", "batch_size", "head_chunk", "device_map", "threads", "gpus", "mem_mb", "runtime")


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

    def identity_params(self) -> dict[str, Any]:
        """Everything a rank array depends on, as Snakemake params (a change reruns extraction)."""
        return {
            "location": self.source.location,
            "revision": self.source.revision,
            "tokenizer": self.source.tokenizer_location,
            **self.identity,
        }


def slug(text: str) -> str:
    """A file-name-safe key: 'EleutherAI/pythia-70m' -> 'EleutherAI--pythia-70m'."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "-", text.replace("/", "--")).strip("-")


def _merged(defaults: Mapping[str, Any], entry: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: entry.get(k, defaults.get(k)) for k in keys}


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


def build_plan(config: Mapping[str, Any], check_paths: bool = True) -> dict[str, ModelPlan]:
    """Resolve every model entry (ladder sizes first) into a ModelPlan, in config order."""
    defaults = config.get("extraction", {})
    plans: dict[str, ModelPlan] = {}
    entries = ladder_models(config) + list(config.get("models") or [])
    for i, entry in enumerate(entries):
        where = f"models[{i - len(ladder_models(config))}]" if not entry.get("ladder") else f"ladder.sizes[{i}]"
        name = entry.get("name")
        if not name or not re.fullmatch(r"[A-Za-z0-9._-]+", str(name)):
            raise ConfigError(f"{where}.name: {name!r} must be non-empty and use only letters, digits, '.', '_' or '-'")
        if name in plans:
            raise ConfigError(f"{where}.name: duplicate model name {name!r}")
        if not entry.get("family"):
            raise ConfigError(f"{where}.family: model {name!r} has no family (needed to group models for fits)")
        if entry.get("ladder"):
            source = ModelSource(
                name=name, location=f"{LADDER_DIR}/models/{name}", local=True, tokenizer=f"{LADDER_DIR}/tokenizer"
            )
            tok_key = "ladder"
        elif entry.get("path"):
            path = str(entry["path"])
            if check_paths and not Path(path).exists():
                raise ConfigError(f"{where}.path: model {name!r} points at {path!r}, which does not exist")
            source = ModelSource(
                name=name,
                location=path,
                local=True,
                tokenizer=entry.get("tokenizer"),
                trust_remote_code=bool(entry.get("trust_remote_code", False)),
                allow_pickle=bool(entry.get("allow_pickle", False)),
            )
            tok_key = slug(entry.get("tokenizer") or path)
        elif entry.get("hub_id"):
            revision = entry.get("revision", "main")
            source = ModelSource(
                name=name,
                location=entry["hub_id"],
                revision=revision,
                tokenizer=entry.get("tokenizer"),
                trust_remote_code=bool(entry.get("trust_remote_code", False)),
                allow_pickle=bool(entry.get("allow_pickle", False)),
            )
            tok_key = slug(entry["tokenizer"]) if entry.get("tokenizer") else slug(f"{entry['hub_id']}@{revision}")
        else:
            raise ConfigError(f"{where}: model {name!r} needs `hub_id` (with optional `revision`) or `path`")
        identity = _merged(defaults, entry, IDENTITY_KEYS)
        if identity["max_length"] is None or int(identity["max_length"]) < 2:
            raise ConfigError(f"{where}.max_length: window length must be >= 2, got {identity['max_length']!r}")
        plans[name] = ModelPlan(
            name=name,
            family=str(entry["family"]),
            source=source,
            ladder=bool(entry.get("ladder")),
            tokenizer_key=tok_key,
            identity=identity,
            runtime=_merged(defaults, entry, RUNTIME_KEYS),
            expected_size=entry.get("S"),
        )
    if not plans:
        raise ConfigError("models: the configuration lists no models (ladder.sizes and models are both empty)")
    families: dict[str, list[str]] = {}
    for plan in plans.values():
        families.setdefault(plan.family, []).append(plan.name)
    for family, members in families.items():
        if len(members) < 2:
            warnings.warn(f"family {family!r} has only {members}: no power-law fit is possible for it", stacklevel=2)
    return plans


def tokenizer_sources(plans: Mapping[str, ModelPlan]) -> dict[str, ModelSource]:
    """One source per tokenizer key; models sharing a key must agree on the tokenizer."""
    out: dict[str, ModelSource] = {}
    for plan in plans.values():
        known = out.get(plan.tokenizer_key)
        if known is None:
            out[plan.tokenizer_key] = plan.source
    return out
