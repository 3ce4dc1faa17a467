"""Keys and file names: how models, tokenizers, corpora and the ladder are named on disk.

A key changes exactly when what it names changes: a tokenizer key depends on where the tokenizer
loads from (never on which model lists it first), a ladder directory on its training text and
tokenizer settings, a corpus on its entry less the settings later steps apply.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankscale.canon import canonical, short_hash, text_key
from rankscale.config import ConfigError, dataset_spec, validate
from rankscale.content_digest import file_digest, tokenizer_digest
from rankscale.fingerprint import FormatVersion
from rankscale.formats import SOURCE_FORMATS, TRAIN_FORMAT
from rankscale.layout import LADDERS, NO_LADDER, RESOURCES
from rankscale.models import ModelSource

if TYPE_CHECKING:
    from rankscale.plan.types import ModelPlan

# dataset keys added after results existed: left out of params at their defaults, so corpora
# (and everything downstream) made before them stay up to date
LATER_DATASET_KEYS = {"format": None, "skip_invalid_records": False, "max_bytes": None}


def corpus_params(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What a corpus's text depends on: its entry less the settings later steps apply, canonical."""
    dropped = ("windows",)
    return canonical(
        {
            k: v
            for k, v in spec.items()
            if k not in dropped and not (k in LATER_DATASET_KEYS and v == LATER_DATASET_KEYS[k])
        }
    )


