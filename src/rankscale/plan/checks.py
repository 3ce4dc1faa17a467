"""Checks of what a schema cannot say, before any job starts: each error names the key and the value.

Ladder sizes and checkpoints, dataset entries, local models (remote code, pickle checkpoints,
positions), window settings against the model's positions, fit forms by name, checkpoint groups.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankscale.config import ConfigError, load_schema
from rankscale.corpus import CorpusError
from rankscale.documents import check_dataset
from rankscale.layout import Ladder
from rankscale.schedule import tokens_per_step, training_steps

if TYPE_CHECKING:
    from rankscale.plan.types import ModelPlan


def check_config(config: Mapping[str, Any], ladder: Ladder, check_paths: bool = True) -> None:
    """Everything about a validated configuration that its schema cannot check, before any model is planned
    (`ladder`: its ladder's files, `rankscale.plan.keys.ladder_dir`)."""
    check_ladder(config, ladder, check_paths)
    check_checkpoints(config)
    check_datasets(config, check_paths)
    check_analysis(config)


def check_plans(plans: Mapping[str, ModelPlan]) -> None:
    """What only the planned models together show: training runs that do not fit, families too small to fit."""
    check_replicas(plans)
    warn_small_families(plans)


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
            f"{tokens_per_step(ladder['train'])} tokens each): space them further apart"
        )


def check_ladder(config: Mapping[str, Any], files: Ladder, check_paths: bool = True) -> None:
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
    counts = Path(files.counts)
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
        sections.update({f"ladder.corpus[{i}]": v for i, v in enumerate(config["ladder"]["corpus"])})
    return sections


def check_datasets(config: Mapping[str, Any], check_paths: bool = True) -> None:
    """Dataset entries that can be checked without loading them: each source's own checks."""
    for where, spec in dataset_sections(config).items():
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


def check_analysis(config: Mapping[str, Any]) -> None:
    """Names the schema cannot know: fit forms (rankscale.laws.FORMS; laws in S only) and stratum kinds
    (rankscale.strata.STRATA) come from registries; strata's bin edges must increase."""
    from rankscale.laws import size_forms

    known = size_forms()
    named = [(f"analysis.forms[{i}]", form) for i, form in enumerate(config["analysis"]["forms"])]
    for where, form in [*named, ("analysis.law_form", config["analysis"]["law_form"])]:
        if form not in known:
            raise ConfigError(f"{where}: unknown fit form {form!r} (a law in S); known: {known}")
    from rankscale.strata import STRATA

    for i, name in enumerate(config["analysis"]["strata"]):
        if name not in STRATA:
            raise ConfigError(f"analysis.strata[{i}]: unknown stratum kind {name!r}; known: {sorted(STRATA)}")
    for name, edges in config["analysis"]["strata_bins"].items():
        if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
            raise ConfigError(f"analysis.strata_bins.{name}: bin edges must increase, got {edges}")


def _schema_default(section: str, key: str) -> Any:
    """A key's default, from the schema (the one place defaults live)."""
    return load_schema()["properties"][section]["default"][key]


def check_windows(
    settings: Mapping[str, Any], keys: Mapping[str, str], positions: tuple[int, str] | None, model: str
) -> None:
    """Windows a model can score; errors name the key each value was written at.

    Checked here, not in the job: Snakemake deletes a job's old outputs before it runs.
    """
    length, stride = int(settings["max_length"]), settings["stride"]
    if positions is not None and length > positions[0]:
        default = _schema_default("extraction", "max_length")
        unset = keys["max_length"] == "extraction.max_length" and length == default
        origin = " (the default, where a configuration does not set it)" if unset else ""
        raise ConfigError(
            f"{keys['max_length']}: {length}{origin} exceeds the {positions[0]} positions of {positions[1]}; "
            f"write `max_length: {positions[0]}` (or less) at {keys['max_length']}"
        )
    if stride is not None and not 1 <= int(stride) < length:
        raise ConfigError(
            f"{keys['stride']}: {stride!r} must be in 1..max_length-1 = {length - 1} "
            f"(max_length {length} from {keys['max_length']}, model {model!r})"
        )


