"""Hub models fetched before any compute job, where the network is, once per repository and revision.

The compute nodes of many clusters have no internet, and parallel jobs that download into one cache race
and spend GPU hours on the network. Rule `download` (a local rule: it runs on the host that runs
Snakemake) fetches a hub model's weights and tokenizer, or a tokenizer hosted in a repository of its own,
into the Hugging Face cache, and records the commit it got in `resources/downloads/<key>.json`. Every
extraction job then runs with HF_HUB_OFFLINE=1 and loads exactly that commit from the cache; without the
download it stops at once, naming the model. On a cluster the cache must be on a file system the compute
nodes share (HF_HOME or HF_HUB_CACHE; docs/cluster.md).
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankscale.canon import canonical, text_key
from rankscale.layout import DOWNLOADS, Layout

if TYPE_CHECKING:
    from rankscale.models import ModelSource
    from rankscale.plan.types import ModelPlan

# what from_pretrained reads: config, safetensors weights (and their index), tokenizer files; not other formats
MODEL_FILES = ("*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken")
TOKENIZER_FILES = ("*.json", "*.txt", "*.model", "*.tiktoken")
PICKLE_FILES = ("*.bin", "*.pt", "*.pth")  # only for entries with `allow_pickle: true`
CODE_FILES = ("*.py",)  # only for entries with `trust_remote_code: true`


class DownloadError(RuntimeError):
    """A hub repository could not be fetched, or is not in this machine's cache; the message says what to do."""


@dataclass(frozen=True)
class HubDownload:
    """One hub repository at one revision: a model (weights and tokenizer) or a tokenizer of its own."""

    repo: str
    revision: str
    tokenizer_only: bool
    trust_remote_code: bool
    allow_pickle: bool

    @property
    def key(self) -> str:
        return text_key(f"{self.repo}@{self.revision}") + ("-tokenizer" if self.tokenizer_only else "")

    @property
    def record(self) -> str:
        return Layout.download(self.key)

    def patterns(self) -> list[str]:
        files = list(TOKENIZER_FILES if self.tokenizer_only else MODEL_FILES)
        if self.allow_pickle and not self.tokenizer_only:
            files += PICKLE_FILES
        if self.trust_remote_code:
            files += CODE_FILES
        return files

    def params(self) -> dict[str, Any]:
        return canonical(asdict(self))


def model_download(source: ModelSource) -> HubDownload | None:
    """What a hub model's extraction needs fetched first (None for local and converted models)."""
    if source.local:
        return None
    return HubDownload(source.location, source.revision or "main", tokenizer_only=False,
                       trust_remote_code=source.trust_remote_code, allow_pickle=source.allow_pickle)  # fmt: skip


def tokenizer_download(source: ModelSource) -> HubDownload | None:
    """A tokenizer from a hub repository of its own (a family's shared tokenizer), else None."""
    if source.tokenizer is None or source.tokenizer_ref is None:
        return None
    return HubDownload(source.tokenizer, source.tokenizer_ref, tokenizer_only=True,
                       trust_remote_code=source.trust_remote_code, allow_pickle=False)  # fmt: skip


def extraction_downloads(plan: ModelPlan) -> list[HubDownload]:
    return [d for d in (model_download(plan.source), tokenizer_download(plan.source)) if d is not None]


def hub_downloads(plans: Mapping[str, ModelPlan]) -> dict[str, HubDownload]:
    """Every download the plan's extractions need, once each, by key: entries that share a repository and
    revision get the files any of them needs (pickled weights, code)."""
    out: dict[str, HubDownload] = {}
    for plan in plans.values():
        for d in extraction_downloads(plan):
            seen = out.get(d.key, d)
            out[d.key] = replace(d, trust_remote_code=d.trust_remote_code or seen.trust_remote_code,
                                 allow_pickle=d.allow_pickle or seen.allow_pickle)  # fmt: skip
    return out


def fetch(download: HubDownload, label: str) -> dict[str, Any]:
    """Fetch the repository at its revision into the Hugging Face cache; the record of what was fetched."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        folder = snapshot_download(download.repo, revision=download.revision, allow_patterns=download.patterns(),
                                   ignore_patterns=["*/*"])  # top-level files: what from_pretrained reads  # fmt: skip
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError) as exc:
        offline = " (HF_HUB_OFFLINE is set, and it is not in the cache)" if constants.HF_HUB_OFFLINE else ""
        raise DownloadError(
            f"{label}: could not download hub repository {download.repo!r} at revision {download.revision!r}"
            f"{offline}: {exc}. Check the hub id and revision, and run snakemake where the Hub is reachable "
            "(downloads are local rules: they run on the host that runs snakemake); without network, point the "
            "model's `path:` at a local copy"
        ) from exc
    files = sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file())
    weights = ("*.safetensors",) + (PICKLE_FILES if download.allow_pickle else ())
    if not download.tokenizer_only and ("config.json" not in files or not any(fnmatch(f, w) for f in files
                                                                            for w in weights)):  # fmt: skip
        raise DownloadError(
            f"{label}: hub repository {download.repo!r} at revision {download.revision!r} has no config.json or no "
            f"weights loadable here ({', '.join(weights)}; found {files}). Pickled weights (*.bin) load only with "
            "`allow_pickle: true` in the model's entry, if you trust them"
        )
    return {
        **download.params(),
        "commit": Path(folder).name,  # the snapshot folder is named by the commit it holds
        "files": files,
        "cache": str(constants.HF_HUB_CACHE),
        "host": platform.node(),
    }


def check_cached(record: Mapping[str, Any], label: str) -> str:
    """The commit a download fetched, checked to be in this machine's cache (compute jobs run offline)."""
    from huggingface_hub import constants, try_to_load_from_cache

    probe = "config.json" if not record["tokenizer_only"] else next(
        (f for f in record["files"] if f.endswith(".json")), "tokenizer_config.json"
    )
    found = try_to_load_from_cache(record["repo"], probe, revision=record["commit"])
    if not isinstance(found, str):
        raise DownloadError(
            f"{label}: hub repository {record['repo']!r} at commit {record['commit']} is not in the Hugging Face "
            f"cache {constants.HF_HUB_CACHE} on this machine ({platform.node()}); it was downloaded into "
            f"{record['cache']} on {record['host']}. Compute jobs run offline: put the cache on a file system "
            "both share (HF_HOME or HF_HUB_CACHE, set before running snakemake), or delete "
            f"{DOWNLOADS}/ and rerun to download again"
        )
    return str(record["commit"])
