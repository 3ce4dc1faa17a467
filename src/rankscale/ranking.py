"""Rank of the ground-truth token among the real vocabulary, its log-probability, and what calibration reads.

docs/science.md, "Rank": R = #{v : logit(v) >= logit(t)} (ties count against the model, the paper's
definition) or, as an option, #{v : logit(v) > logit(t)} + 1 (the authors' released code).
Only the first `vocab_size` columns are tokens; padded output columns are ignored.
Everything is compared and normalised in float32 whatever the model's dtype.

The same pass gives docs/science.md's calibration fields ("Calibration and nucleus coverage"): the mass of
the tokens ranked at or above the truth (under the same tie rule), the top-1 log-probability and the
entropy, from the one exponential the log-softmax needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

TieRule = Literal["ge", "gt"]
TIE_RULES: tuple[str, ...] = ("ge", "gt")


@dataclass(frozen=True)
class TokenScores:
    """Per scored row, on the device that computed them."""

    rank: torch.Tensor  # int64 >= 1
    logprob: torch.Tensor  # float32, log p(target)
    mass_above: torch.Tensor  # float32, sum of p(v) over v != t ranked at or above t (the tie rule's competitors)
    top1_logprob: torch.Tensor  # float32, log max_v p(v)
    entropy: torch.Tensor  # float32, -sum_v p(v) log p(v), nats

    def fields(self) -> tuple[torch.Tensor, ...]:
        return (self.rank, self.logprob, self.mass_above, self.top1_logprob, self.entropy)

    @classmethod
    def cat(cls, parts: list[TokenScores]) -> TokenScores:
        return cls(*(torch.cat(column) for column in zip(*(p.fields() for p in parts), strict=True)))

    def to(self, device: torch.device | str) -> TokenScores:
        return TokenScores(*(f.to(device) for f in self.fields()))


def rank_and_logprob(
    logits: torch.Tensor, targets: torch.Tensor, vocab_size: int, ties: TieRule, check_values: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rank int64 >= 1, target log-prob float32) for rows of `logits` [N, V_out]: `score_tokens`' first two."""
    scores = score_tokens(logits, targets, vocab_size, ties, check_values)
    return scores.rank, scores.logprob


def score_tokens(
    logits: torch.Tensor, targets: torch.Tensor, vocab_size: int, ties: TieRule, check_values: bool = True
) -> TokenScores:
    """Every per-token field for rows of `logits` [N, V_out].

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
    above = real >= target_logit if ties == "ge" else real > target_logit
    rank = above.sum(dim=1) + (0 if ties == "ge" else 1)
    # torch.logsumexp's own steps (ATen's logsumexp: max, exp of the shifted logits, sum, log, add), so the
    # log-prob keeps its bits; the shifted exponentials then serve the other sums
    top = real.amax(dim=1, keepdim=True)
    top = top.masked_fill(top.abs() == float("inf"), 0.0)
    shifted = real - top
    weights = shifted.exp()
    total = weights.sum(dim=1)
    lse = total.log().add(top.squeeze(1))
    logprob = target_logit.squeeze(1) - lse
    top1_logprob = top.squeeze(1) - lse
    # H = log S - sum_v e_v (z_v - m) / S with e_v = exp(z_v - m), S = sum_v e_v: no cancellation against lse;
    # the row-wise dot products as one batched product, which writes no [N, V] temporary
    shifted.clamp_(min=torch.finfo(torch.float32).min)  # a logit of -inf weighs 0: 0 * -inf would be NaN
    spread = torch.bmm(weights.unsqueeze(1), shifted.unsqueeze(2)).reshape(-1)
    del shifted
    entropy = (total.log() - spread / total).clamp_min(0.0)
    if ties == "ge":  # the competitors: the target's own column is no competitor (exact, not a subtraction)
        above.scatter_(1, targets.long().unsqueeze(1), False)
    mass_above = (weights.masked_fill_(above.logical_not_(), 0.0).sum(dim=1) / total).clamp(0.0, 1.0)  # in place
    return TokenScores(rank, logprob, mass_above, top1_logprob, entropy)
