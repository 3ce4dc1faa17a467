"""The configuration turned into concrete models, tokenizers and settings for the workflow.

`rankscale.config.validate` checks shapes and types against config/schema.yaml and fills in
defaults; `build_plan` checks what a schema cannot (duplicate names, missing paths and fields,
remote code, pickle checkpoints, families too small to fit) and resolves per-model settings
from `extraction:`, so every rule sees one consistent plan. Every error names the key and the
value, and all of it runs before any job starts.
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rankscale.config import ConfigError, validate
from rankscale.corpus import CorpusError
from rankscale.identity import SETTING_KEYS, RankIdentity
from rankscale.models import ModelSource
from rankscale.sources import check_dataset
from rankscale.windows import WINDOW_KEYS

LADDER_DIR = "resources/ladder"
__all__ = ["ConfigError", "ModelPlan", "Runtime", "build_plan"]


@dataclass(frozen=True)
class Runtime:
    """How fast and where a model's extraction runs: changing these never reruns anything."""

    device: str
    batch_size: int
    head_chunk: int | None
    device_map: str | None
    attn_implementation: str | None
    threads: int
    gpus: int
    mem_mb: int
    runtime: int


RUNTIME_KEYS = tuple(Runtime.__dataclass_fields__)


@dataclass(frozen=True)
class ModelPlan:
    name: str
    family: str
    source: ModelSource
    ladder: bool
    tokenizer_key: str
    settings: dict[str, Any]  # the identity settings (dtype, head dtype, windows, ties) before dataset overrides
    runtime: Runtime
    expected_size: int | None = None  # published S, checked against the loaded model
    expected_vocab: int | None = None  # published len(tokenizer), checked at extraction
    dataset_windows: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-dataset window overrides

    def identity(self, dataset: str) -> RankIdentity:
        """What this model's rank array on `dataset` depends on (the dataset's windows win)."""
        settings = {**self.settings, **self.dataset_windows.get(dataset, {})}
        return RankIdentity.from_settings(
            self.source.location, self.source.revision, self.source.tokenizer_location, settings
        )

    def windows_for(self, dataset: str) -> dict[str, Any]:
        identity = self.identity(dataset)
        return {k: getattr(identity, k) for k in WINDOW_KEYS}

    def job(self) -> dict[str, Any]:
        """What an extraction job needs besides its identity: where to load from, runtime, checks."""
        return {
            "name": self.name,
            "family": self.family,
            "source": asdict(self.source),
            "tokenizer_key": self.tokenizer_key,
            "runtime": asdict(self.runtime),
            "expected_size": self.expected_size,
            "expected_vocab": self.expected_vocab,
        }


def slug(text: str) -> str:
    """A file-name-safe key: 'EleutherAI/pythia-70m' -> 'EleutherAI--pythia-70m'."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "-", text.replace("/", "--")).strip("-")


def ladder_models(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ladder's sizes as model entries (their settings come from `extraction:`)."""
    ladder = config.get("ladder")
    if not ladder:
        return []
    return [{"name": s["name"], "family": ladder["family"], "ladder": True} for s in ladder["sizes"]]


def check_ladder(config: Mapping[str, Any]) -> None:
    for i, size in enumerate(config["ladder"]["sizes"] if config.get("ladder") else []):
        if size["d_model"] % size["heads"]:
            raise ConfigError(
                f"ladder.sizes[{i}].heads: {size['heads']} heads do not divide d_model = {size['d_model']} "
                f"(size {size['name']!r})"
            )


