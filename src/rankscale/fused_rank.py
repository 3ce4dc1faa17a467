"""Rank and log-prob straight from hidden states and the output head, never writing a logit (Triton).

The chunked path (rankscale.extract) materialises a chunk of logits, then reduces it. Here one kernel
streams over tiles of the head's columns instead, as cut-cross-entropy (Wijmans et al. 2025) and Liger's
fused linear cross-entropy do for the loss, and keeps per row only what the rank and the log-prob need:
the count of columns at or above the target's logit and an online logsumexp, with two more online sums
for the calibration fields (rankscale.ranking.TokenScores): the exponentials of the competitors at or above
the target, and sum e^(z - max) (z - max) for the entropy. Logits exist one tile at a time, in registers.

Two kernels share one tile product (`_tile_logits`), so a logit is computed the same way wherever it is:
1. `_target_logits`: each row's target logit, from a tile whose columns are the block's target rows of the
   head (the diagonal of that tile). It has the shape, blocking and code of every other tile, so a column
   whose weights equal the target's (an exact tie) gets the identical float32 value.
2. `_rank_partials`: a (row block, column split) program streams its columns, counting the columns
   v != t with z_v >= z_t (ties "ge") or z_v > z_t ("gt") among the real vocabulary (padded columns never
   count) and accumulating max, sum-exp, the competitors' sum-exp and the entropy's sum; splits are combined
   in torch (`_combine`). rank = count + 1: the target
   itself is counted once, by definition, not by a comparison of a logit with itself.

Products: bfloat16/float16 operands into float32 accumulators on the tensor cores (a product of two
bfloat16 numbers is exact in float32, so this is the float32 head up to the order of its sums, like the
chunked path's `torch.mm(out_dtype=float32)`); float32 operands in IEEE float32 (never TF32).
`round_to` rounds logits to the model's dtype first (`head_dtype: model`).

Triton is optional (`pip install -e ".[triton]"`, or the triton that a CUDA build of torch brings). On a
CPU the kernels run only under Triton's interpreter (TRITON_INTERPRET=1, set before this module is
imported), which the tests use.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from rankscale.ranking import TIE_RULES, TieRule, TokenScores

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def _tile_logits(h_ptr, w_ptr, rows, cols, row_ok, col_ok, d, stride_h, stride_w,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, IEEE: tl.constexpr):  # fmt: skip
    """float32 [BLOCK_M, BLOCK_N] = hidden[rows] @ weight[cols]^T, summed over d in BLOCK_K steps."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    rows64, cols64 = rows.to(tl.int64), cols.to(tl.int64)  # offsets past 2^31 elements on the largest heads
    for k0 in range(0, d, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < d
        a = tl.load(h_ptr + rows64[:, None] * stride_h + ks[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptr + cols64[None, :] * stride_w + ks[:, None], mask=col_ok[None, :] & k_ok[:, None], other=0.0)
        if IEEE:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _finish(acc, bias_ptr, cols, col_ok, HAS_BIAS: tl.constexpr, ROUND: tl.constexpr):
    """Bias (float32) and the optional rounding of the logits to the model's dtype."""
    if HAS_BIAS:
        acc = acc + tl.load(bias_ptr + cols, mask=col_ok, other=0.0)[None, :]
    if ROUND == 1:  # to bfloat16, nearest even, in integer arithmetic: the interpreter's cast truncates
        bits = acc.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        acc = bits.to(tl.float32, bitcast=True)
    if ROUND == 2:
        acc = acc.to(tl.float16).to(tl.float32)
    return acc


@triton.jit
def _target_logits(h_ptr, w_ptr, bias_ptr, tgt_ptr, out_ptr, n, d, stride_h, stride_w,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, IEEE: tl.constexpr,
                   HAS_BIAS: tl.constexpr, ROUND: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n
    j = tl.arange(0, BLOCK_N)
    col_rows = tl.program_id(0) * BLOCK_M + j  # tile column j holds the target of the block's row j
    col_ok = (j < BLOCK_M) & (col_rows < n)
    cols = tl.load(tgt_ptr + col_rows, mask=col_ok, other=0)
    acc = _tile_logits(h_ptr, w_ptr, rows, cols, row_ok, col_ok, d, stride_h, stride_w, BLOCK_M, BLOCK_N, BLOCK_K, IEEE)
    acc = _finish(acc, bias_ptr, cols, col_ok, HAS_BIAS, ROUND)
    diagonal = tl.arange(0, BLOCK_M)[:, None] == j[None, :]
    tl.store(out_ptr + rows, tl.sum(tl.where(diagonal, acc, 0.0), axis=1), mask=row_ok)


@triton.jit
def _rank_partials(h_ptr, w_ptr, bias_ptr, tgt_ptr, zt_ptr, max_ptr, sum_ptr, count_ptr, above_ptr, shift_ptr,
                   n, d, vocab, tiles_per_split, stride_h, stride_w,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, IEEE: tl.constexpr,
                   HAS_BIAS: tl.constexpr, ROUND: tl.constexpr, GREATER: tl.constexpr):  # fmt: skip
    split = tl.program_id(1)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n
    target = tl.load(tgt_ptr + rows, mask=row_ok, other=-1)
    zt = tl.load(zt_ptr + rows, mask=row_ok, other=0.0)
    run_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    run_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    run_above = tl.zeros((BLOCK_M,), dtype=tl.float32)  # sum of e^(z - run_max) over the competitors above
    run_shift = tl.zeros((BLOCK_M,), dtype=tl.float32)  # sum of e^(z - run_max) (z - run_max)
    count = tl.zeros((BLOCK_M,), dtype=tl.int32)
    for tile in range(split * tiles_per_split, (split + 1) * tiles_per_split):
        cols = tile * BLOCK_N + tl.arange(0, BLOCK_N)
        col_ok = cols < vocab  # padded output columns are not tokens
        acc = _tile_logits(h_ptr, w_ptr, rows, cols, row_ok, col_ok, d, stride_h, stride_w,
                           BLOCK_M, BLOCK_N, BLOCK_K, IEEE)  # fmt: skip
        z = _finish(acc, bias_ptr, cols, col_ok, HAS_BIAS, ROUND)
        competitor = col_ok[None, :] & (cols[None, :] != target[:, None])
        if GREATER:
            above = z > zt[:, None]
        else:
            above = z >= zt[:, None]
        counted = competitor & above
        count += tl.sum(counted.to(tl.int32), axis=1)
        z = tl.where(col_ok[None, :], z, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(z, axis=1))
        safe = tl.where(new_max == float("-inf"), 0.0, new_max)  # a tile of padding only: nothing to add yet
        scale = tl.exp(run_max - safe)
        # the reference moves from run_max to safe: e^(z-safe)(z-safe) = scale e^(z-run_max)((z-run_max) + run_max-safe)
        moved = tl.where(run_max == float("-inf"), 0.0, run_max - safe) * run_sum  # nothing summed yet: 0
        e = tl.exp(z - safe[:, None])
        shifted = tl.where(e > 0.0, z - safe[:, None], 0.0)  # padding or a logit of -inf: e is 0, 0 * -inf NaN
        run_shift = scale * (run_shift + moved) + tl.sum(e * shifted, axis=1)
        run_above = run_above * scale + tl.sum(tl.where(counted, e, 0.0), axis=1)
        run_sum = run_sum * scale + tl.sum(e, axis=1)
        run_max = new_max
    out = split * n + rows
    tl.store(max_ptr + out, run_max, mask=row_ok)
    tl.store(sum_ptr + out, run_sum, mask=row_ok)
    tl.store(count_ptr + out, count, mask=row_ok)
    tl.store(above_ptr + out, run_above, mask=row_ok)
    tl.store(shift_ptr + out, run_shift, mask=row_ok)


@dataclass(frozen=True)
class Blocks:
    """Tile sizes: rows a program, columns a tile, hidden features a step (each >= 16 for tl.dot)."""

    m: int
    n: int
    k: int


INTERPRETED_TILES = 64  # the most column tiles a row block streams under the interpreter (default blocks)


def default_blocks(dtype: torch.dtype, columns: int = 0) -> Blocks:
    """Tensor-core tiles for half-precision operands; smaller ones for float32 (twice the bytes a value).

    Under Triton's interpreter a tile's cost is a Python overhead per operation (about 5 ms of CPU for a
    64 x 128 tile, 12 ms for 64 x 2048), so a head of more than INTERPRETED_TILES tiles gets wider ones
    (a power of two): a GPU head's 262,144 columns in 64 tiles, not 2,048. Narrower heads keep the GPU's tiles.
    """
    b = Blocks(64, 128, 64) if dtype in (torch.bfloat16, torch.float16) else Blocks(32, 64, 32)
    if INTERPRETED and columns > INTERPRETED_TILES * b.n:
        return Blocks(b.m, triton.next_power_of_2(triton.cdiv(columns, INTERPRETED_TILES)), b.k)
    return b


def default_splits(row_blocks: int, tiles: int, device: torch.device) -> int:
    """Column splits so the grid holds about 4 programs a streaming multiprocessor (1 on the interpreter)."""
    if device.type != "cuda":
        return 1
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(tiles, math.ceil(4 * sms / max(row_blocks, 1))))


_ROUND = {None: 0, torch.bfloat16: 1, torch.float16: 2}


class FusedRankHead:
    """(rank, log-prob) of `targets` under `weight` [columns, d] (+ `bias`), from hidden states [N, d].

    `weight` keeps the model's dtype: half-precision operands multiply into float32 (the float32 head);
    `round_to` (bfloat16/float16) rounds logits to the model's dtype first (`head_dtype: model`).
    """

    def __init__(
        self,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        vocab_size: int,
        ties: TieRule,
        round_to: torch.dtype | None = None,
        blocks: Blocks | None = None,
        splits: int | None = None,
    ) -> None:
        if ties not in TIE_RULES:
            raise ValueError(f"rank convention must be one of {TIE_RULES}, got {ties!r}")
        if weight.device.type != "cuda" and not INTERPRETED:
            raise RuntimeError(
                f"the fused rank kernel runs on CUDA devices (the head is on {weight.device}); "
                "set `extraction.kernel: chunked` (or `auto`) for this device"
            )
        if vocab_size > weight.shape[0]:
            raise ValueError(f"vocab_size {vocab_size} exceeds the {weight.shape[0]} output columns")
        self.weight = weight.detach().contiguous()
        self.bias = None if bias is None else bias.detach().float().contiguous()
        self.vocab_size, self.ties, self.round_to = vocab_size, ties, round_to
        self.blocks = blocks or default_blocks(self.weight.dtype, vocab_size)
        self.splits = splits

    def __call__(self, hidden: torch.Tensor, targets: torch.Tensor) -> TokenScores:
        """Every per-token field (rank int64 >= 1, the rest float32) per row; the target's logit must be finite."""
        w = self.weight
        h = hidden.to(w.device)
        if h.dtype != w.dtype:  # mixed operands: both in float32 (as the chunked path's float32 copy)
            w, h = w.float(), h.float()
        h = h.contiguous()
        n, d = h.shape
        targets = targets.to(w.device, torch.int32).contiguous()
        b = self.blocks
        # float32 operands in IEEE float32; under the interpreter, whose dot does not convert bfloat16 (stored as
        # uint16), half-precision operands too: their products are exact in float32 either way
        ieee = w.dtype == torch.float32 or INTERPRETED
        bias = self.bias if self.bias is not None else w  # any pointer: HAS_BIAS is off
        zt = torch.empty(n, dtype=torch.float32, device=w.device)
        row_blocks = triton.cdiv(n, b.m)
        flags = dict(BLOCK_M=b.m, BLOCK_N=b.n, BLOCK_K=b.k, IEEE=ieee, HAS_BIAS=self.bias is not None,
                     ROUND=_ROUND[self.round_to])  # fmt: skip
        _target_logits[(row_blocks,)](h, w, bias, targets, zt, n, d, h.stride(0), w.stride(0), **flags)
        tiles = triton.cdiv(self.vocab_size, b.n)
        splits = min(self.splits or default_splits(row_blocks, tiles, w.device), tiles)
        per_split = triton.cdiv(tiles, splits)
        splits = triton.cdiv(tiles, per_split)
        run_max = torch.empty((splits, n), dtype=torch.float32, device=w.device)
        run_sum = torch.empty_like(run_max)
        count = torch.empty((splits, n), dtype=torch.int32, device=w.device)
        run_above, run_shift = torch.empty_like(run_max), torch.empty_like(run_max)
        _rank_partials[(row_blocks, splits)](
            h, w, bias, targets, zt, run_max, run_sum, count, run_above, run_shift, n, d, self.vocab_size, per_split,
            h.stride(0), w.stride(0), GREATER=self.ties == "gt", **flags,
        )  # fmt: skip
        return _combine(zt, run_max, run_sum, count, run_above, run_shift)


def _combine(zt: torch.Tensor, run_max: torch.Tensor, run_sum: torch.Tensor, count: torch.Tensor,
             run_above: torch.Tensor, run_shift: torch.Tensor) -> TokenScores:  # fmt: skip
    """The column splits' partial sums [splits, N], each relative to its own max, as one row's fields."""
    top = run_max.max(dim=0).values
    scale = torch.exp(run_max - top)  # a split of padding only (max -inf) weighs 0
    total = (run_sum * scale).sum(dim=0)
    lse = top + torch.log(total)
    moved = torch.where(run_max == float("-inf"), 0.0, run_max - top) * run_sum
    shift = (scale * (run_shift + moved)).sum(dim=0)
    rank = count.sum(dim=0, dtype=torch.int64) + 1
    mass_above = ((run_above * scale).sum(dim=0) / total).clamp(0.0, 1.0)
    entropy = (torch.log(total) - shift / total).clamp_min(0.0)
    return TokenScores(rank, zt - lse, mass_above, top - lse, entropy)
