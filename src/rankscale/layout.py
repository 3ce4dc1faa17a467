"""Where every file lives: intermediates keyed by what they mean, each configuration's outputs in its own directory.

Two configurations in one clone must never overwrite each other's files, and switching between them must
recompute nothing. So:

- a corpus, a token file, a rank array and a summary each sit at `<name>-<key>`, the key a hash of everything
  its content depends on (the dataset's definition, the tokenizer and tokenization, the model's identity, the
  summary settings and model facts: `rankscale.plan.files` computes them). Two configurations that define
  `humaneval` differently get two corpora; two that define it alike share one. The names stay in the path for a
  reader; the key makes it unique.
- tables, figures, the report, the manifest and the tables' and figures' logs and benchmarks go under
  `results/<run>/`, the run named by the configuration's `run:` or, failing that, its file's name
  (`default` for config/config.yaml).

Downloads (`resources/downloads/<repo>@<revision>`), converted GGUF models (`resources/gguf/<digest>`) and the
ladder (`resources/ladder/<key>`) are keyed by meaning where they are made.

This module is the one place a path under results/, resources/ or logs/ is written (tests/test_layout_paths.py
holds every other file to that): `Layout`'s patterns are the rules' `output:`, `log:` and `benchmark:` wildcard
patterns, and its methods fill them in. It imports no other part of the package but two leaves, so that any
module can read its paths here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rankscale.canon import keyed_name, short_hash
from rankscale.errors import ConfigError

RESULTS, RESOURCES, LOGS = "results", "resources", "logs"
DEFAULT_RUN = "default"  # the run of config/config.yaml
DOWNLOADS = f"{RESOURCES}/downloads"  # <key>.json: what a hub download fetched (rankscale.downloads)
GGUF_MODELS = f"{RESOURCES}/gguf"  # <digest>/: a GGUF file converted to a model directory (rankscale.gguf)
LADDERS = f"{RESOURCES}/ladder"  # <key>/: one ladder's text, tokenizer, states and models (rankscale.plan.ladder_dir)
NO_LADDER = f"{LADDERS}/none"  # the ladder directory of a configuration without a ladder


def fill(pattern: str, **values: Any) -> str:
    """`pattern` with the wildcards `values` names filled in; the others stay, for Snakemake to match."""
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m[1]]) if m[1] in values else m[0], pattern)


@dataclass(frozen=True)
class Ladder:
    """The files of one ladder, `resources/ladder/<key>/`, and where its jobs log."""

    dir: str

    @property
    def corpus(self) -> str:
        """The training text, kept free of every evaluated dataset's."""
        return f"{self.dir}/train_corpus.jsonl"

    @property
    def tokenizer(self) -> str:
        return f"{self.dir}/tokenizer"

    @property
    def counts(self) -> str:
        """The training text's length in tokens (seq_len is checked against it at plan time)."""
        return f"{self.dir}/train_tokens.json"

    @property
    def tokens(self) -> str:
        """The training text tokenized once, for every training job."""
        return f"{self.dir}/train_tokens.npz"

    @property
    def states(self) -> str:
        """Training states, saved on a run's way to its checkpoints (rankscale.training)."""
        return f"{self.dir}/states"

    def model(self, model: str = "{model}") -> str:
        return f"{self.dir}/models/{model}"

    @property
    def logs(self) -> str:
        """One ladder's logs and benchmarks beside another's."""
        return f"{LOGS}/ladder/{Path(self.dir).name}"

    def log(self, step: str) -> str:
        return f"{self.logs}/{step}.log"

    def benchmark(self, model: str = "{model}") -> str:
        return f"{self.logs}/benchmarks/{model}.tsv"


@dataclass(frozen=True)
class RunFiles:
    """The files of one configuration's own directory, `results/<run>/`, or of a copy of one (a reader's, a
    test's): `Layout` spells its run's paths through it, and the report's landing page reads any run's here."""

    dir: str | Path

    @property
    def tables(self) -> str:
        return f"{self.dir}/tables"

    def table(self, table: str = "{table}") -> str:
        return f"{self.tables}/{table}.csv"

    @property
    def manifest(self) -> str:
        """What produced the run (rankscale.manifest), written when it succeeds."""
        return f"{self.dir}/manifest.json"

    @property
    def landing(self) -> str:
        """The report's landing page (rankscale.report.landing), written with the manifest."""
        return f"{self.dir}/report/landing.rst"