def dataset_sections(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Every dataset entry by its key path: evaluated datasets and the ladder's training corpus."""
    sections = {f"datasets.{k}": v for k, v in config["datasets"].items()}
    if config.get("ladder"):
        sections.update({f"ladder.corpus.{k}": v for k, v in config["ladder"]["corpus"].items()})
    return sections


def check_datasets(config: Mapping[str, Any], check_paths: bool = True) -> None:
    """Dataset entries that can be checked without loading them: each source's own checks."""
    for where, spec in dataset_sections(config).items():
        if spec["max_scored_tokens"] and (spec.get("windows") or {}).get("max_windows_per_doc"):
            warnings.warn(
                f"{where}: max_scored_tokens counts every token of each document, but windows.max_windows_per_doc "
                "scores only the first windows: fewer targets than max_scored_tokens will be scored",
                stacklevel=2,
            )
        try:
            check_dataset(spec, where, check_paths)
        except CorpusError as exc:
            raise ConfigError(str(exc)) from None


def check_local_model(path: Path, entry: Mapping[str, Any], where: str) -> None:
    """Refuse remote code and pickle checkpoints unless the entry opts in, before any job runs."""
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ConfigError(f"{where}.path: {str(path)!r} has no config.json (not a save_pretrained directory)")
    model_config = json.loads(config_file.read_text())
    if "auto_map" in model_config and not entry["trust_remote_code"]:
        raise ConfigError(
            f"{where}.trust_remote_code: model {entry['name']!r} at {str(path)!r} ships its own code "
            f"(auto_map: {sorted(model_config['auto_map'])}); set `trust_remote_code: true` only if you trust it"
        )
    has_safetensors = any(path.glob("*.safetensors")) or (path / "model.safetensors.index.json").exists()
    has_pickle = any(path.glob("*.bin")) or any(path.glob("*.pt"))
    if not has_safetensors and has_pickle and not entry["allow_pickle"]:
        raise ConfigError(
            f"{where}.allow_pickle: model {entry['name']!r} at {str(path)!r} has only pickle checkpoints (*.bin), "
            "which can run arbitrary code when loaded; convert it to safetensors or set `allow_pickle: true`"
        )


def _source(entry: Mapping[str, Any], where: str, check_paths: bool) -> tuple[ModelSource, str]:
    """Where a model comes from and the key of its tokenization jobs."""
    name = entry["name"]
    if entry.get("ladder"):
        location = f"{LADDER_DIR}/models/{name}"
        return ModelSource(name=name, location=location, local=True, tokenizer=f"{LADDER_DIR}/tokenizer"), "ladder"
    common = {
        "name": name,
        "tokenizer": entry["tokenizer"],
        "trust_remote_code": entry["trust_remote_code"],
        "allow_pickle": entry["allow_pickle"],
        "tokenizer_revision": entry["tokenizer_revision"],
    }
    if entry.get("path"):
        path = str(entry["path"])
        if check_paths:
            if not Path(path).exists():
                raise ConfigError(f"{where}.path: model {name!r} points at {path!r}, which does not exist")
            check_local_model(Path(path), entry, where)
            tokenizer = entry["tokenizer"]
            if tokenizer and tokenizer.startswith(("/", ".")) and not Path(tokenizer).exists():
                raise ConfigError(f"{where}.tokenizer: {tokenizer!r} does not exist")
        source = ModelSource(location=path, local=True, **common)
        return source, _tokenizer_key(source)
    if entry.get("hub_id"):
        source = ModelSource(location=entry["hub_id"], revision=entry["revision"], **common)
        return source, _tokenizer_key(source)
    raise ConfigError(f"{where}: model {name!r} needs `hub_id` (with optional `revision`) or `path`")


def _tokenizer_key(source: ModelSource) -> str:
    """Models whose tokenizers load from the same place at the same revision share one key."""
    if source.tokenizer is None:
        return slug(source.location) if source.local else slug(f"{source.location}@{source.revision}")
    ref = source.tokenizer_ref
    return slug(source.tokenizer if ref in (None, "main") else f"{source.tokenizer}@{ref}")


def check_analysis(config: Mapping[str, Any]) -> None:
    """Names the schema cannot know: fit forms come from a registry."""
    from rankscale.laws import FORMS

    for i, form in enumerate(config["analysis"]["forms"]):
        if form not in FORMS:
            raise ConfigError(f"analysis.forms[{i}]: unknown fit form {form!r}; known: {sorted(FORMS)}")


def build_plan(config: Mapping[str, Any], check_paths: bool = True) -> dict[str, ModelPlan]:
    """Resolve every model entry (ladder sizes first) into a ModelPlan, in config order.

    The configuration is validated (defaults filled in, on a copy) first, so a raw YAML
    configuration works as well as the one the workflow validated.
    """
    config = validate(copy.deepcopy(dict(config)))
    check_ladder(config)
    check_datasets(config, check_paths)
    check_analysis(config)
    defaults = config["extraction"]
    windows = dataset_windows(config)
    plans: dict[str, ModelPlan] = {}
    n_ladder = len(ladder_models(config))
    for i, entry in enumerate(ladder_models(config) + config["models"]):
        where = f"ladder.sizes[{i}]" if entry.get("ladder") else f"models[{i - n_ladder}]"
        name = entry["name"]
        if name in plans:
            raise ConfigError(f"{where}.name: duplicate model name {name!r}")
        source, tok_key = _source(entry, where, check_paths)
        settings = _merged(defaults, entry, SETTING_KEYS)
        _check_windows(settings, where)
        for dataset, override in windows.items():
            _check_windows({**settings, **override}, f"datasets.{dataset}.windows (model {name!r})")
        plans[name] = ModelPlan(
            name=name,
            family=entry["family"],
            source=source,
            ladder=bool(entry.get("ladder")),
            tokenizer_key=tok_key,
            settings=settings,
            runtime=Runtime(**_merged(defaults, entry, RUNTIME_KEYS)),
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
    return {name: dict(spec["windows"]) for name, spec in config["datasets"].items() if spec.get("windows")}


def _check_windows(settings: Mapping[str, Any], where: str) -> None:
    length, stride = settings["max_length"], settings["stride"]
    if stride is not None and not 1 <= int(stride) < int(length):
        raise ConfigError(f"{where}.stride: {stride!r} must be in 1..max_length-1 = {int(length) - 1}")


def _merged(defaults: Mapping[str, Any], entry: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """A model entry's settings: its own where it sets them, else `extraction:`'s."""
    return {k: entry[k] if k in entry else defaults[k] for k in keys}


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
