"""Rank extraction: every scored token's rank among the real vocabulary and its log-prob.

The backbone runs once per batch of windows (sorted by length, so little padding); hidden
states of scored positions go through the output head in chunks of rows, each chunk reduced
at once to (rank, log-prob), so the full batch x length x |V| logits never exist. A batch
that runs out of memory is retried at half the size; finished batches are kept.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from rankscale.rankfile import RankArrays
from rankscale.ranking import TieRule, rank_and_logprob
from rankscale.tokens import TokenizedCorpus
from rankscale.windows import Windows

log = logging.getLogger(__name__)

HEAD_CHUNK_BYTES = 64 * 2**20  # float32 logits of one head chunk (a few such buffers live at once)
# CPU BLAS takes a matrix-vector path for 1-2 rows, whose float32 sums differ from the
# matrix-matrix path used for more rows; padding short chunks keeps every chunk on the
# matrix-matrix path. It does not make logits bit-identical across chunkings: the kernel's
# blocking still depends on the row count and the processor (tests/tolerances.py bounds it).
MIN_HEAD_ROWS = 8


def auto_head_chunk(columns: int) -> int:
    """Rows per head chunk so one chunk's float32 logits take about HEAD_CHUNK_BYTES."""
    return max(16, HEAD_CHUNK_BYTES // (4 * columns))


def is_out_of_memory(exc: BaseException) -> bool:
    """CUDA raises a typed error; MPS, some kernels and the CPU allocator ("DefaultCPUAllocator: can't
    allocate memory") raise RuntimeError with a message."""
    if isinstance(exc, torch.OutOfMemoryError | MemoryError):
        return True
    message = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in message or "can't allocate memory" in message)


def check_head(model: Any, input_ids: torch.Tensor) -> None:
    """Refuse models whose logits are not output_head(last hidden state) (e.g. soft-capped logits)."""
    probe = input_ids[:1, :32]
    full = model(input_ids=probe).logits[0].float().cpu()  # with device_map, devices differ: compare on CPU
    hidden = model.base_model(input_ids=probe).last_hidden_state[0]
    mine = model.get_output_embeddings()(hidden).float().cpu()
    tolerance = 1e-3 * max(1.0, float(full.abs().max()))
    diff = float((full - mine).abs().max())
    if diff > tolerance:
        raise RuntimeError(
            f"the model's logits differ from output_head(last hidden state) by {diff:.3g}; "
            "this architecture post-processes its logits, which chunked extraction does not support"
        )


def _targets(corpus: TokenizedCorpus, windows: Windows, out_offset: np.ndarray) -> tuple[np.ndarray, ...]:
    """doc, pos and target id of every scored token, in output order."""
    total = int(out_offset[-1])
    doc = np.zeros(total, dtype=np.uint32)
    pos = np.zeros(total, dtype=np.uint32)
    for w in range(len(windows)):
        o, f, e = int(out_offset[w]), int(windows.score_from[w]), int(windows.end[w])
        doc[o : o + e - f] = windows.doc[w]
        pos[o : o + e - f] = np.arange(f, e)
    target = corpus.ids[corpus.offsets[doc.astype(np.int64)] + pos].astype(np.uint32)
    return doc, pos, target


@dataclass(frozen=True)
class ExtractionSettings:
    """How `extract_ranks` scores. `ties` and `head_dtype` change ranks; the rest only speed and memory.

    The configured values (`extraction:` or the model's entry), passed by the caller: no defaults here.
    `head_dtype`: the dtype logits are computed in (float32: exact ranks for bfloat16 models;
    None: the model's own). `head_chunk=None` sizes head chunks automatically.
    """

    ties: TieRule
    head_dtype: torch.dtype | None
    batch_size: int
    head_chunk: int | None
    progress_every_s: float = 10.0


