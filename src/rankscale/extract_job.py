"""One extraction job: load the model and token windows, check them, score, build the sidecar.

The rule script only reads its inputs and calls `run`; the sidecar it returns holds the
array's identity (`RankIdentity.sidecar`) and everything else a reader needs to trust it.
"""

from __future__ import annotations

import json
import logging
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import transformers

from rankscale import __version__
from rankscale.content_digest import weights_digest
from rankscale.downloads import check_cached
from rankscale.extract import ExtractionSettings, extract_ranks
from rankscale.gguf import converted_info
from rankscale.gpu_slots import claim, cuda_device_ids
from rankscale.identity import TOKENIZER_COMMIT, RankIdentity, Upstream
from rankscale.models import (
    ModelSource,
    check_device,
    check_window_fits,
    load_model,
    load_tokenizer,
    output_columns,
    resolve_device,
    resolved_revision,
)
from rankscale.params import count_parameters
from rankscale.rankfile import RankArrays
from rankscale.tokenizer_pin import check_token_file, extraction_commit
from rankscale.tokens import load_tokens, tokenizer_fingerprint
from rankscale.windows import plan_windows

log = logging.getLogger(__name__)


def padding_bound(columns: int) -> int:
    """Output columns a model may carry beyond its tokenizer as padding: max(128, 1% of them).

    Pythia pads 27 columns, OPT 7, Qwen2.5 271; a far wider head means the tokenizer is not
    the model's, and ranks over its first columns would look valid and be wrong.
    """
    return max(128, columns // 100)


def check_vocabulary(columns: int, vocab_size: int, job: Mapping[str, Any]) -> None:
    """The tokenizer must cover the output layer, up to padding (unless the entry opts in)."""
    name = job["name"]
    if columns < vocab_size:
        raise ValueError(
            f"model {name!r}: output layer has {columns} columns but the tokenizer has {vocab_size} tokens"
        )
    gap, bound = columns - vocab_size, padding_bound(columns)
    if gap > bound and not job["allow_vocab_gap"]:
        raise ValueError(
            f"model {name!r}: output layer has {columns} columns but the tokenizer only {vocab_size} tokens: "
            f"{gap} columns more than the tokenizer, beyond the {bound} allowed as padding (max(128, 1% of the "
            f"columns)); is the tokenizer the model's? If it is, set `{job['where']}.allow_vocab_gap: true`"
        )


def run(
    job: Mapping[str, Any],
    identity: RankIdentity,
    dataset: str,
    tokens_path: str | Path,
    downloads: Sequence[Mapping[str, Any]] = (),
) -> tuple[RankArrays, dict[str, Any]]:
    """Score `tokens_path` with the job's model; `job` is `ModelPlan.job()` (source, runtime, checks).

    A hub model loads the commit its download record names (`rankscale.downloads`), from the cache.
    """
    name, runtime = job["name"], job["runtime"]
    check_device(runtime["device"], name, job["device_key"])
    source = ModelSource(**job["source"])
    weights = identity.weights if identity.weights and not identity.weights.startswith("gguf:") else None
    if weights and weights_digest(source.location) != weights:  # cached by the files' stamps: no rehash
        raise ValueError(
            f"model {name!r}: the weight files in {source.location!r} changed after snakemake planned this job; "
            "rerun snakemake (it rescores a model whose weights change)"
        )
    for record in downloads:
        commit = check_cached(record, f"model {name!r}")
        # a branch (`main`) read once, at download: the model and a tokenizer of its own repository at that commit
        source = replace(source, **{"tokenizer_revision" if record["tokenizer_only"] else "revision": commit})
    token_meta = json.loads(Path(f"{tokens_path}.json").read_text())
    # the token file's tokenizer commit must be the one the download pinned (rankscale.tokenizer_pin); one written
    # before commits were recorded has its tokenizer's content checked, below
    commit, record = extraction_commit(ModelSource(**job["source"]), downloads)
    check_token_file(token_meta, tokens_path, commit, record, name)
    tokenizer = load_tokenizer(source)
    vocab_size = len(tokenizer)
    upstream = Upstream.of_token_file(token_meta)
    if tokenizer_fingerprint(tokenizer) != upstream.tokenizer:
        at = f" at commit {commit} ({record})" if commit else ""
        raise ValueError(
            f"{tokens_path}: tokenized with a different tokenizer than model {name!r} uses{at}; delete {tokens_path} "
            f"and {tokens_path}.json and rerun snakemake"
        )
    device = resolve_device(runtime["device"])
    max_memory = None
    wanted = (runtime["gpus"] if runtime["device_map"] else 1) if device.type == "cuda" and device.index is None else 0
    if wanted:  # held until this process ends: its own GPUs on a machine with several (rankscale.gpu_slots)
        slots = claim(cuda_device_ids(), wanted)
        device = torch.device("cuda", slots[0].index)
        torch.cuda.set_device(device)
        if runtime["device_map"]:  # spread over its own devices only
            max_memory = {s.index: torch.cuda.get_device_properties(s.index).total_memory for s in slots}
        log.info("%s: GPU slot(s) %s", name, ", ".join(f"cuda:{s.index} ({s.device_id})" for s in slots))
    model = load_model(
        source,
        dtype=identity.dtype,
        device=str(device),
        device_map=runtime["device_map"],
        attn_implementation=runtime["attn_implementation"],
        max_memory=max_memory,
    )
    check_window_fits(model, identity.max_length, name)
    columns = output_columns(model)
    check_vocabulary(columns, vocab_size, job)
    if job["expected_vocab"] is not None and job["expected_vocab"] != vocab_size:
        raise ValueError(
            f"model {name!r}: config says vocab_size = {job['expected_vocab']} but its tokenizer has {vocab_size} tokens"
        )
    params = count_parameters(model)
    if job["expected_size"] is not None and job["expected_size"] != params.non_embedding:
        raise ValueError(
            f"model {name!r}: config says S = {job['expected_size']} but the loaded model has "
            f"{params.non_embedding} non-embedding parameters"
        )
    corpus = load_tokens(tokens_path)
    windows = plan_windows(corpus.doc_lengths(), identity.windows, corpus.first_targets())
    log.info(
        "%s on %s: %d windows, %d targets, S=%d, |V|=%d (%d output columns), device %s",
        name,
        dataset,
        len(windows),
        int(windows.n_scored.sum()),
        params.non_embedding,
        vocab_size,
        columns,
        device,
    )
    settings = ExtractionSettings(
        ties=identity.ties,
        head_dtype=None if identity.head_dtype == "model" else torch.float32,
        batch_size=runtime["batch_size"],
        head_chunk=runtime["head_chunk"],
        kernel=runtime["kernel"],
    )
    started = time.perf_counter()
    stats: dict[str, Any] = {}
    arrays = extract_ranks(model, corpus, windows, vocab_size, settings, stats)
    wall = time.perf_counter() - started
    gguf = converted_info(source.location) if source.local else None
    meta = {
        "model": name,
        "family": job["family"],
        **identity.sidecar(),
        # a converted GGUF model is its file: its digest, and the quantization its dequantized weights come from
        "resolved_revision": f"gguf:{gguf['sha256']}" if gguf else resolved_revision(source, model, weights),
        "quantization": gguf["quantization"] if gguf else None,
        "gguf_file": gguf["file"] if gguf else None,
        "S": params.non_embedding,
        "parameters": params.__dict__,
        "vocab_size": vocab_size,
        "output_columns": columns,
        "dataset": dataset,
        "tokenizer_key": job["tokenizer_key"],
        **upstream.sidecar(),
        **({TOKENIZER_COMMIT: commit} if commit else {}),  # a hub tokenizer's: what its token table is checked against
        "dataset_revision": token_meta.get("dataset_revision"),
        # each document began with the special tokens its tokenizer puts before the text (e.g. a BOS), or not
        "add_special_tokens": token_meta.get("add_special_tokens"),
        "special_prefix_tokens": token_meta.get("special_prefix_tokens"),
        "n_windows": len(windows),
        "n_documents": token_meta["documents"],
        "device": str(device),
        "batch_size": runtime["batch_size"],
        "batch_size_used": stats["batch_size"],
        "threads": torch.get_num_threads(),
        "head_chunk": stats["head_chunk"],
        "kernel": stats["kernel"],
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "wall_time_s": wall,
        "tokens_per_s": arrays.rank.size / max(wall, 1e-9),
        "versions": {
            "rankscale": __version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": platform.python_version(),
        },
    }
    return arrays, meta
