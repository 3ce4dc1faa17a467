"""The output head as a reduction: hidden states of scored positions in, each token's scores out.

The scores are rankscale.ranking.TokenScores: rank and log-prob, and the calibration fields.

Two kernels (`extraction.kernel`), the same numbers up to the order of float32 sums:
- `chunked`: logits of a chunk of rows through the model's head (or its float32 copy), reduced at once by
  `rankscale.ranking.score_tokens`. The only path on a CPU, where its bit-identity guarantees hold
  (docs/paper.md, "Exactness of ranks"). On CUDA its chunks are sized from the free device memory.
- `fused`: the Triton kernel of rankscale.fused_rank, which never writes a logit (CUDA; on a CPU only
  under Triton's interpreter).
`auto` is fused where the head sits on a CUDA device and Triton imports, chunked otherwise.
Both keep their results on the head's device: the caller copies them to the host once per batch.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any, Literal

import torch

from rankscale.ranking import TieRule, TokenScores, score_tokens

Kernel = Literal["auto", "fused", "chunked"]
KERNELS: tuple[str, ...] = ("auto", "fused", "chunked")
# One head reduction: hidden rows [N, d] and their targets [N] -> their scores, on the head's device
HeadReduction = Callable[[torch.Tensor, torch.Tensor], TokenScores]

HEAD_CHUNK_BYTES = 64 * 2**20  # float32 logits of one head chunk on a CPU (a few such buffers live at once)
DEVICE_HEAD_FRACTION = 0.25  # of the free device memory, for one chunk's logits and the reduction's temporaries
BYTES_PER_LOGIT = 16  # float32 logits, their exp for the logsumexp, the comparison mask, the allocator's slack
# CPU BLAS takes a matrix-vector path for 1-2 rows, whose float32 sums differ from the
# matrix-matrix path used for more rows; padding short chunks keeps every chunk on the
# matrix-matrix path. It does not make logits bit-identical across chunkings: the kernel's
# blocking still depends on the row count and the processor (tests/tolerances.py bounds it).
MIN_HEAD_ROWS = 8


def auto_head_chunk(columns: int) -> int:
    """Rows per head chunk so one chunk's float32 logits take about HEAD_CHUNK_BYTES."""
    return max(16, HEAD_CHUNK_BYTES // (4 * columns))


def device_head_chunk(columns: int, free_bytes: int) -> int:
    """Rows per head chunk on a GPU: a quarter of its free memory for the chunk's logits and temporaries.

    A CPU-sized chunk (64 MiB) splits a batch of 64 x 1024 positions into hundreds of small products on a
    GPU, each launched and reduced on its own; this makes it a few.
    """
    return max(auto_head_chunk(columns), int(DEVICE_HEAD_FRACTION * free_bytes) // (BYTES_PER_LOGIT * columns))


def triton_importable() -> bool:
    return importlib.util.find_spec("triton") is not None


def resolve_kernel(kernel: Kernel, head_device: torch.device) -> Literal["fused", "chunked"]:
    """`auto`: fused on a CUDA head when Triton is installed, chunked otherwise."""
    if kernel not in KERNELS:
        raise ValueError(f"extraction.kernel must be one of {KERNELS}, got {kernel!r}")
    if kernel == "auto":
        return "fused" if head_device.type == "cuda" and triton_importable() else "chunked"
    if kernel == "fused" and not triton_importable():
        raise RuntimeError(
            "extraction.kernel: fused needs Triton (pip install -e '.[triton]', or a CUDA build of torch, which "
            "brings it); or set `kernel: chunked`"
        )
    return kernel


def head_reduction(
    model: Any, head_dtype: torch.dtype | None, vocab_size: int, ties: TieRule, kernel: Kernel, head_chunk: int | None
) -> tuple[HeadReduction, str, int | None]:
    """The reduction `kernel` selects for `model`'s head: (reduction, the kernel it resolved to, head chunk rows)."""
    head = model.get_output_embeddings()
    check_on_device(head)
    chosen = resolve_kernel(kernel, head.weight.device)
    if chosen == "fused":
        from rankscale.fused_rank import FusedRankHead  # imports Triton: only where it is used

        model_dtype = head.weight.dtype
        rounds = head_dtype is None and model_dtype in (torch.bfloat16, torch.float16)
        weight = head.weight if head_dtype in (None, torch.float32) else head.weight.to(head_dtype)
        fused = FusedRankHead(weight, head.bias, vocab_size, ties, round_to=model_dtype if rounds else None)
        return fused, chosen, None
    columns = int(head.weight.shape[0])
    if head_chunk is None:
        device = head.weight.device
        head_chunk = (
            device_head_chunk(columns, torch.cuda.mem_get_info(device)[0])
            if device.type == "cuda"
            else auto_head_chunk(columns)
        )
    return ChunkedHead(output_head(model, head_dtype), vocab_size, ties, head_chunk), chosen, head_chunk


class ChunkedHead:
    """Logits of `chunk` rows at a time through `head`, each chunk reduced at once; results stay on the device."""

    def __init__(self, head: Callable[[torch.Tensor], torch.Tensor], vocab_size: int, ties: TieRule, chunk: int):
        self.head, self.vocab_size, self.ties, self.chunk = head, vocab_size, ties, chunk

    def __call__(self, hidden: torch.Tensor, targets: torch.Tensor) -> TokenScores:
        parts = []
        for c in range(0, hidden.shape[0], self.chunk):
            rows = hidden[c : c + self.chunk]
            n = rows.shape[0]
            if n < MIN_HEAD_ROWS:
                rows = torch.cat([rows, rows[-1:].expand(MIN_HEAD_ROWS - n, -1)])
            logits = self.head(rows)[:n]  # with device_map the head may sit on another device
            tgt = targets[c : c + self.chunk].to(logits.device)
            parts.append(score_tokens(logits, tgt, self.vocab_size, self.ties, check_values=False))  # checked by the caller
        return TokenScores.cat(parts)


def check_on_device(head: Any) -> None:
    if head.weight.device.type == "meta":
        raise RuntimeError(
            "the output head was offloaded (device_map put it on CPU/disk as a meta tensor); "
            "give the model more GPUs or memory (gpus:, mem_mb:) so the head stays on a device"
        )


def output_head(model: Any, head_dtype: torch.dtype | None) -> Any:
    """The model's output head, computing logits in `head_dtype` (None: the model's own dtype).

    A bfloat16 head quantises logits to 8 mantissa bits, so many tokens tie with the target
    and (ties counting against the model) ranks grow; a float32 copy of the head removes the
    artificial ties at the cost of one float32 |V| x d matrix.
    """
    head = model.get_output_embeddings()
    check_on_device(head)
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
