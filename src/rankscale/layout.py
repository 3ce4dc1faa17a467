"""Where every file lives: intermediates keyed by what they mean, each configuration's outputs in its own directory.

Two configurations in one clone must never overwrite each other's files, and switching between them must
recompute nothing. So:

- a corpus, a token file, a rank array and a summary each sit at `<name>-<key>`, the key a hash of everything
  its content depends on (the dataset's definition, the tokenizer and tokenization, the model's identity, the
  summary settings and model facts). Two configurations that define `humaneval` differently get two corpora;
  two that define it alike share one. The names stay in the path for a reader; the key makes it unique.
- tables, figures, the report, the manifest and the tables' and figures' logs and benchmarks go under
  `results/<run>/`, the run named by the configuration's `run:` or, failing that, its file's name
  (`default` for config/config.yaml).

Downloads (`resources/downloads/<repo>@<revision>`), converted GGUF models (`resources/gguf/<digest>`) and the
ladder (`resources/ladder/<key>`) are keyed by meaning where they are made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankscale.canon import KEY_CHARS, keyed_name, short_hash
from rankscale.config import ConfigError
from rankscale.formats import CORPUS_FORMAT, RANK_FORMAT
from rankscale.plan.keys import corpus_params, tokenizer_params, tokenizer_sources
from rankscale.plan.settings import summary_settings, training_params
from rankscale.plan.types import ModelPlan

DEFAULT_RUN = "default"  # the run of config/config.yaml
KEY_PATTERN = f"[0-9a-f]{{{KEY_CHARS}}}"
# results/<name>/ already holding intermediates: a run may not be called so
RESERVED_RUNS = ("corpus", "tokens", "token_kinds", "ranks", "summary", "benchmarks")


def run_name(config: Mapping[str, Any], config_files: Sequence[str | Path], default_config: str | Path) -> str:
    """The configuration's `run:`, else the stem of the last config file given besides the default, else `default`.

    Not inherited from config/config.yaml: an override file laid over the default is a different study, and
    writing into results/default/ would overwrite the default's tables."""
    name = config.get("run")
    if name is None:
        given = [Path(f) for f in config_files if Path(f).resolve() != Path(default_config).resolve()]
        name = given[-1].stem if given else DEFAULT_RUN
    if name in RESERVED_RUNS:
        where = "run" if config.get("run") is not None else f"the config file's name ({given[-1]})"
        raise ConfigError(f"{where}: {name!r} is a directory of intermediate files under results/; set `run:` "
                          f"to another name (not one of {', '.join(RESERVED_RUNS)})")  # fmt: skip
    return name


def corpus_spec(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """What a corpus depends on: its entry less the settings later steps apply (so no needless rerun), and the
    corpus format version (a bump recomputes the corpora and all made from them). The corpus rule's params."""
    return CORPUS_FORMAT.params(corpus_params(config["datasets"][dataset]))


def tokenize_source(plans: Mapping[str, ModelPlan], tok: str) -> dict[str, Any]:
    """What tokenizer key `tok` loads, with the rank format: the tokenize rule's `source` params."""
    return RANK_FORMAT.params(tokenizer_params(tokenizer_sources(dict(plans))[tok], tok))


def _key(name: str, meaning: Any) -> str:
    return f"{name}-{short_hash(meaning, KEY_CHARS)}"


@dataclass(frozen=True)
class Layout:
    """The paths of one configuration's files. Build it with `layout()`; every rule and tool reads paths here."""

    run: str
    corpus_keys: Mapping[str, str]  # dataset -> its corpus file's stem
    token_keys: Mapping[tuple[str, str], str]  # (tokenizer key, dataset) -> its token file's stem
    rank_keys: Mapping[tuple[str, str], str]  # (model, dataset) -> its rank array's stem
    summary_keys: Mapping[tuple[str, str], str]  # (model, dataset) -> its summary's stem
    tokenizers: Mapping[str, str]  # model -> tokenizer key

    def corpus(self, dataset: str, ext: str = "jsonl") -> str:
        """`jsonl`: the documents; `json`: their sidecar."""
        return f"results/corpus/{self.corpus_keys[dataset]}.{ext}"

    def tokens(self, tok: str, dataset: str, suffix: str = "npz") -> str:
        """`npz`: the token ids; `npz.json`: their sidecar."""
        return f"results/tokens/{tok}/{self.token_keys[(tok, dataset)]}.{suffix}"

    def model_tokens(self, model: str, dataset: str, suffix: str = "npz") -> str:
        return self.tokens(self.tokenizers[model], dataset, suffix)

    def ranks(self, model: str, dataset: str, ext: str = "npz") -> str:
        """`npz`: the ranks and log-probs; `json`: their sidecar."""
        return f"results/ranks/{model}/{self.rank_keys[(model, dataset)]}.{ext}"

    def summary(self, model: str, dataset: str, suffix: str = "json") -> str:
        """`json`, `hist.npz` or `boot.npz`."""
        return f"results/summary/{model}/{self.summary_keys[(model, dataset)]}.{suffix}"

    def extract_benchmark(self, model: str, dataset: str) -> str:
        return f"results/benchmarks/extract/{model}/{self.rank_keys[(model, dataset)]}.tsv"

    def summarize_benchmark(self, model: str, dataset: str) -> str:
        return f"results/benchmarks/summarize/{model}/{self.summary_keys[(model, dataset)]}.tsv"

    @staticmethod
    def dataset_of(stem: str) -> str:
        """The dataset a file stem (`<dataset>-<key>`) belongs to."""
        return keyed_name(stem)

    @property
    def out(self) -> str:
        """This configuration's own directory: tables/, figures/, logs/, benchmarks/, manifest.json, report.html."""
        return f"results/{self.run}"


def layout(
    config: Mapping[str, Any], plans: Mapping[str, ModelPlan], config_files: Sequence[str | Path] = (),
    default_config: str | Path = "config/config.yaml",
) -> Layout:  # fmt: skip
    """Every file key of a validated configuration and its plan."""
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
        run=run_name(config, config_files, default_config),
        corpus_keys=corpus_keys,
        token_keys=token_keys,
        rank_keys=rank_keys,
        summary_keys=summary_keys,
        tokenizers={name: plan.tokenizer_key for name, plan in plans.items()},
    )