def warn_small_families(plans: Mapping[str, ModelPlan]) -> None:
    families: dict[str, list[str]] = {}
    for plan in plans.values():
        families.setdefault(plan.family, []).append(plan.name)
    for family, members in families.items():
        if len(members) < 2:
            warnings.warn(
                f"family {family!r} has only {members}: no power-law fit is possible for it "
                "(its metrics, with intervals, still appear in tables and figures, and cross_family.csv places it "
                "against the other families' laws)",
                stacklevel=2,
            )


def check_group(members: list[ModelPlan], size: str, what: str, key: str, meaning: str) -> None:
    """Models grouped under one size (its checkpoints, or its training runs): one family, each with its own
    `key` (D or seed), none repeated. Errors name the model's entry and the key."""
    for plan in members:
        if getattr(plan, key) is None:
            raise ConfigError(
                f"{plan.where}.{key}: model {plan.name!r} is one of the {what} of {size!r} "
                f"({[m.name for m in members]}) but says no {key} ({meaning})"
            )
        if plan.family != members[0].family:
            raise ConfigError(
                f"{plan.where}.family: {what} of {size!r} must share one family; {plan.name!r} has "
                f"{plan.family!r}, {members[0].name!r} has {members[0].family!r}"
            )
    values = [getattr(m, key) for m in members]
    if len(set(values)) < len(values):
        raise ConfigError(f"{members[-1].where}.{key}: {what} of {size!r} repeat a {key}: {values}")


def mark_checkpoints(plans: dict[str, ModelPlan]) -> None:
    """Group models by the size they are checkpoints of; the one with most training tokens is final.

    Checkpoints of one size must share its family and each say how many tokens they have seen.
    """
    groups: dict[str, list[ModelPlan]] = {}
    for plan in plans.values():
        groups.setdefault(plan.size, []).append(plan)
    for size, members in groups.items():
        if len(members) == 1:
            continue
        check_group(members, size, "checkpoints", "D", "training tokens seen")
        last = max(members, key=lambda m: m.D or 0)
        for plan in members:
            plans[plan.name] = replace(plan, final=plan is last)


def check_replicas(plans: Mapping[str, ModelPlan]) -> None:
    """Training runs of one size with different seeds (`replica_of`, `seed`): checked like checkpoints.

    The size a model replicates must be a final model's size; replicas share its family and each name a
    distinct seed, so the hierarchical bootstrap can resample seeds within each size.
    """
    finals = {p.size or p.name: p for p in plans.values() if p.final}
    groups: dict[str, list[ModelPlan]] = {}
    for plan in plans.values():
        if plan.replica_of and plan.replica_of not in finals:
            raise ConfigError(
                f"{plan.where}.replica_of: {plan.replica_of!r} is no model's size (known: {sorted(finals)})"
            )
        if plan.final:
            groups.setdefault(plan.replica_of or plan.size or plan.name, []).append(plan)
    for size, members in groups.items():
        if len(members) > 1:
            check_group(members, size, "training runs", "seed", "its training seed")


def unpinned(config: Mapping[str, Any], plans: Mapping[str, ModelPlan]) -> list[str]:
    """Hub models and datasets read at a branch (or tag) rather than a commit: their results depend on when
    the run happens. One `name: id@revision` per input; local directories and ladder models are pinned by content."""
    from rankscale.sources.hub import is_commit

    out = [
        f"{plan.name}: {plan.source.location}@{plan.source.revision}"
        for plan in plans.values()
        if not plan.source.local and not is_commit(plan.source.revision)
    ]
    for name, spec in config["datasets"].items():
        if spec["source"] == "hub" and not Path(str(spec["path"])).exists() and not is_commit(spec.get("revision")):
            out.append(f"datasets.{name}: {spec['path']}@{spec.get('revision')}")
    return out


