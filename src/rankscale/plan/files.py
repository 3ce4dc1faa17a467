"""Every file key of a configuration: what each keyed intermediate's content depends on, hashed into its name.

rankscale.layout says where files live; this says what their keys mean, from the configuration and its plan
(the corpus's definition, the tokenizer and tokenization, the model's identity, the summary settings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rankscale.canon import KEY_CHARS, short_hash
from rankscale.formats import CORPUS_FORMAT, RANK_FORMAT
from rankscale.layout import Layout, run_name
from rankscale.plan.keys import corpus_meaning, tokenizer_meaning
from rankscale.plan.models import Plans
from rankscale.plan.settings import summary_settings, training_params
from rankscale.plan.types import ModelPlan


def corpus_spec(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """What a corpus depends on: its entry less the settings later steps apply (so no needless rerun; a local
    file by its content, not its path), and the corpus format version (a bump recomputes the corpora and all
    made from them). The corpus rule's params."""
    return CORPUS_FORMAT.params(corpus_meaning(config["datasets"][dataset]))


def tokenize_source(plans: Mapping[str, ModelPlan], tok: str) -> dict[str, Any]:
    """What tokenizer key `tok` means (a local tokenizer by its content), with the rank format: the tokenize rule's
    `source` params (where it loads from is a derived param, `tokenizer_params`)."""
    return RANK_FORMAT.params(tokenizer_meaning(plans, tok))


def _key(name: str, meaning: Any) -> str:
    return f"{name}-{short_hash(meaning, KEY_CHARS)}"


def layout(
    config: Mapping[str, Any], plans: Plans, config_files: Sequence[str | Path] = (),
    default_config: str | Path = "config/config.yaml", overrides: Mapping[str, Any] | None = None,
) -> Layout:  # fmt: skip
    """Every file key of a validated configuration and its plan (`overrides`: the command line's `--config`)."""
    datasets = sorted(config["datasets"])
    corpus_keys = {d: _key(d, corpus_spec(config, d)) for d in datasets}
    special = config["tokenization"]["add_special_tokens"]
    toks = dict.fromkeys(plan.tokenizer_key for plan in plans.values())
    sources = {tok: tokenize_source(plans, tok) for tok in toks}
    token_keys = {
        (tok, d): _key(d, {"corpus": corpus_keys[d], "source": sources[tok], "special": special})
        for tok in toks
        for d in datasets
    }
    rank_keys, summary_keys = {}, {}
    settings = summary_settings(config)
    for name, plan in plans.items():
        for d in datasets:
            tokens = f"{plan.tokenizer_key}/{token_keys[(plan.tokenizer_key, d)]}"
            meaning = {"tokens": tokens, "identity": plan.identity(d).params()}
            if plan.ladder:  # its weights are the workflow's own output: what they were trained with is their identity
                meaning["training"] = {**training_params(config, plan), "stop_at": plan.checkpoint}
            rank_keys[(name, d)] = _key(d, meaning)
            summary_keys[(name, d)] = _key(
                d, {"ranks": f"{name}/{rank_keys[(name, d)]}", "settings": settings, "model": plan.info()}
            )
    return Layout(
        run=run_name(config, config_files, default_config, overrides),
        corpus_keys=corpus_keys,
        token_keys=token_keys,
        rank_keys=rank_keys,
        summary_keys=summary_keys,
        tokenizers={name: plan.tokenizer_key for name, plan in plans.items()},
        ladder=plans.ladder,
    )
