"""The references extraction is compared with, on the same batches `extract_ranks` forms.

- floor: `model(input_ids, attention_mask).logits`, the bare forward pass;
- naive: full logits, float32 log-softmax over the real vocabulary, argsort, the target's position.
Batches: windows sorted by length (longest first, stable), padded, cut like extract_ranks' own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from workloads import Workload

NEAR_TIE = 1e-5  # |log p difference| under which two tokens count as tied


@dataclass
class Batch:
    """One padded batch of windows as extract_ranks forms it, with its scored rows and targets."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    rows: torch.Tensor  # flat (window * width + position) index of each scored position
    targets: torch.Tensor
    out: np.ndarray  # where each scored token goes in extract_ranks' output order


def make_batches(work: Workload, batch_size: int, device: torch.device) -> list[Batch]:
    """Windows sorted by length (longest first, stable) and cut into batches, like extract_ranks."""
    w = work.windows
    out_offset = np.concatenate([[0], np.cumsum(w.n_scored)])
    order = np.argsort(-(w.end - w.start), kind="stable")
    batches = []
    for b in range(0, len(order), batch_size):
        batch = order[b : b + batch_size]
        width = int((w.end[batch] - w.start[batch]).max())
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        rows, targets, outs = [], [], []
        for i, k in enumerate(batch.tolist()):
            s, e, f = int(w.start[k]), int(w.end[k]), int(w.score_from[k])
            tokens = work.corpus.doc(int(w.doc[k]))
            ids[i, : e - s] = torch.from_numpy(tokens[s:e].astype(np.int64))
            mask[i, : e - s] = 1
            rows.append(i * width + np.arange(f - 1 - s, e - 1 - s))
            targets.append(tokens[f:e].astype(np.int64))
            outs.append(np.arange(out_offset[k], out_offset[k + 1]))
        batches.append(
            Batch(
                ids.to(device),
                mask.to(device),
                torch.from_numpy(np.concatenate(rows)).to(device),
                torch.from_numpy(np.concatenate(targets)).to(device),
                np.concatenate(outs),
            )
        )
    return batches


def floor(model: Any, batches: list[Batch]) -> None:
    """The bare forward pass, full logits for every batch."""
    with torch.inference_mode():
        for b in batches:
            model(input_ids=b.input_ids, attention_mask=b.attention_mask).logits  # noqa: B018


def _log_probs(model: Any, b: Batch, vocab: int) -> torch.Tensor:
    logits = model(input_ids=b.input_ids, attention_mask=b.attention_mask).logits
    return torch.log_softmax(logits[..., :vocab].float(), dim=-1).reshape(-1, vocab)


def naive(model: Any, batches: list[Batch], vocab: int, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Full logits, float32 log_softmax over the real vocabulary, argsort descending, target's position."""
    rank = np.zeros(total, dtype=np.int64)
    logprob = np.zeros(total, dtype=np.float32)
    with torch.inference_mode():
        for b in batches:
            lp = _log_probs(model, b, vocab)
            order = torch.argsort(lp, dim=-1, descending=True)  # every position, as a naive scorer would
            wanted = torch.zeros(order.shape[0], dtype=torch.long, device=order.device)
            wanted[b.rows] = b.targets  # unscored positions look for token 0; discarded
            hit = (order == wanted[:, None]).nonzero()  # one per row, in row order
            del order
            rank[b.out] = (hit[b.rows, 1] + 1).cpu().numpy()
            logprob[b.out] = lp[b.rows, b.targets].cpu().numpy()
    return rank, logprob


def near_ties(model: Any, batches: list[Batch], vocab: int, mismatched: np.ndarray, ranks: np.ndarray) -> int:
    """How many mismatched tokens have `ranks` inside the naive run's near-tie band of their target.

    Band: [#{lp > lp_t + NEAR_TIE} + 1, #{lp >= lp_t - NEAR_TIE}] of the float32 log-probs.
    """
    explained = 0
    with torch.inference_mode():
        for b in batches:
            hit = np.flatnonzero(np.isin(b.out, mismatched))
            if not hit.size:
                continue
            index = torch.from_numpy(hit).to(b.rows.device)
            rows = _log_probs(model, b, vocab)[b.rows[index]]
            t = rows.gather(1, b.targets[index][:, None])
            lo, hi = (rows > t + NEAR_TIE).sum(1) + 1, (rows >= t - NEAR_TIE).sum(1)
            r = torch.from_numpy(ranks[b.out[hit]].astype(np.int64)).to(lo.device)
            explained += int(((r >= lo) & (r <= hi)).sum())
    return explained
