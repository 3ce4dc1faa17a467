"""The configuration resolved into one plan per model: where it loads from, its identity, its runtime.

`rankscale.config.validate` checks shapes and types against workflow/schemas/config.schema.yaml and fills in
defaults; `build_plan` checks what a schema cannot (`rankscale.plan.checks`) and resolves
per-model settings from `extraction:`, so every rule sees one consistent plan. Every error
names the key and the value, and all of it runs before any job starts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rankscale.config import ConfigError, validate
from rankscale.content_digest import weights_digest
from rankscale.gguf import GgufError, GgufSource
from rankscale.gguf import resolve as resolve_gguf
from rankscale.identity import SETTING_KEYS
from rankscale.layout import Ladder
from rankscale.models import ModelSource
from rankscale.plan.checks import check_config, check_local_model, check_plans, check_windows, mark_checkpoints
from rankscale.plan.keys import (
    distinct_tokenizer_keys,
    ladder_dir,
    ladder_tokenizer_key,
    local_tokenizer_digest,
    tokenizer_key,
)
from rankscale.plan.types import RUNTIME_KEYS, ModelPlan, Runtime
from rankscale.schedule import tokens_seen


def checkpoint_name(size: str, tokens: int) -> str:
    return f"{size}-t{tokens}"


def run_name(size: str, seed_index: int, seed: int) -> str:
    """The first seed's run keeps the size's name (so a ladder of one seed is named as before); others `-s<seed>`."""
    return size if seed_index == 0 else f"{size}-s{seed}"


def ladder_models(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ladder's runs (each size once per seed of `ladder.train.seeds`) and their checkpoints, as model
    entries (settings come from `extraction:`).

    A checkpoint is its run (same schedule, seed and data order) stopped after the step that reaches
    t tokens, so it has seen the first multiple of batch_size x seq_len at or above t: its D. Each is
    its own training job, resumed from its run's saved states (rankscale.training), so adding a
    checkpoint or a seed trains and scores that one alone.
    """
    ladder = config.get("ladder")
    if not ladder:
        return []
    train = ladder["train"]
    seq_len = train["seq_len"]  # the models are built with this many positions
    out = []
    for s in ladder["sizes"]:
        for i, seed in enumerate(train["seeds"]):
            run = run_name(s["name"], i, seed)
            base = {"family": ladder["family"], "ladder": True, "seq_len": seq_len, "size": run, "seed": seed,
                    "replica_of": s["name"]}  # fmt: skip
            for tokens in train["checkpoints"]:
                name = checkpoint_name(run, tokens)
                out.append({**base, "name": name, "checkpoint": tokens, "D": tokens_seen(tokens, train)})
            out.append({**base, "name": run, "D": tokens_seen(train["tokens"], train)})
    return out


def _source(
    entry: Mapping[str, Any], where: str, check_paths: bool, ladder: Ladder
) -> tuple[ModelSource, str, tuple[int, str] | None, GgufSource | None]:
    """Where a model comes from, the key of its tokenization jobs, its positions if known now, and the GGUF
    file it is converted from (if any)."""
    name = entry["name"]
    if entry.get("ladder"):
        source = ModelSource(
            name=name,
            location=ladder.model(name),
            revision=None,
            tokenizer=ladder.tokenizer,
            trust_remote_code=False,
            allow_pickle=False,
            tokenizer_revision=None,
            local=True,
            tokenizer_local=True,
        )  # the tokenizer is the workflow's own output: local before it exists, so params never flip
        return source, ladder_tokenizer_key(ladder.dir), (entry["seq_len"], f"ladder model {name!r} (ladder.train.seq_len)"), None
    common = {
        "name": name,
        "tokenizer": entry["tokenizer"],
        "trust_remote_code": entry["trust_remote_code"],
        "allow_pickle": entry["allow_pickle"],
        "tokenizer_revision": entry["tokenizer_revision"],
    }
    given = [key for key in ("hub_id", "path", "gguf") if entry.get(key)]
    if len(given) > 1:
        raise ConfigError(f"{where}: model {name!r} sets {' and '.join(f'`{k}`' for k in given)}; give exactly one")
    if entry.get("gguf"):
        try:
            gguf = resolve_gguf(entry["gguf"], f"{where}.gguf")
        except GgufError as exc:
            raise ConfigError(str(exc)) from None
        # the converted directory is the workflow's own output, keyed by the file's digest (its identity)
        source = ModelSource(location=gguf.directory, revision=None, local=True, **common)
        return source, tokenizer_key(source), None, gguf  # positions: checked in the job, from the converted config
    if entry.get("path"):
        path = str(entry["path"])
        positions = None
        if check_paths:
            if not Path(path).exists():
                raise ConfigError(
                    f"{where}.path: model {name!r} points at {path!r}, which does not exist; "
                    "give the directory save_pretrained wrote (a relative path is read from where snakemake runs)"
                )
            positions = check_local_model(Path(path), entry, where)
            tokenizer = entry["tokenizer"]
            if tokenizer and tokenizer.startswith(("/", ".")) and not Path(tokenizer).exists():
                raise ConfigError(f"{where}.tokenizer: {tokenizer!r} does not exist; give a tokenizer directory or hub id")
        source = ModelSource(location=path, revision=None, local=True, **common)
        return source, tokenizer_key(source), positions, None
    if entry.get("hub_id"):
        source = ModelSource(location=entry["hub_id"], revision=entry["revision"], **common)
        return source, tokenizer_key(source), None, None  # known only once downloaded: checked in the job
    raise ConfigError(f"{where}: model {name!r} needs `hub_id` (with optional `revision`), `path` or `gguf`; add one")


