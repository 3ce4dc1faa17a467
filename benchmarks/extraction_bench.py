"""Extraction speed and memory against a bare forward pass, a naive ranker and lm-evaluation-harness.

All speed measurements use the same token windows: HumanEval (prompt + canonical solution,
the default dataset) tokenized by a byte-level BPE, cut by `plan_windows` into windows of
`--max-length` tokens, batched after sorting by length exactly as `extract_ranks` does.
Models are the default ladder's smallest and largest GPT-NeoX sizes, randomly initialised
with a fixed seed (speed does not depend on the weights), or the trained checkpoints of a
finished workflow run with `--ladder-root`.

Sections (`--only`, comma-separated; default all):

- floor:     `model(input_ids, attention_mask).logits` under inference_mode (the floor)
- ours:      `rankscale.extract.extract_ranks`, its time relative to the floor
- naive:     full logits, float32 log_softmax, argsort; time and rank agreement with ours
- lmeval:    lm-evaluation-harness `HFLM.loglikelihood_rolling` on the same documents,
             and per-document log-likelihood agreement for documents that fit one window
- memory:    peak RSS (CUDA: max allocated) of extraction with a 151,936-token vocabulary,
             each variant in a fresh spawned process
- aggregate: `summarize` on 10^6 synthetic tokens plus `powerlaw_table`

    python benchmarks/extraction_bench.py [--only floor,ours,naive] [--device cpu] [--dtype float32]

Results are printed as Markdown and written into benchmarks/RESULTS.md, one marked section
per measurement, so a subset run replaces only its own sections.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import multiprocessing as mp
import os
import platform
import resource
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")  # lm-eval opens a progress bar per batch; not what we measure

import numpy as np  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))  # this checkout's package, not an installed copy

from rankscale.corpus import Document, load_documents  # noqa: E402
from rankscale.extract import extract_ranks  # noqa: E402
from rankscale.ladder import SizeSpec, model_config, train_tokenizer  # noqa: E402
from rankscale.rankfile import RankArrays  # noqa: E402
from rankscale.tokens import TokenizedCorpus, tokenize_documents  # noqa: E402
from rankscale.windows import Windows, WindowSpec, plan_windows  # noqa: E402

SECTIONS = ("floor", "ours", "naive", "lmeval", "memory", "aggregate")
RESULTS = REPO / "benchmarks" / "RESULTS.md"
QWEN_COLUMNS = 151936  # Qwen2.5 output layer
QWEN_TOKENS = 151665  # its real vocabulary; the rest are padded columns
NEAR_TIE = 1e-5  # |log p difference| under which two tokens count as tied for the agreement check


# --------------------------------------------------------------------------- small helpers


def sync(device: torch.device) -> None:
    """Wait for queued CUDA work so wall-clock timings are complete."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device) -> tuple[float, Any]:
    """Wall seconds of one call (synchronised on CUDA) and its result."""
    sync(device)
    started = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - started, out


def load1() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def fmt_rate(tokens: int, seconds: float) -> str:
    return f"{tokens / seconds:,.0f}"


def _busy_jiffies() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot, from /proc/stat (0, 0 where absent)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _own_cpu() -> float:
    """CPU seconds used by this process so far (all threads)."""
    t = os.times()
    return t.user + t.system


@contextlib.contextmanager
def others_cpu(out: list[float]) -> Iterator[None]:
    """Append the fraction of all CPUs used by *other* processes during the block (0..1)."""
    busy0, total0 = _busy_jiffies()
    own0 = _own_cpu()
    yield
    busy1, total1 = _busy_jiffies()
    ticks = os.sysconf("SC_CLK_TCK")
    if total1 > total0:
        others = (busy1 - busy0) / ticks - (_own_cpu() - own0)
        out.append(max(0.0, others / ((total1 - total0) / ticks)))
    else:
        out.append(float("nan"))


def wait_quiet(threshold: float, max_wait: float) -> float:
    """Sleep (in 1 s samples) until other processes use < threshold of the CPUs, at most max_wait s.

    Returns the last sample's fraction.
    """
    deadline = time.monotonic() + max_wait
    while True:
        sample: list[float] = []
        with others_cpu(sample):
            time.sleep(1.0)
        if not sample[0] >= threshold or time.monotonic() >= deadline:
            return sample[0]


@dataclass
class Timing:
    """Repetitions of one measurement; the best is reported, the spread and others' CPU flag disturbance."""

    seconds: list[float] = field(default_factory=list)
    others: list[float] = field(default_factory=list)  # other processes' share of the CPUs during each

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def spread(self) -> float:
        return max(self.seconds) / min(self.seconds)

    @property
    def others_at_best(self) -> float:
        return self.others[self.seconds.index(self.best)]


