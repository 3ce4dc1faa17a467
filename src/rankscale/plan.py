"""The configuration turned into concrete models, tokenizers and settings for the workflow.

`rankscale.config.validate` checks shapes and types against config/schema.yaml and fills in
defaults; `build_plan` checks what a schema cannot (duplicate names, missing paths and fields,
remote code, pickle checkpoints, families too small to fit) and resolves per-model settings
from `extraction:`, so every rule sees one consistent plan. Every error names the key and the
value, and all of it runs before any job starts.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rankscale.canon import canonical
from rankscale.config import ConfigError, validate
from rankscale.corpus import CorpusError
from rankscale.identity import SETTING_KEYS, RankIdentity
from rankscale.models import ModelSource
from rankscale.sources import check_dataset
from rankscale.windows import WINDOW_KEYS

LADDER_ROOT = "resources/ladder"
__all__ = ["ConfigError", "ModelPlan", "Runtime", "build_plan", "ladder_dir"]
# dataset keys added after results existed: left out of params at their defaults, so corpora
# (and everything downstream) made before them stay up to date
LATER_DATASET_KEYS = {"format": None, "skip_invalid_records": False}


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
    where: str = "models[?]"  # the entry's key path, for messages
    keys: dict[str, str] = field(default_factory=lambda: {"device": "extraction.device"})  # setting -> its key path
    allow_vocab_gap: bool = False  # an output layer wider than the tokenizer beyond padding is accepted
    D: int | None = None  # training tokens seen, where known
    size: str = ""  # the size this model is a checkpoint of (its own name for a final model)
    final: bool = True  # the last checkpoint of its size: size laws use these only
    checkpoint: int | None = None  # a ladder checkpoint: the training tokens it was asked at

    def info(self) -> dict[str, Any]:
        """What the summaries record about the model besides what it scored."""
        return {"family": self.family, "D": self.D, "size": self.size or self.name, "final": self.final}

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
            "where": self.where,
            "device_key": self.keys["device"],
            "allow_vocab_gap": self.allow_vocab_gap,
        }


def slug(text: str) -> str:
    """A file-name-safe key: 'EleutherAI/pythia-70m' -> 'EleutherAI--pythia-70m'."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "-", text.replace("/", "--")).strip("-")


def short_hash(value: Any, n: int = 8) -> str:
    return hashlib.sha256(repr(canonical(value)).encode()).hexdigest()[:n]


def text_key(text: str) -> str:
    """`slug(text)`, plus a hash of `text` where the slug loses information.

    'ckpt v1' and 'ckpt-v1' would both slug to 'ckpt-v1' (and 'a/b', 'a--b' to 'a--b'). Hub
    ids never hold such characters, so their keys stay plain slugs.
    """
    key = slug(text)
    if not re.fullmatch(r"[A-Za-z0-9._@/-]+", text) or "--" in text:
        key += "-" + short_hash(text)
    return key