def unpinned_note(config: Mapping[str, Any], plans: Mapping[str, ModelPlan]) -> str | None:
    """One line naming the inputs read at a branch (`unpinned`), said once before a run; None where all are pinned."""
    found = unpinned(config, plans)
    if not found:
        return None
    return (
        f"{len(found)} input(s) read at a branch, not a commit, so results depend on when they run: "
        f"{', '.join(found)}. Pin a commit in `revision:` (each sidecar records the commit a run resolved)."
    )


# k settings a user writes: a k above a model's vocabulary cannot be scored (RBP_k = 1 there), and is refused.
# `figures.large_k` is not among them: Fig. 5 shows the k under each model's |V| by design (its caption says so)
WRITTEN_K = (("analysis", "law_k"), ("analysis", "k_include"), ("analysis", "emergence_k"), ("figures", "rbp_k"))


def check_written(config: Mapping[str, Any], plans: Mapping[str, ModelPlan], written: Sequence[Any]) -> None:
    """What the user's own files say that the plan can check before any job: k values within every model's
    vocabulary, a `path:` model's published size `S:` (`written`: the files as loaded, in order)."""
    check_written_k(config, plans, written)
    for plan in plans.values():
        check_local_size(plan)


def vocab_sizes(config: Mapping[str, Any], plans: Mapping[str, ModelPlan]) -> dict[str, tuple[int, str]]:
    """|V| of each model whose vocabulary is known before any job, and where it was read."""
    out: dict[str, tuple[int, str]] = {}
    for name, plan in plans.items():
        if plan.expected_vocab:
            out[name] = (plan.expected_vocab, f"{plan.where}.vocab_size")
        elif plan.ladder:
            out[name] = (config["ladder"]["tokenizer"]["vocab_size"], "ladder.tokenizer.vocab_size")
        elif plan.source.local and plan.gguf is None and (Path(plan.source.location) / "config.json").is_file():
            config_file = Path(plan.source.location) / "config.json"
            size = read_model_config(config_file, plan.where).get("vocab_size")
            if isinstance(size, int) and size > 0:
                out[name] = (size, f"{config_file}: vocab_size")
    return out


def check_written_k(config: Mapping[str, Any], plans: Mapping[str, ModelPlan], written: Sequence[Any]) -> None:
    """A k the user wrote (not a default) above a model's |V| is refused: it would be left out of that model's
    tables and figures without a word."""
    keys = [
        (section, key)
        for section, key in WRITTEN_K
        if any(isinstance(data, Mapping) and isinstance(data.get(section), Mapping) and key in data[section]
               for data in written)
    ]  # fmt: skip
    if not keys:
        return
    sizes = vocab_sizes(config, plans)
    if not sizes:
        return
    smallest = min(sizes, key=lambda name: sizes[name][0])
    vocab, where = sizes[smallest]
    for section, key in keys:
        above = [k for k in config[section][key] if k > vocab]
        if above:
            raise ConfigError(
                f"{section}.{key}: k = {above} exceeds |V| = {vocab} of model {smallest!r} ({where}): no rank can "
                f"reach it, so it would be left out without a word; keep every k at most {vocab}"
            )


def check_local_size(plan: ModelPlan) -> None:
    """A `path:` model's `S:` against its config.json's architecture (counted on the meta device: no weights
    read), so a wrong S is refused even where its rank arrays already exist and no extraction checks it."""
    if plan.expected_size is None or not plan.source.local or plan.ladder or plan.gguf is not None:
        return
    if not (Path(plan.source.location) / "config.json").is_file():
        return
    from transformers import AutoConfig

    from rankscale.params import non_embedding_from_config

    try:
        model_config = AutoConfig.from_pretrained(plan.source.location, trust_remote_code=plan.source.trust_remote_code)
        counted = non_embedding_from_config(model_config).non_embedding
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"{plan.where}.path: cannot read the architecture of {plan.source.location!r}: {exc}") from None
    if counted != plan.expected_size:
        raise ConfigError(
            f"{plan.where}.S: model {plan.name!r} says S = {plan.expected_size}, but its config.json describes "
            f"{counted} non-embedding parameters; write `S: {counted}` or remove `S:`"
        )