def measure(
    steps: dict[str, Callable[[], Any]], args: argparse.Namespace, device: torch.device
) -> tuple[dict[str, Timing], dict[str, Any]]:
    """One warm-up round, then `args.repeats` interleaved rounds; each round waits for a quiet machine first."""
    times = {k: Timing() for k in steps}
    outputs: dict[str, Any] = {}
    for rep in range(args.repeats + 1):
        if rep and args.quiet_wait > 0:
            wait_quiet(args.quiet_threshold, args.quiet_wait)
        for key, fn in steps.items():
            others: list[float] = []
            with others_cpu(others):
                seconds, outputs[key] = timed(fn, device)
            if rep:  # round 0 is the warm-up
                times[key].seconds.append(seconds)
                times[key].others.append(others[0])
    return times, outputs


# --------------------------------------------------------------------------- shared setup


@dataclass
class Bench:
    """The token windows and models every speed measurement shares."""

    docs: list[Document]
    tokenizer: Any
    tokenizer_dir: Path
    corpus: TokenizedCorpus
    windows: Windows
    vocab_size: int
    models: dict[str, Any]  # name -> model on device, eval mode
    model_dirs: dict[str, Path]  # name -> save_pretrained directory (model + tokenizer) for lm-eval
    source: str  # how the models were made, for the report


def ladder_sizes() -> tuple[SizeSpec, SizeSpec]:
    """The default ladder's smallest and largest sizes (config/config.yaml)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    sizes = [SizeSpec(**s) for s in config["ladder"]["sizes"]]
    sizes.sort(key=lambda s: s.layers * s.d_model**2)
    return sizes[-1], sizes[0]


def build_bench(args: argparse.Namespace, workdir: Path, device: torch.device, dtype: torch.dtype) -> Bench:
    """Tokenize HumanEval and build (or load) the largest and smallest ladder models."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPTNeoXForCausalLM

    docs = load_documents({"source": "packaged", "name": "humaneval"}, "bench")
    largest, smallest = ladder_sizes()
    root = args.ladder_root
    if root is not None:
        tokenizer_dir = root / "resources" / "ladder" / "tokenizer"
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        source = f"trained checkpoints from {root}"
    else:
        tokenizer_dir = workdir / "tokenizer"
        tokenizer = train_tokenizer(docs, 4096, tokenizer_dir)
        source = "random init (seed 0), BPE tokenizer (4096) trained on HumanEval"
    corpus, _ = tokenize_documents(docs, tokenizer)
    windows = plan_windows(corpus.doc_lengths(), WindowSpec(max_length=args.max_length))
    eos_id = int(tokenizer.convert_tokens_to_ids("<|endoftext|>"))
    models: dict[str, Any] = {}
    dirs: dict[str, Path] = {}
    for size in (largest, smallest):
        out = workdir / size.name
        if root is not None:
            model = AutoModelForCausalLM.from_pretrained(str(root / "resources" / "ladder" / "models" / size.name))
        else:
            torch.manual_seed(0)
            model = GPTNeoXForCausalLM(
                model_config(size, vocab_size=4096, max_positions=args.max_length, eos_id=eos_id)
            )
        model.eval()
        model.save_pretrained(str(out), safe_serialization=True)
        tokenizer.save_pretrained(str(out))
        models[size.name] = model.to(device=device, dtype=dtype)
        dirs[size.name] = out
    return Bench(docs, tokenizer, tokenizer_dir, corpus, windows, len(tokenizer), models, dirs, source)


@dataclass
class Batch:
    """One padded batch of windows, as extract_ranks forms it, with its scored rows and targets."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    rows: torch.Tensor  # flat (window * width + position) index of each scored position
    targets: torch.Tensor
    out: np.ndarray  # where each scored token goes in extract_ranks' output order


def make_batches(corpus: TokenizedCorpus, windows: Windows, batch_size: int, device: torch.device) -> list[Batch]:
    """Windows sorted by length (longest first, stable) and cut into batches, like extract_ranks."""
    out_offset = np.concatenate([[0], np.cumsum(windows.n_scored)])
    order = np.argsort(-(windows.end - windows.start), kind="stable")
    batches = []
    for b in range(0, len(order), batch_size):
        batch = order[b : b + batch_size]
        width = int((windows.end[batch] - windows.start[batch]).max())
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        rows, targets, outs = [], [], []
        for i, w in enumerate(batch.tolist()):
            s, e, f = int(windows.start[w]), int(windows.end[w]), int(windows.score_from[w])
            tokens = corpus.doc(int(windows.doc[w]))
            ids[i, : e - s] = torch.from_numpy(tokens[s:e].astype(np.int64))
            mask[i, : e - s] = 1
            rows.append(i * width + np.arange(f - 1 - s, e - 1 - s))
            targets.append(tokens[f:e].astype(np.int64))
            outs.append(np.arange(out_offset[w], out_offset[w + 1]))
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


def run_floor(model: Any, batches: list[Batch]) -> None:
    """The bare forward pass producing full logits for every batch."""
    with torch.inference_mode():
        for b in batches:
            model(input_ids=b.input_ids, attention_mask=b.attention_mask).logits  # noqa: B018


def run_naive(model: Any, batches: list[Batch], vocab_size: int, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Full logits, float32 log_softmax over the real vocabulary, argsort descending, position of the target."""
    rank = np.zeros(total, dtype=np.int64)
    logprob = np.zeros(total, dtype=np.float32)
    with torch.inference_mode():
        for b in batches:
            logits = model(input_ids=b.input_ids, attention_mask=b.attention_mask).logits
            lp = torch.log_softmax(logits[..., :vocab_size].float(), dim=-1).reshape(-1, vocab_size)
            del logits
            order = torch.argsort(lp, dim=-1, descending=True)  # every position, as a naive scorer would
            wanted = torch.zeros(order.shape[0], dtype=torch.long, device=order.device)
            wanted[b.rows] = b.targets  # unscored positions look for token 0; their rank is discarded
            hit = (order == wanted[:, None]).nonzero()  # exactly one per row, in row order
            del order
            rank[b.out] = (hit[b.rows, 1] + 1).cpu().numpy()
            logprob[b.out] = lp[b.rows, b.targets].cpu().numpy()
    return rank, logprob