@dataclass(frozen=True)
class Layout:
    """The paths of one configuration's files. Build it with `rankscale.plan.layout()`; every rule and tool reads
    paths here."""

    # intermediates every configuration shares, keyed by meaning: `<dataset>-<key>` stems the rules' wildcards match
    CORPUS: ClassVar[str] = f"{RESULTS}/corpus/{{corpus}}"  # .jsonl: the documents; .json: their sidecar
    TOKENS: ClassVar[str] = f"{RESULTS}/tokens/{{tok}}/{{tokens}}"  # .npz: the token ids; .npz.json: their sidecar
    TOKEN_KINDS: ClassVar[str] = f"{RESULTS}/token_kinds/{{tok}}"  # .npz: each token's kind and bytes; .npz.json
    RANKS: ClassVar[str] = f"{RESULTS}/ranks/{{model}}/{{ranks}}"  # .npz: ranks and log-probs; .json: their sidecar
    SUMMARY: ClassVar[str] = f"{RESULTS}/summary/{{model}}/{{summary}}"  # .json, .hist.npz, .boot.npz
    BENCHMARKS: ClassVar[str] = f"{RESULTS}/benchmarks"  # of the jobs that make intermediates
    EXTRACT_BENCHMARK: ClassVar[str] = f"{BENCHMARKS}/extract/{{model}}/{{ranks}}.tsv"
    SUMMARIZE_BENCHMARK: ClassVar[str] = f"{BENCHMARKS}/summarize/{{model}}/{{summary}}.tsv"
    GGUF_BENCHMARK: ClassVar[str] = f"{BENCHMARKS}/gguf_convert/{{digest}}.tsv"
    DOWNLOAD: ClassVar[str] = f"{DOWNLOADS}/{{download}}.json"
    GGUF: ClassVar[str] = f"{GGUF_MODELS}/{{digest}}"
    # this configuration's own outputs
    RUN: ClassVar[str] = f"{RESULTS}/{{run}}"
    MANIFEST: ClassVar[str] = RunFiles(RUN).manifest

    run: str
    corpus_keys: Mapping[str, str]  # dataset -> its corpus file's stem
    token_keys: Mapping[tuple[str, str], str]  # (tokenizer key, dataset) -> its token file's stem
    rank_keys: Mapping[tuple[str, str], str]  # (model, dataset) -> its rank array's stem
    summary_keys: Mapping[tuple[str, str], str]  # (model, dataset) -> its summary's stem
    tokenizers: Mapping[str, str]  # model -> tokenizer key
    ladder: Ladder  # the ladder's files (a configuration without a ladder: Ladder(NO_LADDER))

    def corpus(self, dataset: str, ext: str = "jsonl") -> str:
        """`jsonl`: the documents; `json`: their sidecar."""
        return f"{fill(self.CORPUS, corpus=self.corpus_keys[dataset])}.{ext}"

    def tokens(self, tok: str, dataset: str, suffix: str = "npz") -> str:
        """`npz`: the token ids; `npz.json`: their sidecar."""
        return f"{fill(self.TOKENS, tok=tok, tokens=self.token_keys[(tok, dataset)])}.{suffix}"

    def model_tokens(self, model: str, dataset: str, suffix: str = "npz") -> str:
        return self.tokens(self.tokenizers[model], dataset, suffix)

    @classmethod
    def tokens_dir(cls, tok: str) -> str:
        """Every token file of tokenizer `tok`."""
        return fill(cls.TOKENS, tok=tok).rsplit("/", 1)[0]

    @classmethod
    def token_kinds(cls, tok: str, suffix: str = "npz") -> str:
        """`npz`: what each token id of tokenizer `tok` is; `npz.json`: its sidecar."""
        return f"{fill(cls.TOKEN_KINDS, tok=tok)}.{suffix}"

    def ranks(self, model: str, dataset: str, ext: str = "npz") -> str:
        """`npz`: the ranks and log-probs; `json`: their sidecar."""
        return f"{fill(self.RANKS, model=model, ranks=self.rank_keys[(model, dataset)])}.{ext}"

    @classmethod
    def ranks_dir(cls, model: str) -> str:
        """Every rank array of `model`."""
        return fill(cls.RANKS, model=model).rsplit("/", 1)[0]

    def summary(self, model: str, dataset: str, suffix: str = "json") -> str:
        """`json`, `hist.npz` or `boot.npz`."""
        return f"{fill(self.SUMMARY, model=model, summary=self.summary_keys[(model, dataset)])}.{suffix}"

    def extract_benchmark(self, model: str, dataset: str) -> str:
        return fill(self.EXTRACT_BENCHMARK, model=model, ranks=self.rank_keys[(model, dataset)])

    def summarize_benchmark(self, model: str, dataset: str) -> str:
        return fill(self.SUMMARIZE_BENCHMARK, model=model, summary=self.summary_keys[(model, dataset)])

    @classmethod
    def gguf_benchmark(cls, digest: str) -> str:
        return fill(cls.GGUF_BENCHMARK, digest=digest)

    @classmethod
    def download(cls, key: str) -> str:
        """The record of a hub download: what it fetched, and the commit it got."""
        return fill(cls.DOWNLOAD, download=key)

    @classmethod
    def gguf_model(cls, digest: str) -> str:
        """The model directory a GGUF file is converted into."""
        return fill(cls.GGUF, digest=digest)

    @staticmethod
    def log(step: str, stem: str) -> str:
        """The log of a job of rule `step` that makes an intermediate (`stem`: the wildcards of its file)."""
        return f"{LOGS}/{step}/{stem}.log"

    @staticmethod
    def dataset_of(stem: str) -> str:
        """The dataset a file stem (`<dataset>-<key>`) belongs to."""
        return keyed_name(stem)

    @property
    def out(self) -> str:
        """This configuration's own directory: tables/, figures/, logs/, benchmarks/, manifest.json, report.html."""
        return fill(self.RUN, run=self.run)

    @property
    def manifest(self) -> str:
        return fill(self.MANIFEST, run=self.run)

    @property
    def files(self) -> RunFiles:
        return RunFiles(self.out)

    def table(self, table: str = "{table}") -> str:
        return self.files.table(table)

    @property
    def landing(self) -> str:
        return self.files.landing

    def table_page(self, table: str = "{table}") -> str:
        """The table as the report shows it (rankscale.report.pages)."""
        return f"{self.out}/report/tables/{table}.html"

    def figure(self, figure: str = "{figure}", ext: str = "{ext}") -> str:
        return f"{self.out}/figures/{figure}.{ext}"

    def trajectories(self, family: str, dataset: str, ext: str) -> str:
        """A family x dataset's token trajectories (rankscale.trajectories): `npz` the counts, `json` their sidecar.
        Under the run: which models a family holds is this configuration's."""
        return f"{self.out}/trajectories/{family}/{dataset}.{ext}"

    def run_log(self, kind: str, name: str) -> str:
        """The log of the job that made table or figure `name` (`kind`: tables, figures)."""
        return f"{self.out}/logs/{kind}/{name}.log"

    def run_benchmark(self, kind: str, name: str) -> str:
        """The benchmark of the job that made table or figure `name` (`kind`: tables, figures)."""
        return f"{self.out}/benchmarks/{kind}/{name}.tsv"