def corpus_params(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What a corpus's text depends on: its entry less the settings later steps apply, canonical."""
    dropped = ("windows", "max_scored_tokens")
    return canonical(
        {
            k: v
            for k, v in spec.items()
            if k not in dropped and not (k in LATER_DATASET_KEYS and v == LATER_DATASET_KEYS[k])
        }
    )


def ladder_dir(config: Mapping[str, Any]) -> str:
    """`resources/ladder/<key>`: one directory per ladder training text and tokenizer settings.

    Two configurations (the default and config/smoke.yaml) in one clone each keep their own
    tokenizer and checkpoints instead of retraining each other's. The training text is cut
    free of every evaluated dataset's text, so those datasets are part of the key. Model
    settings (size, training) are the ladder_train rule's params, not part of the key.
    """
    validated = validate(copy.deepcopy(dict(config))) if config.get("ladder") else None
    if not validated:
        return f"{LADDER_ROOT}/none"
    ladder = validated["ladder"]
    key = {
        "corpus": [corpus_params(spec) for spec in ladder["corpus"].values()],
        "tokenizer": ladder["tokenizer"],
        "disjoint_from": {name: corpus_params(spec) for name, spec in validated["datasets"].items()},
    }
    return f"{LADDER_ROOT}/{short_hash(key, 12)}"


def training_steps(tokens: int, train: Mapping[str, Any]) -> int:
    """Optimizer steps until at least `tokens` training tokens have been seen."""
    return max(1, math.ceil(tokens / (train["batch_size"] * train["seq_len"])))


def checkpoint_name(size: str, tokens: int) -> str:
    return f"{size}-t{tokens}"


def ladder_models(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ladder's sizes, and their checkpoints, as model entries (settings come from `extraction:`).

    A checkpoint is its size's training run (same schedule, seed and data order) stopped after
    the step that reaches t tokens, so it has seen the first multiple of batch_size x seq_len at
    or above t: its D. Each is trained by its own job, so adding one trains and scores it alone.
    """
    ladder = config.get("ladder")
    if not ladder:
        return []
    train = ladder["train"]
    seq_len = train["seq_len"]  # the models are built with this many positions
    per_step = train["batch_size"] * seq_len
    out = []
    for s in ladder["sizes"]:
        base = {"family": ladder["family"], "ladder": True, "seq_len": seq_len, "size": s["name"]}
        for tokens in train["checkpoints"]:
            name = checkpoint_name(s["name"], tokens)
            out.append({**base, "name": name, "checkpoint": tokens, "D": training_steps(tokens, train) * per_step})
        out.append({**base, "name": s["name"], "D": training_steps(train["tokens"], train) * per_step})
    return out


def check_checkpoints(config: Mapping[str, Any]) -> None:
    """Checkpoints a ladder can save: ascending, distinct, before the end of training."""
    ladder = config.get("ladder")
    if not ladder:
        return
    asked, total = ladder["train"]["checkpoints"], ladder["train"]["tokens"]
    for i, tokens in enumerate(asked):
        if tokens >= total:
            raise ConfigError(
                f"ladder.train.checkpoints[{i}]: {tokens} is not below ladder.train.tokens = {total} "
                "(the final model is the last checkpoint)"
            )
        if i and tokens <= asked[i - 1]:
            raise ConfigError(
                f"ladder.train.checkpoints[{i}]: {tokens} does not follow {asked[i - 1]}: list them ascending, each once"
            )
    steps = [training_steps(t, ladder["train"]) for t in asked]
    if len(set(steps)) < len(steps):
        raise ConfigError(
            f"ladder.train.checkpoints: {asked} fall in the same training step (steps {steps}, "
            f"{ladder['train']['batch_size'] * ladder['train']['seq_len']} tokens each): space them further apart"
        )


TRAIN_TOKENS = "train_tokens.json"  # in the ladder directory: the training text's length in tokens


def check_ladder(config: Mapping[str, Any], check_paths: bool = True) -> None:
    """Sizes that cannot be built, and a seq_len the training text cannot fill once.

    The text's length in tokens is known once the ladder tokenizer exists (the ladder_tokenizer
    rule writes it); before that no checkpoint exists either, so the training job's own check
    cannot cost a finished one.
    """
    ladder = config.get("ladder")
    for i, size in enumerate(ladder["sizes"] if ladder else []):
        if size["d_model"] % size["heads"]:
            raise ConfigError(
                f"ladder.sizes[{i}].heads: {size['heads']} heads do not divide d_model = {size['d_model']} "
                f"(size {size['name']!r})"
            )
    counts = Path(ladder_dir(config)) / TRAIN_TOKENS
    if ladder and check_paths and counts.is_file():
        tokens = int(json.loads(counts.read_text())["tokens"])
        if ladder["train"]["seq_len"] > tokens:
            raise ConfigError(
                f"ladder.train.seq_len: {ladder['train']['seq_len']} exceeds the {tokens} tokens of the ladder's "
                f"training text ({counts}): not one training sequence fits; lower it or add text under ladder.corpus"
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


POSITION_KEYS = ("max_position_embeddings", "n_positions")  # what transformers' configs call it


def read_model_config(config_file: Path, where: str) -> dict[str, Any]:
    """A local model's config.json; a file that is not a JSON object is refused with file, line and column."""
    try:
        model_config = json.loads(config_file.read_bytes())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}.path: {config_file}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}.path: {config_file}: not UTF-8 at byte offset {exc.start}") from None
    if not isinstance(model_config, dict):
        raise ConfigError(f"{where}.path: {config_file}: holds a JSON {type(model_config).__name__}, not an object")
    return model_config