def near_tie_explained(
    model: Any, batches: list[Batch], vocab_size: int, mismatched: np.ndarray, ours: np.ndarray
) -> int:
    """How many mismatched tokens have our rank inside the naive run's near-tie band of their target.

    Band: [#{lp > lp_t + NEAR_TIE} + 1, #{lp >= lp_t - NEAR_TIE}] on the naive float32 log-probs.
    """
    explained = 0
    with torch.inference_mode():
        for b in batches:
            hit = np.flatnonzero(np.isin(b.out, mismatched))
            if not hit.size:
                continue
            index = torch.from_numpy(hit).to(b.rows.device)
            logits = model(input_ids=b.input_ids, attention_mask=b.attention_mask).logits
            lp = torch.log_softmax(logits[..., :vocab_size].float(), dim=-1).reshape(-1, vocab_size)
            rows = lp[b.rows[index]]
            t = rows.gather(1, b.targets[index][:, None])
            lo = (rows > t + NEAR_TIE).sum(1) + 1
            hi = (rows >= t - NEAR_TIE).sum(1)
            r = torch.from_numpy(ours[b.out[hit]].astype(np.int64)).to(lo.device)
            explained += int(((r >= lo) & (r <= hi)).sum())
    return explained


# --------------------------------------------------------------------------- sections


