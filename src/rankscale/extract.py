"""Rank extraction: every scored token's rank among the real vocabulary and its log-prob.

The backbone runs once per batch of windows; hidden states of scored positions go through
the output head in chunks of rows, each chunk reduced at once to (rank, log-prob), so the
full batch x length x |V| logits are never held in float32.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import torch

from rankscale.rankfile import RankArrays
from rankscale.ranking import TieRule, rank_and_logprob
from rankscale.tokens import TokenizedCorpus
from rankscale.windows import Windows

log = logging.getLogger(__name__)


def _head_check(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits: torch.Tensor, rows: torch.Tensor
) -> None:
    """Refuse models whose logits are not head(last hidden state) (e.g. soft-capped logits)."""
    full = model(input_ids=input_ids, attention_mask=attention_mask).logits
    expected = full.reshape(-1, full.shape[-1])[rows].float()
    if not torch.allclose(expected, logits.float(), rtol=1e-3, atol=1e-3):
        diff = (expected - logits.float()).abs().max().item()
        raise RuntimeError(
            f"the model's logits differ from output_head(last hidden state) by {diff:.3g}; "
            "this architecture post-processes logits and is not supported by chunked extraction"
        )


def extract_ranks(
    model: Any,
    corpus: TokenizedCorpus,
    windows: Windows,
    vocab_size: int,
    ties: TieRule = "ge",
    batch_size: int = 8,
    head_chunk: int = 4096,
    progress_every_s: float = 10.0,
) -> RankArrays:
    """Score every target of every window; batches are formed from windows sorted by length."""
    backbone = model.base_model
    head = model.get_output_embeddings()
    device = next(model.parameters()).device
    n_scored = windows.n_scored
    out_offset = np.concatenate([[0], np.cumsum(n_scored)])
    total = int(out_offset[-1])
    rank = np.zeros(total, dtype=np.uint32)
    logprob = np.zeros(total, dtype=np.float32)
    doc = np.zeros(total, dtype=np.uint32)
    pos = np.zeros(total, dtype=np.uint32)
    target = np.zeros(total, dtype=np.uint32)
    order = np.argsort(-(windows.end - windows.start), kind="stable")
    started = last = time.perf_counter()
    done = 0
    checked = False
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            batch = order[b : b + batch_size]
            lengths = (windows.end[batch] - windows.start[batch]).tolist()
            width = max(lengths)
            input_ids = torch.zeros((len(batch), width), dtype=torch.long)
            attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
            rows: list[np.ndarray] = []
            targets: list[np.ndarray] = []
            for i, w in enumerate(batch.tolist()):
                d, s, e, f = int(windows.doc[w]), int(windows.start[w]), int(windows.end[w]), int(windows.score_from[w])
                tokens = corpus.doc(d)
                input_ids[i, : e - s] = torch.from_numpy(tokens[s:e].astype(np.int64))
                attention_mask[i, : e - s] = 1
                # hidden state at input position p predicts token p + 1
                rows.append(i * width + np.arange(f - 1 - s, e - 1 - s))
                targets.append(tokens[f:e])
                o = out_offset[w]
                doc[o : o + e - f] = d
                pos[o : o + e - f] = np.arange(f, e)
                target[o : o + e - f] = tokens[f:e]
            input_ids = input_ids.to(device)
            attention_mask = attention_mask.to(device)
            hidden = backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            hidden = hidden.reshape(-1, hidden.shape[-1])
            row_index = torch.from_numpy(np.concatenate(rows)).to(device)
            tgt = torch.from_numpy(np.concatenate(targets).astype(np.int64)).to(device)
            ranks_b, logp_b = [], []
            for c in range(0, len(row_index), head_chunk):
                idx = row_index[c : c + head_chunk]
                logits = head(hidden[idx])
                if not checked:
                    _head_check(model, input_ids, attention_mask, logits, idx)
                    checked = True
                r, lp = rank_and_logprob(logits, tgt[c : c + head_chunk], vocab_size, ties)
                ranks_b.append(r.cpu())
                logp_b.append(lp.cpu())
            r_all = torch.cat(ranks_b).numpy()
            lp_all = torch.cat(logp_b).numpy()
            k = 0
            for w in batch.tolist():
                n = int(n_scored[w])
                o = out_offset[w]
                rank[o : o + n] = r_all[k : k + n]
                logprob[o : o + n] = lp_all[k : k + n]
                k += n
            done += k
            now = time.perf_counter()
            if now - last >= progress_every_s:
                log.info("scored %d/%d tokens (%.0f tokens/s)", done, total, done / (now - started))
                last = now
    elapsed = time.perf_counter() - started
    log.info("scored %d tokens in %.1f s (%.0f tokens/s)", total, elapsed, total / max(elapsed, 1e-9))
    return RankArrays(rank=rank, logprob=logprob, doc=doc, pos=pos, target=target)
