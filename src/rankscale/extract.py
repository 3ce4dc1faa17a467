"""Rank extraction: every scored token's rank among the real vocabulary, its log-prob and calibration fields.

The backbone runs once per batch of windows (sorted by length, so little padding); hidden
states of scored positions go through the output head's reduction (rankscale.head: chunks of
logits reduced at once, or a fused kernel that never writes them), so the full
batch x length x |V| logits never exist. A batch that runs out of memory is retried at half
the size; finished batches are kept.

On a GPU nothing waits for the device inside a batch: a batch's ranks and log-probs stay on it
and are copied to pinned host memory without blocking, and the next batch's inputs are built on
the CPU while the device works; a batch is read back only once the next one is launched.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from rankscale.head import HeadReduction, Kernel, head_reduction
from rankscale.rankfile import Calibration, RankArrays
from rankscale.ranking import TieRule, TokenScores
from rankscale.tokens import TokenizedCorpus
from rankscale.windows import Windows

log = logging.getLogger(__name__)


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
    None: the model's own). `head_chunk=None` sizes head chunks automatically. `kernel`: the head's
    reduction (rankscale.head: auto, fused or chunked).
    """

    ties: TieRule
    head_dtype: torch.dtype | None
    batch_size: int
    head_chunk: int | None
    kernel: Kernel
    progress_every_s: float = 10.0


@dataclass(frozen=True)
class _Pending:
    """A launched batch: its windows and its results on their way to the host (`ready` once copied)."""

    batch: np.ndarray
    scores: TokenScores  # on the host (pinned memory on a GPU)
    ready: torch.cuda.Event | None

    def wait(self) -> tuple[np.ndarray, ...]:
        """The batch's fields as numpy arrays, in `TokenScores.fields` order."""
        if self.ready is not None:
            self.ready.synchronize()
        fields = tuple(f.numpy() for f in self.scores.fields())
        if not all(np.isfinite(f).all() for f in fields[1:]):
            raise FloatingPointError("non-finite logit for a target token (or a log-softmax that is not finite)")
        return fields


@dataclass(frozen=True)
class _Scorer:
    """The model, its output head's reduction and where they live: scores one batch of windows."""

    model: Any
    reduce: HeadReduction
    device: torch.device
    vocab_size: int

    def inputs(self, corpus: TokenizedCorpus, windows: Windows, batch: np.ndarray) -> tuple[torch.Tensor, ...]:
        """Token ids, attention mask, the flat row of every scored position and its target (on the CPU)."""
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
        target = np.concatenate(targets).astype(np.int64)
        if target.size and int(target.max()) >= self.vocab_size:
            raise ValueError(f"target id {int(target.max())} is outside the vocabulary of {self.vocab_size} tokens")
        return input_ids, attention_mask, torch.from_numpy(np.concatenate(rows)), torch.from_numpy(target)

    def launch(self, inputs: tuple[torch.Tensor, ...], batch: np.ndarray) -> _Pending:
        """Run the batch; on a GPU return without waiting for it (its results copy to pinned host memory)."""
        input_ids, attention_mask, row_index, target = inputs
        cuda = self.device.type == "cuda"
        hidden = self.model.base_model(
            input_ids=input_ids.to(self.device, non_blocking=cuda),
            attention_mask=attention_mask.to(self.device, non_blocking=cuda),
        ).last_hidden_state
        hidden = hidden.reshape(-1, hidden.shape[-1])  # on the last layer's device under device_map
        rows = hidden[row_index.to(hidden.device, non_blocking=cuda)]
        scores = self.reduce(rows, target.to(hidden.device, non_blocking=cuda))
        if scores.rank.device.type != "cuda":
            return _Pending(batch, scores.to("cpu"), None)
        host = TokenScores(*(torch.empty(f.shape, dtype=f.dtype, pin_memory=True) for f in scores.fields()))
        for mine, theirs in zip(host.fields(), scores.fields(), strict=True):
            mine.copy_(theirs, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record(torch.cuda.current_stream(scores.rank.device))
        return _Pending(batch, host, ready)


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
    reduce, kernel, head_chunk = head_reduction(
        model, settings.head_dtype, vocab_size, settings.ties, settings.kernel, settings.head_chunk
    )
    scorer = _Scorer(model, reduce, device, vocab_size)
    batch_size = settings.batch_size
    out_offset = np.concatenate([[0], np.cumsum(windows.n_scored)])
    total = int(out_offset[-1])
    doc, pos, target = _targets(corpus, windows, out_offset)
    # in TokenScores.fields order: rank, logprob, mass_above, top1_logprob, entropy
    out = [np.zeros(total, dtype=np.uint32)] + [np.zeros(total, dtype=np.float32) for _ in range(4)]
    order = np.argsort(-(windows.end - windows.start), kind="stable")
    started = last = time.perf_counter()
    done = next_window = 0
    pending: _Pending | None = None

    def keep(finished: _Pending) -> int:
        """Copy a finished batch's results into place; the number of tokens it scored."""
        fields = finished.wait()
        k = 0
        for w in finished.batch.tolist():
            o, n = int(out_offset[w]), int(windows.n_scored[w])
            for whole, part in zip(out, fields, strict=True):
                whole[o : o + n] = part[k : k + n]
            k += n
        return k

    with torch.inference_mode():
        if len(order):
            first = order[:1]
            s, e = int(windows.start[first[0]]), int(windows.end[first[0]])
            check_head(
                model, torch.from_numpy(corpus.doc(int(windows.doc[first[0]]))[s:e].astype(np.int64))[None].to(device)
            )
        while next_window < len(order):
            batch = order[next_window : next_window + batch_size]
            inputs = scorer.inputs(corpus, windows, batch)  # built while the device runs the previous batch
            try:
                launched = scorer.launch(inputs, batch)
            except Exception as exc:
                if not is_out_of_memory(exc) or batch_size == 1:
                    raise
                batch_size //= 2
                log.warning("out of memory: retrying with batch size %d (finished batches are kept)", batch_size)
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                continue
            if pending is not None:
                done += keep(pending)
            pending = launched
            next_window += len(batch)
            now = time.perf_counter()
            if now - last >= settings.progress_every_s:
                log.info("scored %d/%d tokens (%.0f tokens/s)", done, total, done / (now - started))
                last = now
        if pending is not None:
            done += keep(pending)
    elapsed = time.perf_counter() - started
    log.info("scored %d tokens in %.1f s (%.0f tokens/s)", total, elapsed, total / max(elapsed, 1e-9))
    if stats is not None:
        stats.update(batch_size=batch_size, head_chunk=head_chunk, kernel=kernel)
    rank, logprob, mass_above, top1_logprob, entropy = out
    return RankArrays(rank, logprob, doc, pos, target, Calibration(mass_above, top1_logprob, entropy))