def bench_speed(bench: Bench, args: argparse.Namespace, which: set[str], device: torch.device) -> str:
    """Floor, ours and naive on the same batches, interleaved repetitions, best of N."""
    total = int(bench.windows.n_scored.sum())
    positions = int((bench.windows.end - bench.windows.start).sum())
    largest = next(iter(bench.models))
    lines = [
        f"Token windows: HumanEval, {len(bench.corpus.offsets) - 1} documents, {len(bench.windows)} windows of "
        f"<= {args.max_length} tokens (stride {args.max_length // 2}): {positions:,} input positions, "
        f"{total:,} scored tokens (tok/s counts scored tokens). Models: {bench.source}; ranks over the "
        f"|V| = {bench.vocab_size:,} real tokens of 4,096 output columns. Floor = `model(input_ids, attention_mask)"
        ".logits` on the same padded, length-sorted batches as `extract_ranks` (inputs prebuilt, not timed). "
        f"Best of {args.repeats} after one warm-up; repetitions interleaved (floor, ours, naive, floor, ...). "
        "Ratios are time / floor time (lower is better): best / best, and per round (ours and the floor of the "
        "same round, sorted). `spread`: slowest / fastest repetition of ours; "
        "`others' CPU`: share of both cores used by other processes during the best floor / ours repetitions.",
        "",
        "| model | batch | floor tok/s | ours tok/s | **ours / floor** | per-round ratios | spread | naive tok/s "
        "| naive / floor | naive rank mismatches | of which near-ties | max abs Δ log p | others' CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts: list[str] = []
    for name, model in bench.models.items():
        for bs in args.batch_sizes:
            batches = make_batches(bench.corpus, bench.windows, bs, device)
            steps: dict[str, Callable[[], Any]] = {"floor": lambda m=model, b=batches: run_floor(m, b)}
            if "ours" in which or "naive" in which:
                steps["ours"] = lambda m=model, s=bs: extract_ranks(
                    m, bench.corpus, bench.windows, bench.vocab_size, ties="ge", batch_size=s
                )
            if "naive" in which:
                steps["naive"] = lambda m=model, b=batches: run_naive(m, b, bench.vocab_size, total)
            times, outputs = measure(steps, args, device)
            floor = times["floor"].best
            row = [name, str(bs), fmt_rate(total, floor)]
            others = f"{times['floor'].others_at_best:.0%}"
            if "ours" in times:
                ours_t = times["ours"]
                ratio = ours_t.best / floor
                paired = sorted(o / f for o, f in zip(ours_t.seconds, times["floor"].seconds, strict=True))
                row += [
                    fmt_rate(total, ours_t.best),
                    f"**{ratio:.2f}×**",
                    " ".join(f"{r:.2f}" for r in paired),
                    f"{ours_t.spread:.2f}",
                ]
                others += f" / {ours_t.others_at_best:.0%}"
                verdict = "met" if ratio <= 1.10 else "missed"
                verdicts.append(f"{name} batch {bs}: {ratio:.2f}× ({verdict if name == largest else 'no target'})")
            else:
                row += ["—"] * 4
            if "naive" in times:
                ours: RankArrays = outputs["ours"]
                rank, logprob = outputs["naive"]
                mismatched = np.flatnonzero(rank != ours.rank.astype(np.int64))
                explained = near_tie_explained(model, batches, bench.vocab_size, mismatched, ours.rank)
                dlp = float(np.abs(logprob - ours.logprob).max())
                row += [
                    fmt_rate(total, times["naive"].best),
                    f"{times['naive'].best / floor:.2f}×",
                    f"{mismatched.size} / {total:,}",
                    str(explained),
                    f"{dlp:.1e}",
                ]
            else:
                row += ["—"] * 5
            row.append(others)
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    if verdicts:
        lines += ["", f"**Target**: ours ≤ 1.10× the floor's time for the largest ladder model ({largest}). "]
        lines[-1] += "; ".join(verdicts) + "."
    return "\n".join(lines)


def lmeval_requests(texts: list[str]) -> list[Any]:
    from lm_eval.api.instance import Instance

    return [
        Instance(request_type="loglikelihood_rolling", doc={}, arguments=(text,), idx=i) for i, text in enumerate(texts)
    ]


def lmeval_positions(lm: Any, texts: list[str]) -> int:
    """Input positions lm-eval's rolling windows feed the model (its own window construction)."""
    from lm_eval import utils

    n = 0
    for text in texts:
        pairs = utils.get_rolling_token_windows(
            token_list=lm.tok_encode(text), prefix_token=lm.prefix_token_id, max_seq_len=lm.max_length, context_len=1
        )
        for ctx, cont in map(utils.make_disjoint_window, pairs):
            n += len((ctx + cont)[-(lm.max_length + 1) :][:-1])
    return n


def bench_lmeval(bench: Bench, args: argparse.Namespace, device: torch.device) -> str:
    """lm-eval's rolling log-likelihood vs ours from text, and per-document agreement."""
    try:
        from lm_eval.models.huggingface import HFLM

        version = importlib.metadata.version("lm_eval")
    except ImportError as exc:
        return f"lm-eval is not importable ({exc!r}); `pip install lm-eval` first. Row skipped."
    texts = [d.text for d in bench.docs]
    requests = lmeval_requests(texts)
    ours_tokens = int(bench.windows.n_scored.sum())
    ours_positions = int((bench.windows.end - bench.windows.start).sum())
    tight = WindowSpec(max_length=args.max_length, stride=args.max_length - 1)
    tight_windows = plan_windows(bench.corpus.doc_lengths(), tight)
    tight_positions = int((tight_windows.end - tight_windows.start).sum())
    rows: list[str] = []
    lm_positions = 0
    agree_docs = 0
    ratios: list[str] = []
    worst_agreement = 0.0
    for name, model in bench.models.items():
        for bs in args.batch_sizes:
            lm = HFLM(
                pretrained=str(bench.model_dirs[name]),
                batch_size=bs,
                max_length=args.max_length,
                device=device.type,
                dtype=args.dtype,
            )
            lm_tokens = sum(len(lm.tok_encode(t)) for t in texts)
            lm_positions = lmeval_positions(lm, texts)

            def ours_from_text(m: Any = model, b: int = bs, spec: WindowSpec | None = None) -> RankArrays:
                corpus, _ = tokenize_documents(bench.docs, bench.tokenizer)
                windows = plan_windows(corpus.doc_lengths(), spec or WindowSpec(max_length=args.max_length))
                return extract_ranks(m, corpus, windows, bench.vocab_size, ties="ge", batch_size=b)

            steps: dict[str, Callable[[], Any]] = {
                "lmeval": lambda lm=lm: lm.loglikelihood_rolling(requests, disable_tqdm=True),
                "ours": ours_from_text,
                "tight": lambda: ours_from_text(spec=tight),
            }
            times, outputs = measure(steps, args, device)
            agree_docs, same_cols, real_vocab = agreement(
                bench, model, lm, texts, outputs["lmeval"], bs, args.max_length
            )
            lm_rate = lm_tokens / times["lmeval"].best
            ours_rate = ours_tokens / times["ours"].best
            tight_rate = ours_tokens / times["tight"].best
            worst_agreement = max(worst_agreement, same_cols)
            ratios.append(
                f"{name} batch {bs}: {ours_rate / lm_rate:.2f}× ({'met' if ours_rate >= 2 * lm_rate else 'missed'})"
            )
            row = [
                name,
                str(bs),
                f"{lm_rate:,.0f}",
                f"{ours_rate:,.0f}",
                f"**{ours_rate / lm_rate:.2f}×**",
                f"{tight_rate:,.0f}",
                f"{tight_rate / lm_rate:.2f}×",
                f"{same_cols:.1e}",
                f"{real_vocab:.1e}",
                f"{times['lmeval'].others_at_best:.0%} / {times['ours'].others_at_best:.0%}",
            ]
            rows.append("| " + " | ".join(row) + " |")
            print(rows[-1], flush=True)
            del lm
            gc.collect()
    lm_tokens = sum(len(bench.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    lines = [
        f"lm-eval {version}: `HFLM(pretrained=<save_pretrained dir>, batch_size=B, max_length={args.max_length}, "
        f'device="{device.type}", dtype="{args.dtype}").loglikelihood_rolling(...)` on the {len(texts)} HumanEval '
        f"documents: EOT + disjoint windows of {args.max_length}, every token scored once: {lm_tokens:,} scored "
        f"tokens, {lm_positions:,} input positions. Ours from the same text: `tokenize_documents` + `plan_windows` + "
        f"`extract_ranks` (ranks and log-probs), {ours_tokens:,} scored tokens (the first token of a document has no "
        f"context); default windows (stride {args.max_length // 2}: {ours_positions:,} input positions, every target "
        f"keeps >= {args.max_length // 2} tokens of context) and, for equal compute, stride {args.max_length - 1} "
        f"({tight_positions:,} positions). Each side's tok/s counts the tokens it scores. Best of {args.repeats} "
        "after a warm-up, interleaved; tqdm disabled. Agreement: the "
        f"{agree_docs} documents with token count + 1 <= {args.max_length}, scored by `extract_ranks` as "
        "[EOT] + tokens, summed log-likelihood vs lm-eval's, max relative difference; once normalising over all "
        "4,096 output columns as lm-eval does, once over the real vocabulary (rankscale's definition).",
        "",
        "| model | batch | lm-eval tok/s | ours tok/s | **ours / lm-eval** | ours stride "
        f"{args.max_length - 1} tok/s | its ratio | agreement: max rel. diff (all columns, as lm-eval) "
        "| same, ours over real vocabulary | others' CPU |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "**Target**: ours ≥ 2× lm-eval's throughput (default windows): " + "; ".join(ratios) + ". "
        f"**Agreement** within 1e-4 relative: max {worst_agreement:.1e} over {agree_docs} documents per model "
        f"({'met' if worst_agreement <= 1e-4 else 'missed'}).",
    ]
    return "\n".join(lines)


def agreement(
    bench: Bench, model: Any, lm: Any, texts: list[str], lm_out: list[float], batch_size: int, max_length: int
) -> tuple[int, float, float]:
    """Documents that fit one lm-eval window, scored by extract_ranks as [eot] + tokens.

    Returns (documents compared, max relative difference of the summed log-likelihood with
    log p normalised over all output columns as lm-eval does, the same over the real vocabulary).
    """
    eot = int(lm.prefix_token_id)
    pieces, keep = [], []
    for i, text in enumerate(texts):
        ids = lm.tok_encode(text)
        if len(ids) + 1 <= max_length:
            pieces.append(np.asarray([eot, *ids], dtype=np.int32))
            keep.append(i)
    if not keep:
        return 0, float("nan"), float("nan")
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    corpus = TokenizedCorpus(np.concatenate(pieces), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    windows = plan_windows(lengths, WindowSpec(max_length=max_length))
    theirs = np.array([lm_out[i] for i in keep], dtype=np.float64)
    worst = []
    for vocab in (int(model.get_output_embeddings().weight.shape[0]), bench.vocab_size):
        arrays = extract_ranks(model, corpus, windows, vocab, ties="ge", batch_size=batch_size)
        ours = np.bincount(arrays.doc.astype(np.int64), weights=arrays.logprob.astype(np.float64), minlength=len(keep))
        worst.append(float(np.max(np.abs(ours - theirs) / np.abs(theirs))))
    return len(keep), worst[0], worst[1]


# --------------------------------------------------------------------------- memory (child processes)


def memory_child(
    variant: str, batch_size: int, n_windows: int, length: int, device_name: str, dtype_name: str
) -> dict[str, Any]:
    """Runs in a fresh spawned process: build the Qwen2 model and windows, measure one variant's peak."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.set_num_threads(2)
    device, dtype = torch.device(device_name), getattr(torch, dtype_name)
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=QWEN_COLUMNS,
        hidden_size=64,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=max(1024, length),
        tie_word_embeddings=True,
    )
    model = Qwen2ForCausalLM(config).eval().to(device=device, dtype=dtype)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, QWEN_TOKENS, size=n_windows * length).astype(np.int32)
    corpus = TokenizedCorpus(ids, np.arange(0, n_windows * length + 1, length, dtype=np.int64))
    windows = plan_windows(corpus.doc_lengths(), WindowSpec(max_length=length))
    total = int(windows.n_scored.sum())
    gc.collect()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        baseline = torch.cuda.memory_allocated(device)
    else:
        baseline = rss_bytes()[0]
    started = time.perf_counter()
    stats: dict[str, Any] = {}
    if variant == "ours":
        extract_ranks(model, corpus, windows, QWEN_TOKENS, ties="ge", batch_size=batch_size, stats=stats)
    elif variant == "naive":  # only the first batch: its peak is the peak, and argsort over |V| is slow
        windows = Windows(
            windows.doc[:batch_size],
            windows.start[:batch_size],
            windows.end[:batch_size],
            windows.score_from[:batch_size],
        )
        total = int(windows.n_scored.sum())
        run_naive(model, make_batches(corpus, windows, batch_size, device), QWEN_TOKENS, total)
    elif variant == "floor":
        run_floor(model, make_batches(corpus, windows, batch_size, device))
    else:
        raise ValueError(f"unknown memory variant {variant!r}")
    sync(device)
    seconds = time.perf_counter() - started
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device)
    else:
        peak = rss_bytes()[1]
    return {"baseline": baseline, "peak": peak, "seconds": seconds, "tokens": total, **stats}


def rss_bytes() -> tuple[int, int]:
    """(current, peak) resident set size of this process.

    Linux: VmRSS and VmHWM of /proc/self/status, the high-water mark of this process's own
    memory map. `ru_maxrss` is not used there: a spawned child starts by fork + exec, and
    exec folds the parent's RSS at fork time into the child's ru_maxrss.
    """
    with contextlib.suppress(OSError):
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return peak, peak


def _child_entry(queue: Any, kwargs: dict[str, Any]) -> None:
    try:
        queue.put(memory_child(**kwargs))
    except Exception as exc:  # report, don't hang the parent
        queue.put({"error": repr(exc)})


def run_child(**kwargs: Any) -> dict[str, Any]:
    """One memory measurement in a fresh `spawn` process (so peaks of earlier work do not count)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_entry, args=(queue, kwargs))
    proc.start()
    try:
        result = queue.get(timeout=590)
    finally:
        proc.join(timeout=60)
    if proc.exitcode not in (0, None):
        result = {"error": f"child exited with {proc.exitcode}"}
    return result


def bench_memory(args: argparse.Namespace, device: torch.device) -> str:
    """Peak memory of extraction vs the naive ranker with Qwen2's 151,936-column head."""
    mib = 2**20
    length, n_windows = args.memory_max_length, args.memory_windows
    what = "resident set size" if device.type == "cpu" else "torch.cuda memory allocated"
    from rankscale import extract

    chunk = getattr(extract, "auto_head_chunk", lambda _: "?")(QWEN_COLUMNS)
    full = args.memory_batch * length * QWEN_COLUMNS * 4 / 2**30
    lines = [
        f"Qwen2 architecture, random init: hidden 64, 2 layers, 2 heads, 1 KV head, {QWEN_COLUMNS:,} output columns "
        f"({QWEN_TOKENS:,} real tokens ranked), tied embeddings; {n_windows} windows of {length} random token ids "
        f"({n_windows * (length - 1):,} scored tokens). Each row is a fresh spawned process; `baseline` is its {what} "
        "once imports, model and data are in place, `peak` its high-water mark at the end (CPU: VmHWM, CUDA: "
        "max_memory_allocated), `extraction` = peak − baseline. "
        f"Ours: `extract_ranks(..., batch_size={args.memory_batch})` with the default head chunk "
        f"(auto: {chunk} rows). For scale: the float32 logits of one batch of {args.memory_batch} × {length} would "
        f"take {full:.1f} GiB.",
        "",
        "| variant | batch | tokens | baseline MiB | peak MiB | extraction MiB | seconds | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    runs = [("ours", args.memory_batch, "")]
    runs += [("naive", b, "one batch only (the peak is per batch)") for b in (1, 2)]
    measured: dict[tuple[str, int], dict[str, Any]] = {}
    for variant, bs, note in runs:
        res = run_child(
            variant=variant,
            batch_size=bs,
            n_windows=n_windows,
            length=length,
            device_name=device.type,
            dtype_name=args.dtype,
        )
        if "error" in res:
            lines.append(f"| {variant} | {bs} | — | — | — | — | — | failed: {res['error']} |")
            continue
        measured[(variant, bs)] = res
        if "batch_size" in res and res["batch_size"] != bs:
            note = f"backed off to batch {res['batch_size']}"
        lines.append(
            f"| {variant} | {bs} | {res['tokens']:,} | {res['baseline'] / mib:,.0f} | {res['peak'] / mib:,.0f} | "
            f"{(res['peak'] - res['baseline']) / mib:,.0f} | {res['seconds']:.1f} | {note} |"
        )
        print(lines[-1], flush=True)
    if ("ours", args.memory_batch) in measured:
        res = measured[("ours", args.memory_batch)]
        extra, peak = (res["peak"] - res["baseline"]) / 1e9, res["peak"] / 1e9
        verdict = (
            f"**Target**: extraction peak ≤ 1 GB. Extraction adds {extra:.2f} GB "
            f"({'met' if extra <= 1 else 'missed'}); the process's absolute peak, imports and model included, "
            f"is {peak:.2f} GB ({'met' if peak <= 1 else 'missed'})."
        )
    else:
        verdict = "**Target**: extraction peak ≤ 1 GB: not measured (the run failed)."
    if ("naive", 1) in measured and ("naive", 2) in measured:
        one, two = measured[("naive", 1)], measured[("naive", 2)]
        per_window = (two["peak"] - two["baseline"]) - (one["peak"] - one["baseline"])
        extra = (one["peak"] - one["baseline"]) + per_window * (args.memory_batch - 1)
        lines.append(
            f"| naive (extrapolated) | {args.memory_batch} | — | {one['baseline'] / mib:,.0f} | "
            f"{(one['baseline'] + extra) / mib:,.0f} | {extra / mib:,.0f} | — | linear in batch from batches 1 and 2 |"
        )
        print(lines[-1], flush=True)
    lines += ["", verdict]
    return "\n".join(lines)


# --------------------------------------------------------------------------- aggregation


def synthetic_arrays(n: int, vocab: int, mu: float, sigma: float, n_docs: int, seed: int) -> RankArrays:
    """10^6-token rank arrays: lognormal ranks, log-probs falling with log rank, ~n_docs documents."""
    from rankscale.lognormal import sample_discrete_lognormal

    rng = np.random.default_rng(seed)
    rank = sample_discrete_lognormal(mu, sigma, vocab, n, seed=seed).astype(np.uint32)
    logprob = -(0.9 * np.log(rank) + rng.exponential(0.3, n)).astype(np.float32)
    lengths = rng.multinomial(n, np.full(n_docs, 1 / n_docs))
    doc = np.repeat(np.arange(n_docs), lengths).astype(np.uint32)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    pos = (np.arange(n) - starts + 1).astype(np.uint32)
    target = rng.integers(0, vocab, n).astype(np.uint32)
    return RankArrays(rank=rank, logprob=logprob, doc=doc, pos=pos, target=target)


def bench_aggregate(args: argparse.Namespace) -> str:
    """summarize() per 10^6-token array, then metrics_table + powerlaw_table over the models."""
    from rankscale.summary import summarize
    from rankscale.tables import metrics_table, powerlaw_table

    n, vocab, n_models = 10**6, 50277, 6
    analysis = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["analysis"]
    sizes = np.logspace(7, 10, n_models)
    arrays = [synthetic_arrays(n, vocab, 3.0 - 0.3 * i, 2.6 - 0.05 * i, 2000, i) for i in range(n_models)]
    metas = [
        {"vocab_size": vocab, "model": f"m{i}", "dataset": "synthetic", "S": int(s), "ties": "ge", "sha256": "0" * 64}
        for i, s in enumerate(sizes)
    ]
    summarize(arrays[0], metas[0], analysis, "synthetic")  # warm-up
    if args.quiet_wait > 0:
        wait_quiet(args.quiet_threshold, args.quiet_wait)
    per_model: list[float] = []
    summaries = []
    for a, m in zip(arrays, metas, strict=True):
        seconds, (summary, _) = timed(lambda a=a, m=m: summarize(a, m, analysis, "synthetic"), torch.device("cpu"))
        per_model.append(seconds)
        summaries.append(summary)
    tables = Timing()
    fits = None
    for _ in range(args.repeats):
        seconds, fits = timed(lambda: powerlaw_table(metrics_table(summaries)), torch.device("cpu"))
        tables.seconds.append(seconds)
    assert fits is not None
    k1 = fits[(fits["metric"] == "neg_log_rbp") & (fits["k"] == 1)].iloc[0]
    worst = max(per_model)
    lines = [
        f"{n_models} synthetic models × {n:,} tokens, |V| = {vocab:,}, ranks from `sample_discrete_lognormal`, "
        f"~2000 documents each; analysis settings from config/config.yaml. Power-law fit rows: {len(fits)} "
        f"(k = 1: alpha = {k1['alpha']:.3f}, R² = {k1['r2']:.3f}). Load 1m: {load1():.1f}.",
        "",
        "| step | seconds |",
        "|---|---|",
        f"| `summarize` (histogram, RBP grid, CE, lognormal fit, runs), 10^6 tokens: best / worst of {n_models} "
        f"| {min(per_model):.2f} / {worst:.2f} |",
        f"| `metrics_table` + `powerlaw_table` over {n_models} models (best of {args.repeats}) | {tables.best:.3f} |",
        f"| **10^6 tokens aggregated + both fits** (worst summarize + tables; target < 2 s) | **{worst + tables.best:.2f}** |",
        "",
        f"**Target**: < 2 s: {worst + tables.best:.2f} s ({'met' if worst + tables.best < 2 else 'missed'}).",
    ]
    print("\n".join(lines[-5:]), flush=True)
    return "\n".join(lines)


# --------------------------------------------------------------------------- report


def machine(device: torch.device) -> str:
    """nproc, CPU model, library versions, load average."""
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    parts = [
        f"nproc {os.cpu_count()}",
        f"CPU {cpu}",
        f"torch {torch.__version__} ({torch.get_num_threads()} threads)",
        f"transformers {importlib.metadata.version('transformers')}",
        f"Python {platform.python_version()}",
        f"device {device.type}",
    ]
    if device.type == "cuda":
        parts.append(f"GPU {torch.cuda.get_device_name(device)}")
    return ", ".join(parts)


def update_results(path: Path, sections: dict[str, str]) -> None:
    """Replace (or append) each `<!-- bench:NAME -->` ... `<!-- /bench:NAME -->` block, atomically."""
    text = (
        path.read_text()
        if path.exists()
        else "# Extraction benchmarks\n\nWritten by `benchmarks/extraction_bench.py`.\n"
    )
    for name, body in sections.items():
        start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
        block = f"{start}\n{body.rstrip()}\n{end}"
        if start in text and end in text:
            head, rest = text.split(start, 1)
            text = head + block + rest.split(end, 1)[1]
        else:
            text = text.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


TITLES = {
    "speed": "Extraction vs the bare forward pass and a naive ranker",
    "lmeval": "lm-evaluation-harness rolling log-likelihood",
    "memory": "Peak memory with a 151,936-token vocabulary",
    "aggregate": "Aggregation and fits for 10^6 tokens",
}


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rankscale-bench-") as tmp:
        yield Path(tmp)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--batch-sizes", default="1,16", help="comma-separated batch sizes")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (CPU)")
    parser.add_argument("--ladder-root", type=Path, default=None, help="a finished workflow run: use its checkpoints")
    parser.add_argument("--memory-max-length", type=int, default=1024)
    parser.add_argument("--memory-batch", type=int, default=8)
    parser.add_argument("--memory-windows", type=int, default=8)
    parser.add_argument(
        "--quiet-wait", type=float, default=0.0, help="before each timed round, wait up to this many s for a quiet CPU"
    )
    parser.add_argument("--quiet-threshold", type=float, default=0.15, help="'quiet': others use < this CPU share")
    parser.add_argument("--results", type=Path, default=RESULTS, help="Markdown file to update")
    args = parser.parse_args(argv)
    args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    unknown = set(args.only.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    which = set(args.only.split(","))
    torch.set_num_threads(args.threads)
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    command = "python benchmarks/extraction_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    started = time.perf_counter()
    load_start = load1()
    bodies: dict[str, str] = {}
    with workspace() as tmp:
        if which & {"floor", "ours", "naive", "lmeval"}:
            bench = build_bench(args, tmp, device, dtype)
            if which & {"floor", "ours", "naive"}:
                bodies["speed"] = bench_speed(bench, args, which, device)
            if "lmeval" in which:
                bodies["lmeval"] = bench_lmeval(bench, args, device)
            del bench
            gc.collect()
        if "memory" in which:
            bodies["memory"] = bench_memory(args, device)
        if "aggregate" in which:
            bodies["aggregate"] = bench_aggregate(args)
    wall = time.perf_counter() - started
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime())
    footer = (
        f"\n\nMachine: {machine(device)}. Load average (1 min) {load_start:.1f} at start, {load1():.1f} at end; "
        f"run took {wall:.0f} s ({stamp}).\n\n```bash\n{command}\n```"
    )
    suffix = "-trained" if args.ladder_root is not None else ""
    sections = {
        (name + suffix if name in ("speed", "lmeval") else name): f"## {TITLES[name]}"
        + (" (trained checkpoints)" if suffix and name in ("speed", "lmeval") else "")
        + f"\n\n{body}{footer}"
        for name, body in bodies.items()
    }
    print("\n\n".join(sections.values()))
    update_results(args.results, sections)


if __name__ == "__main__":
    main()
