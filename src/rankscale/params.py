"""Model size S: non-embedding parameters (docs/science.md).

S = all parameters − token embedding − output head (when untied) − learned position
embeddings. `PreTrainedModel.num_parameters(exclude_embeddings=True)` keeps an untied
head, which is wrong for Pythia and large Qwen2.5, so we count ourselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ParamCount:
    """Parameter breakdown of a causal LM."""

    total: int
    token_embedding: int
    output_head: int
    position_embedding: int

    @property
    def non_embedding(self) -> int:
        return self.total - self.token_embedding - self.output_head - self.position_embedding


def count_parameters(model: nn.Module) -> ParamCount:
    """Break down a model's unique parameters; works on meta-device models (no weights)."""
    unique: dict[int, nn.Parameter] = {id(p): p for p in model.parameters()}
    total = sum(p.numel() for p in unique.values())
    token_emb = model.get_input_embeddings()  # type: ignore[operator]
    token_ids = {id(p) for p in token_emb.parameters()}
    head = model.get_output_embeddings()  # type: ignore[operator]
    head_params = [p for p in head.parameters() if id(p) not in token_ids] if head is not None else []
    position = 0
    for module in model.modules():
        if isinstance(module, nn.Embedding) and module is not token_emb:
            position += sum(p.numel() for p in module.parameters() if id(p) not in token_ids)
    return ParamCount(
        total=total,
        token_embedding=sum(p.numel() for p in token_emb.parameters()),
        output_head=sum(p.numel() for p in head_params),
        position_embedding=position,
    )


def non_embedding_from_config(config: object) -> ParamCount:
    """Count parameters of a transformers config by instantiating it on the meta device."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return count_parameters(model)
