"""Rank of the ground-truth token among the real vocabulary, and its log-probability.

docs/science.md, "Rank": R = #{v : logit(v) >= logit(t)} (ties count against the model, the paper's
definition) or, as an option, #{v : logit(v) > logit(t)} + 1 (the authors' released code).
Only the first `vocab_size` columns are tokens; padded output columns are ignored.
Everything is compared and normalised in float32 whatever the model's dtype.
"""

from __future__ import annotations

from typing import Literal

import torch

TieRule = Literal["ge", "gt"]
TIE_RULES: tuple[str, ...] = ("ge", "gt")


def rank_and_logprob(
    logits: torch.Tensor, targets: torch.Tensor, vocab_size: int, ties: TieRule, check_values: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (rank int64 >= 1, target log-prob float32) for rows of `logits` [N, V_out].

    `check_values=False` leaves out the checks that read values (targets in the vocabulary, a finite target
    logit), which make a GPU wait: for a caller that checks its targets on the host and its results later.
    """
    if ties not in TIE_RULES:
        raise ValueError(f"rank convention must be one of {TIE_RULES}, got {ties!r}")
    if logits.ndim != 2 or targets.ndim != 1 or logits.shape[0] != targets.shape[0]:
        raise ValueError(
            f"expected logits [N, V] and targets [N], got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    if vocab_size > logits.shape[1]:
        raise ValueError(f"vocab_size {vocab_size} exceeds the {logits.shape[1]} output columns")
    if check_values and targets.numel() and int(targets.max()) >= vocab_size:
        raise ValueError(f"target id {int(targets.max())} is outside the vocabulary of {vocab_size} tokens")
    real = logits[:, :vocab_size].float()
    target_logit = real.gather(1, targets.long().unsqueeze(1))
    if check_values and not torch.isfinite(target_logit).all():
        raise FloatingPointError("non-finite logit for a target token")
    if ties == "ge":
        rank = (real >= target_logit).sum(dim=1)
    else:
        rank = (real > target_logit).sum(dim=1) + 1
    logprob = target_logit.squeeze(1) - torch.logsumexp(real, dim=1)
    return rank, logprob