def check_local_model(path: Path, entry: Mapping[str, Any], where: str) -> tuple[int, str] | None:
    """Refuse remote code and pickle checkpoints unless the entry opts in, before any job runs.

    Returns the model's number of positions and where it was read, if its config.json says.
    """
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ConfigError(f"{where}.path: {str(path)!r} has no config.json (not a save_pretrained directory)")
    model_config = read_model_config(config_file, where)
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
    for key in POSITION_KEYS:
        if isinstance(model_config.get(key), int):
            return model_config[key], f"local model {entry['name']!r} ({config_file}: {key})"
    return None


def _source(
    entry: Mapping[str, Any], where: str, check_paths: bool, ladder: str
) -> tuple[ModelSource, str, tuple[int, str] | None]:
    """Where a model comes from, the key of its tokenization jobs, and its positions if known now."""
    name = entry["name"]
    if entry.get("ladder"):
        source = ModelSource(
            name=name,
            location=f"{ladder}/models/{name}",
            local=True,
            tokenizer=f"{ladder}/tokenizer",
            tokenizer_local=True,
        )  # the tokenizer is the workflow's own output: local before it exists, so params never flip
        return source, "ladder", (entry["seq_len"], f"ladder model {name!r} (ladder.train.seq_len)")
    common = {
        "name": name,
        "tokenizer": entry["tokenizer"],
        "trust_remote_code": entry["trust_remote_code"],
        "allow_pickle": entry["allow_pickle"],
        "tokenizer_revision": entry["tokenizer_revision"],
    }
    if entry.get("path"):
        path = str(entry["path"])
        positions = None
        if check_paths:
            if not Path(path).exists():
                raise ConfigError(f"{where}.path: model {name!r} points at {path!r}, which does not exist")
            positions = check_local_model(Path(path), entry, where)
            tokenizer = entry["tokenizer"]
            if tokenizer and tokenizer.startswith(("/", ".")) and not Path(tokenizer).exists():
                raise ConfigError(f"{where}.tokenizer: {tokenizer!r} does not exist")
        source = ModelSource(location=path, local=True, **common)
        return source, _tokenizer_key(source), positions
    if entry.get("hub_id"):
        source = ModelSource(location=entry["hub_id"], revision=entry["revision"], **common)
        return source, _tokenizer_key(source), None  # known only once downloaded: checked in the job
    raise ConfigError(f"{where}: model {name!r} needs `hub_id` (with optional `revision`) or `path`")


def _tokenizer_key(source: ModelSource) -> str:
    """Models whose tokenizers load from the same place at the same revision share one key."""
    if source.tokenizer is None:
        return text_key(source.location) if source.local else text_key(f"{source.location}@{source.revision}")
    ref = source.tokenizer_ref
    return text_key(source.tokenizer if ref in (None, "main") else f"{source.tokenizer}@{ref}")


def _distinct_tokenizer_keys(plans: dict[str, ModelPlan]) -> None:
    """Different tokenizers whose keys still coincide (e.g. '/a/b' and 'a/b') get a hash each, in place."""
    sources: dict[str, set[tuple[str, str | None]]] = {}
    for plan in plans.values():
        sources.setdefault(plan.tokenizer_key, set()).add(_tokenizer_id(plan.source))
    for name, plan in plans.items():
        if len(sources[plan.tokenizer_key]) > 1:
            key = f"{plan.tokenizer_key}-{short_hash(_tokenizer_id(plan.source))}"
            plans[name] = replace(plan, tokenizer_key=key)


