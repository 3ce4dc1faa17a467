"""Rule extract: one model x one dataset -> rank array + provenance sidecar."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


import json
import platform
import time

import torch
import transformers

from rankscale import __version__
from rankscale.extract import auto_head_chunk, extract_ranks
from rankscale.logs import setup_logging
from rankscale.models import (
    check_window_fits,
    load_model,
    load_tokenizer,
    output_columns,
    resolve_device,
    resolved_revision,
)
from rankscale.params import count_parameters
from rankscale.plan import build_plan
from rankscale.rankfile import save_rank_arrays
from rankscale.tokens import load_tokens, tokenizer_fingerprint
from rankscale.windows import WindowSpec, plan_windows

log = setup_logging(snakemake.log[0])
plan = build_plan(snakemake.config, check_paths=False)[snakemake.wildcards.model]
identity, runtime = plan.identity_for(snakemake.wildcards.dataset), plan.runtime
torch.set_num_threads(snakemake.threads)
token_meta = json.loads(open(snakemake.input.tokens + ".json").read())

tokenizer = load_tokenizer(plan.source)
vocab_size = len(tokenizer)
if tokenizer_fingerprint(tokenizer) != token_meta["tokenizer_sha256"]:
    raise ValueError(f"{snakemake.input.tokens}: tokenized with a different tokenizer than model {plan.name!r} uses")
device = resolve_device(runtime.get("device") or "auto")
model = load_model(
    plan.source,
    dtype=identity["dtype"],
    device=str(device),
    device_map=runtime.get("device_map"),
    attn_implementation=runtime.get("attn_implementation"),
)
check_window_fits(model, identity["max_length"], plan.name)
columns = output_columns(model)
if columns < vocab_size:
    raise ValueError(
        f"model {plan.name!r}: output layer has {columns} columns but the tokenizer has {vocab_size} tokens"
    )
if plan.expected_vocab is not None and plan.expected_vocab != vocab_size:
    raise ValueError(
        f"model {plan.name!r}: config says vocab_size = {plan.expected_vocab} but its tokenizer has {vocab_size} tokens"
    )
params = count_parameters(model)
if plan.expected_size is not None and plan.expected_size != params.non_embedding:
    raise ValueError(
        f"model {plan.name!r}: config says S = {plan.expected_size} but the loaded model has {params.non_embedding} non-embedding parameters"
    )
corpus = load_tokens(snakemake.input.tokens)
windows = plan_windows(
    corpus.doc_lengths(),
    WindowSpec(identity["max_length"], identity["stride"], identity["max_windows_per_doc"]),
    corpus.first_targets(),
)
log.info(
    "%s on %s: %d windows, %d targets, S=%d, |V|=%d (%d output columns), device %s",
    plan.name,
    snakemake.wildcards.dataset,
    len(windows),
    int(windows.n_scored.sum()),
    params.non_embedding,
    vocab_size,
    columns,
    device,
)
started = time.perf_counter()
stats: dict = {}
arrays = extract_ranks(
    model,
    corpus,
    windows,
    vocab_size,
    ties=identity["ties"],
    batch_size=runtime.get("batch_size") or 8,
    head_chunk=runtime.get("head_chunk"),
    stats=stats,
    head_dtype=None if identity.get("head_dtype") == "model" else torch.float32,
)
wall = time.perf_counter() - started
meta = {
    "model": plan.name,
    "family": plan.family,
    "location": plan.source.location,
    "revision": plan.source.revision,
    "resolved_revision": resolved_revision(plan.source, model),
    "S": params.non_embedding,
    "parameters": params.__dict__,
    "vocab_size": vocab_size,
    "output_columns": columns,
    "dataset": snakemake.wildcards.dataset,
    "tokenizer": plan.source.tokenizer_location,
    "tokenizer_key": plan.tokenizer_key,
    "tokenizer_sha256": token_meta["tokenizer_sha256"],
    "corpus_sha256": token_meta["corpus_sha256"],
    "dataset_revision": token_meta.get("dataset_revision"),
    "tokens_sha256": token_meta["sha256"],
    "windows": {k: identity[k] for k in ("max_length", "stride", "max_windows_per_doc")},
    "n_windows": len(windows),
    "n_documents": token_meta["documents"],
    "ties": identity["ties"],
    "dtype": identity["dtype"],
    **({"head_dtype": identity["head_dtype"]} if "head_dtype" in identity else {}),
    "device": str(device),
    "batch_size": runtime.get("batch_size"),
    "batch_size_used": stats["batch_size"],
    "threads": torch.get_num_threads(),
    "head_chunk": runtime.get("head_chunk") or auto_head_chunk(columns),
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
save_rank_arrays(arrays, snakemake.output.ranks, snakemake.output.meta, meta)