def corpus_meaning(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What a corpus's key follows: `corpus_params`, with a local file's path replaced by its content digest (and
    the format it is read as; a text file's name, which its documents' ids carry), so the same file anywhere
    has the same key. Packaged and hub entries are keyed as written. Its source's format version
    (`rankscale.formats.SOURCE_FORMATS`) is part of it from version 2 on: a bump recomputes that source's corpora."""
    meaning = _entry_meaning(spec)
    version = source_format(spec.get("source")).version
    return meaning if version == 1 else canonical({**meaning, "source_format": version})


def source_format(name: Any) -> FormatVersion:
    """The pinned format of dataset source `name`'s module (version 1 for a name no source has: refused elsewhere)."""
    from rankscale.sources import SOURCES

    source = SOURCES.get(name) if isinstance(name, str) else None
    module = source.documents.__module__.removeprefix("rankscale.").replace(".", "/") if source else None
    return SOURCE_FORMATS.get(f"{module}.py", FormatVersion(1, ""))


def _entry_meaning(spec: Mapping[str, Any]) -> dict[str, Any]:
    params = corpus_params(spec)
    if spec.get("source") != "local" or not Path(str(spec.get("path"))).is_file():
        return params
    from rankscale.corpus import CorpusError
    from rankscale.sources.local import file_format

    path = Path(str(spec["path"]))
    try:
        fmt = file_format(dataset_spec(spec), "dataset")
    except (CorpusError, ConfigError):
        return params  # refused with its key by the dataset checks (rankscale.plan.checks), which run before any job

    content = {"content": file_digest(path), "format": fmt, **({"name": path.name} if fmt == "txt" else {})}
    return canonical({**{k: v for k, v in params.items() if k != "path"}, **content})


def ladder_dir(config: Mapping[str, Any], validated: bool = False) -> str:
    """`resources/ladder/<key>`: one directory per ladder training text and tokenizer settings.

    Two configurations (the default and config/smoke.yaml) in one clone each keep their own
    tokenizer and checkpoints instead of retraining each other's. The training text is cut
    free of every evaluated dataset's text, so those datasets are part of the key. Model
    settings (size, training) are the ladder_train rule's params, not part of the key.
    """
    if not config.get("ladder"):
        return NO_LADDER
    if not validated:  # a raw configuration (tests, tools); the workflow's is validated once, before the plan
        config = validate(copy.deepcopy(dict(config)))
    ladder = config["ladder"]
    key = {
        "corpus": [corpus_meaning(spec) for spec in ladder["corpus"]],
        "tokenizer": ladder["tokenizer"],
        "disjoint_from": {name: corpus_meaning(spec) for name, spec in config["datasets"].items()},
    }
    return f"{LADDERS}/{short_hash(TRAIN_FORMAT.params(key), 12)}"


def ladder_tokenizer_key(ladder: str) -> str:
    """`ladder-<ladder key>`: two ladders' tokenizers (so their token files) never share a name."""
    return f"ladder-{Path(ladder).name}"


def local_tokenizer_digest(source: ModelSource) -> str | None:
    """The content digest of a `path:` model's tokenizer where it is a local directory that is not the workflow's
    own output (the ladder's, a converted GGUF's: keyed where they are made), else None."""
    location = Path(source.tokenizer_location)
    if source.tokenizer is not None and source.tokenizer_ref is not None:
        return None  # a hub tokenizer
    if not location.is_dir() or location.resolve().is_relative_to(Path(RESOURCES).resolve()):
        return None  # the workflow's own output (resources/ladder, resources/gguf): keyed where it is made
    return tokenizer_digest(location)


def tokenizer_key(source: ModelSource) -> str:
    """Models whose tokenizers load from the same place at the same revision share one key."""
    if source.tokenizer is None:
        return text_key(source.location) if source.local else text_key(f"{source.location}@{source.revision}")
    ref = source.tokenizer_ref
    return text_key(source.tokenizer if ref in (None, "main") else f"{source.tokenizer}@{ref}")


def distinct_tokenizer_keys(plans: dict[str, ModelPlan]) -> None:
    """Different tokenizers whose keys still coincide (e.g. '/a/b' and 'a/b') get a hash each, in place."""
    sources: dict[str, set[tuple[str, str | None]]] = {}
    for plan in plans.values():
        sources.setdefault(plan.tokenizer_key, set()).add(tokenizer_id(plan))
    for name, plan in plans.items():
        if len(sources[plan.tokenizer_key]) > 1:
            key = f"{plan.tokenizer_key}-{short_hash(tokenizer_id(plan))}"
            plans[name] = replace(plan, tokenizer_key=key)


def tokenizer_id(plan: ModelPlan) -> tuple[str, str | None]:
    """What tells tokenizers apart: a local one's content, else where it loads from and at which revision."""
    if plan.tokenizer_digest:
        return f"sha256:{plan.tokenizer_digest}", None
    return plan.source.tokenizer_location, plan.source.tokenizer_ref


def tokenizer_sources(plans: Mapping[str, ModelPlan]) -> dict[str, ModelSource]:
    """One source per tokenizer key (models sharing a key share one tokenization job)."""
    out: dict[str, ModelSource] = {}
    for plan in plans.values():
        out.setdefault(plan.tokenizer_key, plan.source)
    return out


def tokenizer_meaning(plans: Mapping[str, ModelPlan], key: str) -> dict[str, Any]:
    """What tokenizer key `key` means (the tokenize rule's params, part of its token files' keys): `tokenizer_params`,
    with a local tokenizer's location replaced by its content digest, so a study moved elsewhere keeps its keys."""
    plan = next(p for p in plans.values() if p.tokenizer_key == key)
    params = tokenizer_params(plan.source, key)
    if plan.tokenizer_digest:
        params = canonical({**params, "location": f"sha256:{plan.tokenizer_digest}"})
    return params


def tokenizer_params(source: ModelSource, key: str) -> dict[str, Any]:
    """What tokenizer key `key` loads, independent of which model lists it first: the tokenize rule's params.

    Taking the first model's whole source would change these params (so re-tokenize, so re-extract
    every model sharing the key) whenever that first model is removed or reordered.
    """
    return canonical(
        {
            "name": key,
            "location": source.tokenizer_location,
            "revision": source.tokenizer_ref,
            "local": source.local if source.tokenizer is None else source.tokenizer_ref is None,
            "tokenizer": None,
            "trust_remote_code": source.trust_remote_code,
            "allow_pickle": source.allow_pickle,
        }
    )