def _tokenizer_id(source: ModelSource) -> tuple[str, str | None]:
    return source.tokenizer_location, source.tokenizer_ref


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
    check_ladder(config, check_paths)
    check_checkpoints(config)
    check_datasets(config, check_paths)
    check_analysis(config)
    defaults = config["extraction"]
    windows = dataset_windows(config)
    ladder = ladder_dir(config)
    plans: dict[str, ModelPlan] = {}
    n_ladder = len(ladder_models(config))
    for i, entry in enumerate(ladder_models(config) + config["models"]):
        where = f"ladder.sizes[{i}]" if entry.get("ladder") else f"models[{i - n_ladder}]"
        name = entry["name"]
        if name in plans:
            raise ConfigError(f"{where}.name: duplicate model name {name!r}")
        source, tok_key, positions = _source(entry, where, check_paths, ladder)
        settings = _merged(defaults, entry, SETTING_KEYS)
        keys = {k: f"{where}.{k}" if k in entry else f"extraction.{k}" for k in (*SETTING_KEYS, *RUNTIME_KEYS)}
        _check_windows(settings, keys, positions, name)
        for dataset, override in windows.items():
            where_set = {k: f"datasets.{dataset}.windows.{k}" for k in override}
            _check_windows({**settings, **override}, {**keys, **where_set}, positions, name)
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
        )
    if not plans:
        raise ConfigError("models: the configuration lists no models (ladder.sizes and models are both empty)")
    _mark_checkpoints(plans)
    _distinct_tokenizer_keys(plans)
    _warn_small_families(plans)
    return plans


def _mark_checkpoints(plans: dict[str, ModelPlan]) -> None:
    """Group models by the size they are checkpoints of; the one with most training tokens is final.

    Checkpoints of one size must share its family and each say how many tokens they have seen.
    """
    groups: dict[str, list[ModelPlan]] = {}
    for plan in plans.values():
        groups.setdefault(plan.size, []).append(plan)
    for size, members in groups.items():
        if len(members) == 1:
            continue
        for plan in members:
            if plan.D is None:
                raise ConfigError(
                    f"{plan.where}.D: model {plan.name!r} is one of the checkpoints of {size!r} "
                    f"({[m.name for m in members]}) but says no D (training tokens seen)"
                )
            if plan.family != members[0].family:
                raise ConfigError(
                    f"{plan.where}.family: checkpoints of {size!r} must share one family; {plan.name!r} has "
                    f"{plan.family!r}, {members[0].name!r} has {members[0].family!r}"
                )
        Ds = [m.D for m in members]
        if len(set(Ds)) < len(Ds):
            raise ConfigError(f"{members[-1].where}.D: checkpoints of {size!r} repeat a D: {Ds}")
        last = max(members, key=lambda m: m.D or 0)
        for plan in members:
            plans[plan.name] = replace(plan, final=plan is last)


def dataset_windows(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Window settings fixed by dataset entries (e.g. the authors' one 512-token window per document)."""
    return {name: dict(spec["windows"]) for name, spec in config["datasets"].items() if spec.get("windows")}


def _check_windows(
    settings: Mapping[str, Any], keys: Mapping[str, str], positions: tuple[int, str] | None, model: str
) -> None:
    """Windows a model can score; errors name the key each value was written at.

    Checked here, not in the job: Snakemake deletes a job's old outputs before it runs.
    """
    length, stride = int(settings["max_length"]), settings["stride"]
    if positions is not None and length > positions[0]:
        raise ConfigError(f"{keys['max_length']}: {length} exceeds the {positions[0]} positions of {positions[1]}")
    if stride is not None and not 1 <= int(stride) < length:
        raise ConfigError(
            f"{keys['stride']}: {stride!r} must be in 1..max_length-1 = {length - 1} "
            f"(max_length {length} from {keys['max_length']}, model {model!r})"
        )


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
