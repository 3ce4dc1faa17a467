"""The ladder's training schedule, written once: steps, checkpoint steps, learning rates.

Plain Python (no torch, no scipy): the plan computes each checkpoint's training tokens D with it
before any job runs, and the training job follows the same schedule, so the two cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def tokens_per_step(train: Mapping[str, Any]) -> int:
    return int(train["batch_size"]) * int(train["seq_len"])


def training_steps(tokens: int, train: Mapping[str, Any]) -> int:
    """Optimizer steps until at least `tokens` training tokens have been seen."""
    return max(1, math.ceil(tokens / tokens_per_step(train)))


def tokens_seen(tokens: int, train: Mapping[str, Any]) -> int:
    """D of a model stopped after the step that reaches `tokens`: whole batches of batch_size x seq_len."""
    return training_steps(tokens, train) * tokens_per_step(train)


def peak_lr(size: Mapping[str, Any], train: Mapping[str, Any]) -> float:
    """A size's own `lr`, else ladder.train.lr, scaled as lr * sqrt(lr_d_ref / d_model) where lr_d_ref is set
    (wider models take smaller steps)."""
    if size.get("lr"):
        return float(size["lr"])
    d_ref = train["lr_d_ref"]
    return float(train["lr"] * math.sqrt(d_ref / size["d_model"])) if d_ref else float(train["lr"])


def lr_factor(step: int, steps: int, warmup_steps: int) -> float:
    """The multiple of the peak learning rate at `step` of `steps`: linear warm-up, then cosine to 10%."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, steps - warmup_steps)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))