class Plans(dict[str, ModelPlan]):
    """Every model's plan by name, in config order, and the ladder's files they were planned with
    (`Ladder(NO_LADDER)` without a ladder): the ladder's directory is computed once, by `build_plan`, and the
    file layout (`rankscale.plan.files.layout`) reads it here."""

    def __init__(self, plans: Mapping[str, ModelPlan], ladder: Ladder) -> None:
        super().__init__(plans)
        self.ladder = ladder


def build_plan(config: Mapping[str, Any], check_paths: bool = True, validated: bool = False) -> Plans:
    """Resolve every model entry (ladder sizes first) into a ModelPlan, in config order, reading top to bottom:
    validate, check the configuration, build each model (its source, tokenizer key, settings), then derive
    what needs all of them (checkpoint groups, distinct tokenizer keys) and check those.

    A raw configuration is validated (defaults filled in, on a copy) first; the workflow passes the one it has
    validated (`validated=True`), so validation runs once.
    """
    if not validated:
        config = validate(copy.deepcopy(dict(config)))
    ladder = Ladder(ladder_dir(config, validated=True))  # the one place a plan computes it
    check_config(config, ladder, check_paths)
    defaults = config["extraction"]
    windows = dataset_windows(config)
    plans: dict[str, ModelPlan] = {}
    n_ladder = len(ladder_models(config))
    for i, entry in enumerate(ladder_models(config) + config["models"]):
        where = f"ladder.sizes[{i}]" if entry.get("ladder") else f"models[{i - n_ladder}]"
        name = entry["name"]
        if name in plans:
            raise ConfigError(f"{where}.name: duplicate model name {name!r}; give each model its own name")
        source, tok_key, positions, gguf = _source(entry, where, check_paths, ladder)
        # a `path:` model and its local tokenizer are known by content: a study moved elsewhere keeps its keys
        by_content = bool(entry.get("path"))
        tok_digest = local_tokenizer_digest(source) if by_content else None
        tok_key = f"local-{tok_digest}" if tok_digest else tok_key
        settings = _merged(defaults, entry, SETTING_KEYS)
        keys = {k: f"{where}.{k}" if k in entry else f"extraction.{k}" for k in (*SETTING_KEYS, *RUNTIME_KEYS)}
        check_windows(settings, keys, positions, name)
        for dataset, override in windows.items():
            where_set = {k: f"datasets.{dataset}.windows.{k}" for k in override}
            check_windows({**settings, **override}, {**keys, **where_set}, positions, name)
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
            where=where,
            keys=keys,
            allow_vocab_gap=bool(entry.get("allow_vocab_gap")),
            D=entry.get("D"),
            size=entry.get("size") or entry.get("checkpoint_of") or name,
            checkpoint=entry.get("checkpoint"),
            weights=_weights(entry, source),
            seed=entry.get("seed"),
            replica_of=entry.get("replica_of") or "",
            gguf=gguf,
            tokenizer_digest=tok_digest,
            by_content=by_content,
            refresh_calibration=_merged(defaults, entry, ("refresh_calibration",))["refresh_calibration"],
        )
    if not plans:
        raise ConfigError("models: the configuration lists no models (ladder.sizes and models are both empty); add one")
    mark_checkpoints(plans)
    distinct_tokenizer_keys(plans)
    check_plans(plans)
    return Plans(plans, ladder)


def _weights(entry: Mapping[str, Any], source: ModelSource) -> str | None:
    """What a local model's identity follows: a GGUF entry its file's digest (its converted directory is the
    workflow's own output, as the ladder's models are, which Snakemake follows), a `path:` model its weights
    (it can be retrained in place); hub models are pinned by revision."""
    if entry.get("gguf"):
        return f"gguf:{source.location.rsplit('/', 1)[-1]}"
    return weights_digest(source.location) if source.local and not entry.get("ladder") else None


def dataset_windows(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Window settings fixed by dataset entries (e.g. the authors' one 512-token window per document)."""
    return {name: dict(spec["windows"]) for name, spec in config["datasets"].items() if spec.get("windows")}


def _merged(defaults: Mapping[str, Any], entry: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """A model entry's settings: its own where it sets them, else `extraction:`'s."""
    return {k: entry[k] if k in entry else defaults[k] for k in keys}