INTERMEDIATES = (Layout.CORPUS, Layout.TOKENS, Layout.TOKEN_KINDS, Layout.RANKS, Layout.SUMMARY, Layout.BENCHMARKS)
RESERVED_RUNS = tuple(dict.fromkeys(Path(p).parts[1] for p in INTERMEDIATES))  # a run may not be called so


def run_name(
    config: Mapping[str, Any],
    config_files: Sequence[str | Path],
    default_config: str | Path,
    overrides: Mapping[str, Any] | None = None,
) -> str:
    """The configuration's `run:`, else the stem of the last config file given besides the default, else `default`;
    with command-line `--config` overrides that do not name the run, that name + `-` + the overrides' digest.

    Not inherited from config/config.yaml: an override file laid over the default is a different study, and
    writing into results/default/ would overwrite the default's tables. Overrides likewise: `--config
    analysis=...` is another configuration, so its tables go to `results/default-<digest>/`, the same directory
    for the same overrides, and the run without them still finds its own tables in place (0 jobs)."""
    overrides = overrides or {}
    name = config.get("run")
    given = [Path(f) for f in config_files if Path(f).resolve() != Path(default_config).resolve()]
    if name is None:
        name = given[-1].stem if given else DEFAULT_RUN
    if overrides and "run" not in overrides:
        name = f"{name}-{short_hash(dict(overrides))}"
    if name in RESERVED_RUNS:
        where = "run" if config.get("run") is not None or not given else f"the config file's name ({given[-1]})"
        raise ConfigError(f"{where}: {name!r} is a directory of intermediate files under results/; set `run:` "
                          f"to another name (not one of {', '.join(RESERVED_RUNS)})")  # fmt: skip
    return name
