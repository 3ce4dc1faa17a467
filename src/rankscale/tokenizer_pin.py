"""One hub tokenizer commit for a token file, its token table and the rank arrays scored from them.

A hub tokenizer is configured at a branch (`main`), which can move. Rule `download` reads the branch once and
records the commit it fetched (`rankscale.downloads`); every extraction loads that commit. Rules tokenize and
token_kinds load the commit that record pins where it exists when they run (always, once a study has downloaded
its models: e.g. a dataset added later), else the branch as it is then, and both record the commit they loaded
(`tokenizer_commit`) in their sidecars. The record is not an input of theirs (that would rerun every tokenization
made before, and through it every extraction): where the branch moved between a tokenization and its model's
download, the extraction refuses, naming both commits, and so does a summary whose token table is another
commit's than its rank array (`rankscale.token_kinds.check_token_table`). Local tokenizers are keyed by their
content (`rankscale.plan.keys`): no commit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rankscale.downloads import HubDownload, fetch, model_download, tokenizer_download
from rankscale.identity import TOKENIZER_COMMIT as COMMIT
from rankscale.models import ModelSource, load_tokenizer


def pin_record(source: ModelSource) -> str | None:
    """The download record that pins a model's hub tokenizer (its own repository's, or a tokenizer repository's of
    its own), or None for a local tokenizer."""
    if source.tokenizer is None:
        download = model_download(source)
    else:
        download = tokenizer_download(source)
    return download.record if download is not None else None


def load_pinned(source: ModelSource, record: str | None, label: str) -> tuple[Any, str | None]:
    """(tokenizer, commit) for rules tokenize and token_kinds. `source` is a tokenizer's own (`tokenizer_params`):
    a hub one loads at the commit `record` pins if that file exists, else at the commit its branch resolves to now
    (fetched as rule download fetches a tokenizer); a local one loads as it is, with no commit."""
    if source.local:
        return load_tokenizer(source, label), None
    if record is not None and Path(record).is_file():
        try:
            commit = str(json.loads(Path(record).read_text())["commit"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{record}: unreadable download record ({exc!r}); delete it and rerun snakemake") from None
    else:
        ref = HubDownload(source.location, source.revision or "main", tokenizer_only=True,
                          trust_remote_code=source.trust_remote_code, allow_pickle=False)  # fmt: skip
        commit = str(fetch(ref, label)["commit"])
    return load_tokenizer(replace(source, revision=commit), label), commit


def extraction_commit(source: ModelSource, records: Sequence[Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """(commit, record file) an extraction loads its hub tokenizer at: the tokenizer repository's download if it has
    one, else the model's own (None, None for a local tokenizer)."""
    wanted = pin_record(source)
    for record in records:
        download = HubDownload(**{k: record[k] for k in HubDownload.__dataclass_fields__})
        if download.record == wanted:
            return str(record["commit"]), wanted
    return None, None


def check_token_file(tokens_meta: Mapping[str, Any], tokens_path: str | Path, commit: str | None,
                     record: str | None, model: str) -> None:  # fmt: skip
    """Refuse a token file made at another commit of the tokenizer than the one the model's download pinned.

    A token file written before commits were recorded has none: its tokenizer's content fingerprint is checked
    (`rankscale.extract_job`)."""
    made = tokens_meta.get(COMMIT)
    if made is None or commit is None or made == commit:
        return
    raise ValueError(
        f"{tokens_path}: tokenized with tokenizer {tokens_meta.get('tokenizer')!r} at commit {made}, but model "
        f"{model!r} loads it at commit {commit}, which {record} pinned when rule download fetched it (the branch "
        "moved in between): its ranks would pair one commit's token ids with another's model. Delete "
        f"{tokens_path} and {tokens_path}.json and rerun snakemake: tokenization then loads the pinned commit"
    )