@dataclass(frozen=True)
class _Scorer:
    """The model, its output head and where they live: scores one batch of windows."""

    model: Any
    head: Any
    device: torch.device
    vocab_size: int
    ties: TieRule
    head_chunk: int

    def score(self, corpus: TokenizedCorpus, windows: Windows, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ranks and log-probs of the scored targets of `batch` windows, concatenated in batch order."""
        lengths = windows.end[batch] - windows.start[batch]
        width = int(lengths.max())
        input_ids = torch.zeros((len(batch), width), dtype=torch.long)
        attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
        rows, targets = [], []
        for i, w in enumerate(batch.tolist()):
            s, e, f = int(windows.start[w]), int(windows.end[w]), int(windows.score_from[w])
            tokens = corpus.doc(int(windows.doc[w]))
            input_ids[i, : e - s] = torch.from_numpy(tokens[s:e].astype(np.int64))
            attention_mask[i, : e - s] = 1
            rows.append(i * width + np.arange(f - 1 - s, e - 1 - s))  # position p predicts token p + 1
            targets.append(tokens[f:e])
        hidden = self.model.base_model(
            input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device)
        ).last_hidden_state
        hidden = hidden.reshape(-1, hidden.shape[-1])  # on the last layer's device under device_map
        row_index = torch.from_numpy(np.concatenate(rows)).to(hidden.device)
        tgt = torch.from_numpy(np.concatenate(targets).astype(np.int64)).to(self.device)
        ranks, logprobs = [], []
        for c in range(0, len(row_index), self.head_chunk):
            idx = row_index[c : c + self.head_chunk]
            n = len(idx)
            if n < MIN_HEAD_ROWS:
                idx = torch.cat([idx, idx[-1:].expand(MIN_HEAD_ROWS - n)])
            logits = self.head(hidden[idx])[:n]  # with device_map the head may sit on another device
            r, lp = rank_and_logprob(logits, tgt[c : c + self.head_chunk].to(logits.device), self.vocab_size, self.ties)
            ranks.append(r.cpu())
            logprobs.append(lp.cpu())
        return torch.cat(ranks).numpy(), torch.cat(logprobs).numpy()


def output_head(model: Any, head_dtype: torch.dtype | None) -> Any:
    """The model's output head, computing logits in `head_dtype` (None: the model's own dtype).

    A bfloat16 head quantises logits to 8 mantissa bits, so many tokens tie with the target
    and (ties counting against the model) ranks grow; a float32 copy of the head removes the
    artificial ties at the cost of one float32 |V| x d matrix.
    """
    head = model.get_output_embeddings()
    if head.weight.device.type == "meta":
        raise RuntimeError(
            "the output head was offloaded (device_map put it on CPU/disk as a meta tensor); "
            "give the model more GPUs or memory (gpus:, mem_mb:) so the head stays on a device"
        )
    if head_dtype is None or head.weight.dtype == head_dtype:
        return head
    if head_dtype == torch.float32 and _half_products_exact(head.weight):
        return _HalfWeightsFloat32Logits(head)
    weight = head.weight.detach().to(head_dtype)
    bias = None if head.bias is None else head.bias.detach().to(head_dtype)
    return lambda hidden: torch.nn.functional.linear(hidden.to(weight.device, head_dtype), weight, bias)


def _half_products_exact(weight: torch.Tensor) -> bool:
    """Whether this device multiplies bfloat16/float16 matrices into float32 output (`torch.mm(out_dtype=)`,
    CUDA): then the float32 head needs no float32 copy of the weights."""
    if weight.dtype not in (torch.bfloat16, torch.float16) or weight.device.type != "cuda":
        return False
    probe = torch.ones((1, 1), dtype=weight.dtype, device=weight.device)
    try:
        return torch.mm(probe, probe, out_dtype=torch.float32).dtype == torch.float32
    except (RuntimeError, TypeError, NotImplementedError):
        return False


class _HalfWeightsFloat32Logits:
    """Float32 logits of a bfloat16 (float16) head on a GPU, from the tensor cores, equal to the float32 copy's.

    A product of two bfloat16 numbers (8-bit significands) is exact in float32 (24 bits), float16's (11) too,
    so a half-precision matrix product that accumulates and returns float32 computes what the float32 copy
    of the head does, up to the order of the float32 sums (the same freedom any two float32 paths have).
    Reductions are held to float32 (`allow_bf16/fp16_reduced_precision_reduction` off during the product).
    A hidden state of another dtype than the weights takes the float32 path.
    """

    def __init__(self, head: Any) -> None:
        self.weight_t = head.weight.detach().T.contiguous()  # [d, V], a bfloat16 copy (half the float32 one)
        self.bias = None if head.bias is None else head.bias.detach().float()
        self.head = head
        self._float32: torch.Tensor | None = None

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden.to(self.weight_t.device)
        if hidden.dtype != self.weight_t.dtype:
            if self._float32 is None:
                self._float32 = self.head.weight.detach().float()
            return torch.nn.functional.linear(hidden.float(), self._float32, self.bias)
        flags = torch.backends.cuda.matmul
        saved = (flags.allow_bf16_reduced_precision_reduction, flags.allow_fp16_reduced_precision_reduction)
        flags.allow_bf16_reduced_precision_reduction = flags.allow_fp16_reduced_precision_reduction = False
        try:
            out = torch.mm(hidden.reshape(-1, hidden.shape[-1]), self.weight_t, out_dtype=torch.float32)
        finally:
            flags.allow_bf16_reduced_precision_reduction, flags.allow_fp16_reduced_precision_reduction = saved
        out = out.reshape(*hidden.shape[:-1], out.shape[-1])
        return out if self.bias is None else out + self.bias


def extract_ranks(
    model: Any,
    corpus: TokenizedCorpus,
    windows: Windows,
    vocab_size: int,
    settings: ExtractionSettings,
    stats: dict[str, Any] | None = None,
) -> RankArrays:
    """Score every target of every window.

    `stats`, if given, receives the batch size finally used (after any out-of-memory back-off)
    and the head chunk.
    """
    device = next(model.parameters()).device
    columns = int(model.get_output_embeddings().weight.shape[0])
    scorer = _Scorer(
        model,
        output_head(model, settings.head_dtype),
        device,
        vocab_size,
        settings.ties,
        settings.head_chunk or auto_head_chunk(columns),
    )
    batch_size = settings.batch_size
    out_offset = np.concatenate([[0], np.cumsum(windows.n_scored)])
    total = int(out_offset[-1])
    doc, pos, target = _targets(corpus, windows, out_offset)
    rank = np.zeros(total, dtype=np.uint32)
    logprob = np.zeros(total, dtype=np.float32)
    order = np.argsort(-(windows.end - windows.start), kind="stable")
    started = last = time.perf_counter()
    done = next_window = 0
    with torch.inference_mode():
        if len(order):
            first = order[:1]
            s, e = int(windows.start[first[0]]), int(windows.end[first[0]])
            check_head(
                model, torch.from_numpy(corpus.doc(int(windows.doc[first[0]]))[s:e].astype(np.int64))[None].to(device)
            )
        while next_window < len(order):
            batch = order[next_window : next_window + batch_size]
            try:
                r, lp = scorer.score(corpus, windows, batch)
            except Exception as exc:
                if not is_out_of_memory(exc) or batch_size == 1:
                    raise
                batch_size //= 2
                log.warning("out of memory: retrying with batch size %d (finished batches are kept)", batch_size)
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                continue
            k = 0
            for w in batch.tolist():
                o, n = int(out_offset[w]), int(windows.n_scored[w])
                rank[o : o + n] = r[k : k + n]
                logprob[o : o + n] = lp[k : k + n]
                k += n
            done += k
            next_window += len(batch)
            now = time.perf_counter()
            if now - last >= settings.progress_every_s:
                log.info("scored %d/%d tokens (%.0f tokens/s)", done, total, done / (now - started))
                last = now
    elapsed = time.perf_counter() - started
    log.info("scored %d tokens in %.1f s (%.0f tokens/s)", total, elapsed, total / max(elapsed, 1e-9))
    if stats is not None:
        stats.update(batch_size=batch_size, head_chunk=scorer.head_chunk)
    return RankArrays(rank=rank, logprob=logprob, doc=doc, pos=pos, target=target)
