"""Extraction against lm-evaluation-harness's HF backend on the same text, and their agreement.

lm-eval: `HFLM(pretrained=<the same model object>, tokenizer=..., batch_size=B, max_length=L,
softmax_dtype="float32").loglikelihood_rolling(...)` on the HumanEval documents: EOT + disjoint
windows of L, every token scored once. Ours from the same text: `tokenize_documents` +
`plan_windows` + `extract_ranks` (ranks and log-probs), default windows (stride L // 2) and, for
equal compute, stride L - 1. Each side's tok/s counts the tokens it scores. Agreement: documents
that fit one window, scored by `extract_ranks` as [EOT] + tokens; summed log-likelihood against
lm-eval's, normalised over all output columns as lm-eval does, and over the real vocabulary.
Target (a GPU goal): ours >= 2x lm-eval's throughput. Needs `pip install lm-eval` (0.4.13 tested;
it also wants `accelerate`): a benchmark dependency only, never the project's.

    python benchmarks/lmeval.py                                  # CPU: ladder sizes, windows of 128
    python benchmarks/lmeval.py --device cuda --dtype bfloat16   # the paper's shapes, windows of 1024

(Not named lm_eval.py: run as a script, that name would shadow the lm_eval package.)
"""

from __future__ import annotations

import gc
import importlib.metadata
from pathlib import Path
from typing import Any

import harness
import numpy as np
import torch
import workloads as wl

from rankscale.corpus import Document
from rankscale.extract import is_out_of_memory
from rankscale.tokens import TokenizedCorpus, tokenize_documents
from rankscale.windows import WindowSpec, plan_windows


def options(argv: list[str] | None) -> harness.Bench:
    p = harness.parser(__doc__)
    p.add_argument("--models", help="comma-separated shapes (workloads.SHAPES) or checkpoint directories")
    p.add_argument("--max-length", type=int, help="window length; default 128 on CPU, 1024 on CUDA")
    p.add_argument("--batch-sizes", help="comma-separated; default 1,16 on CPU, 8,32 on CUDA")
    p.add_argument("--ladder-root", type=Path, help="a finished workflow run: its trained ladder checkpoints")
    b = harness.start("lmeval", p, argv)
    a, cuda = b.args, b.args.device == "cuda"
    a.models = (
        a.models or ("pythia-1.4b,qwen2.5-0.5b" if cuda else f"{wl.LADDER_LARGEST},{wl.LADDER_SMALLEST}")
    ).split(",")
    a.max_length = a.max_length or (1024 if cuda else 128)
    a.batch_sizes = [int(x) for x in (a.batch_sizes or ("8,32" if cuda else "1,16")).split(",")]
    if a.quick:
        a.repeats, a.max_length = 1, min(a.max_length, 256)
    return b


def ours_from_text(m: wl.BenchModel, work: wl.Workload, vocab: int, batch: int, spec: WindowSpec) -> Any:
    """Everything ours does from the same text: tokenize, cut windows, score."""
    docs = [Document(str(i), t) for i, t in enumerate(work.texts or [])]
    corpus, _ = tokenize_documents(docs, work.tokenizer, add_special_tokens=False)
    windows = plan_windows(corpus.doc_lengths(), spec)
    return wl.ours(m.model, wl.Workload(corpus, windows, ""), vocab, batch)


def agreement(
    m: wl.BenchModel, lm: Any, work: wl.Workload, theirs_all: list[float], vocab: int, batch: int, length: int
) -> tuple[int, float, float]:
    """(documents compared, max relative difference over all columns as lm-eval, over the real vocabulary)."""
    eot = int(lm.prefix_token_id)
    pieces, keep = [], []
    for i, text in enumerate(work.texts or []):
        ids = lm.tok_encode(text)
        if len(ids) + 1 <= length:
            pieces.append(np.asarray([eot, *ids], dtype=np.int32))
            keep.append(i)
    if not keep:
        return 0, float("nan"), float("nan")
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    corpus = TokenizedCorpus(np.concatenate(pieces), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    one = wl.Workload(corpus, plan_windows(lengths, WindowSpec(length, stride=None, max_windows_per_doc=None)), "")
    theirs = np.array([theirs_all[i] for i in keep], dtype=np.float64)
    worst = []
    for v in (int(m.model.get_output_embeddings().weight.shape[0]), vocab):
        arrays = wl.ours(m.model, one, v, batch)
        mine = np.bincount(arrays.doc.astype(np.int64), weights=arrays.logprob.astype(np.float64), minlength=len(keep))
        worst.append(float(np.max(np.abs(mine - theirs) / np.abs(theirs))))
    return len(keep), worst[0], worst[1]


def compare(b: harness.Bench, m: wl.BenchModel, work: wl.Workload, batch: int) -> tuple[list[str], dict[str, Any]]:
    """One row: lm-eval, ours and ours at stride L - 1, interleaved; then agreement."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    a, texts = b.args, work.texts or []
    lm = HFLM(
        pretrained=m.model, tokenizer=work.tokenizer, batch_size=batch, max_length=a.max_length, softmax_dtype="float32"
    )
    requests = [
        Instance(request_type="loglikelihood_rolling", doc={}, arguments=(t,), idx=i) for i, t in enumerate(texts)
    ]
    vocab = m.vocab(work)
    lm_tokens = sum(len(lm.tok_encode(t)) for t in texts)
    steps = {
        "lmeval": lambda: lm.loglikelihood_rolling(requests, disable_tqdm=True),
        "ours": lambda: ours_from_text(
            m, work, vocab, batch, WindowSpec(a.max_length, stride=None, max_windows_per_doc=None)
        ),
        "tight": lambda: ours_from_text(
            m, work, vocab, batch, WindowSpec(a.max_length, stride=a.max_length - 1, max_windows_per_doc=None)
        ),
    }
    times, out = harness.interleave(steps, a.repeats, b.device, a.quiet_wait)
    docs, all_cols, real = agreement(m, lm, work, out["lmeval"], vocab, batch, a.max_length)
    ours_n = int(out["ours"].rank.size)
    lm_rate, ours_rate, tight_rate = (
        lm_tokens / times["lmeval"].best,
        ours_n / times["ours"].best,
        ours_n / times["tight"].best,
    )
    row = [
        m.name,
        str(batch),
        f"{lm_rate:,.0f}",
        f"{ours_rate:,.0f}",
        f"**{ours_rate / lm_rate:.2f}×**",
        f"{tight_rate:,.0f}",
        f"{tight_rate / lm_rate:.2f}×",
        f"{all_cols:.1e}",
        f"{real:.1e}",
    ]
    if b.device.type == "cuda":
        row.append(" / ".join(f"{max(times[k].peak) / 2**30:.1f}" for k in ("lmeval", "ours")))
    row.append(f"{times['lmeval'].others_at_best:.0%} / {times['ours'].others_at_best:.0%}")
    facts = {
        "lm_tokens": lm_tokens,
        "ours_tokens": ours_n,
        "docs": docs,
        "worst": all_cols,
        "ratio": ours_rate / lm_rate,
    }
    return row, facts


def main(argv: list[str] | None = None) -> str:
    b = options(argv)
    a = b.args
    try:
        version = importlib.metadata.version("lm_eval")
        import lm_eval.models.huggingface  # noqa: F401
    except ImportError as exc:
        raise SystemExit(
            f"lmeval: lm-eval is not importable ({exc}); `pip install lm-eval==0.4.13 accelerate`"
        ) from exc
    rows, verdicts, facts, described, worst = [], [], {}, [], float("nan")
    with harness.workspace() as tmp:
        shared = None
        for name in (wl.resolve(n, a.quick) for n in a.models):
            m = wl.load_model(name, b.device, b.dtype, max(a.max_length, 128) + 1, a.ladder_root)
            if m.tokenizer is not None:
                work = wl.humaneval(a.max_length, tmp, m.tokenizer, max_docs=12 if a.quick else None)
            else:
                shared = shared or wl.humaneval(a.max_length, tmp, max_docs=12 if a.quick else None)
                work = shared
            described.append(
                f"{m.name} (|V| = {m.vocab(work):,} of {m.model.get_output_embeddings().weight.shape[0]:,} columns)"
            )
            for batch in a.batch_sizes:
                try:
                    row, facts = compare(b, m, work, batch)
                except Exception as exc:  # lm-eval's full logits at a large batch can run out (CUDA)
                    if not is_out_of_memory(exc):
                        raise
                    gc.collect()
                    if b.device.type == "cuda":
                        torch.cuda.empty_cache()
                    rows.append(f"| {m.name} | {batch} | out of memory: {str(exc).splitlines()[0][:120]} |")
                    verdicts.append(f"{m.name} batch {batch}: out of memory")
                    continue
                worst = facts["worst"] if np.isnan(worst) else max(worst, facts["worst"])
                rows.append("| " + " | ".join(row) + " |")
                print(rows[-1], flush=True)
                verdicts.append(
                    f"{m.name} batch {batch}: {facts['ratio']:.2f}× ({'met' if facts['ratio'] >= 2 else 'missed'})"
                )
            del m
            gc.collect()
            if b.device.type == "cuda":
                torch.cuda.empty_cache()
    L = a.max_length
    peak = " | peak GiB lm-eval / ours" if b.device.type == "cuda" else ""
    source = "trained checkpoints of a workflow run (`--ladder-root`)" if a.ladder_root else "random init (seed 0)"
    lines = [
        f"lm-eval {version}: `HFLM(pretrained=model, tokenizer=tokenizer, batch_size=B, max_length={L}, "
        f'softmax_dtype="float32").loglikelihood_rolling(...)` on the text of {work.description}: EOT + disjoint '
        f"windows of {L}, {facts.get('lm_tokens', 0):,} scored tokens. Ours from the same text (tokenize, windows, "
        f"`extract_ranks`): {facts.get('ours_tokens', 0):,} scored tokens (a document's first token has no context); windows "
        f"of stride {L // 2} (every target keeps >= {L // 2} tokens of context) and, for about lm-eval's compute, "
        f"stride {L - 1}. Models ({source}, {a.dtype}): {', '.join(described)}. Best of {a.repeats} after a warm-up "
        f"round, rounds interleaved. Agreement: the {facts.get('docs', 0)} documents of <= {L - 1} tokens, summed "
        "log-likelihood, max relative difference.",
        "",
        f"| model | batch | lm-eval tok/s | ours tok/s | **ours / lm-eval** | ours stride {L - 1} tok/s | its ratio "
        f"| agreement (all columns, as lm-eval) | agreement (ours over the real vocabulary){peak} | others' CPU |",
        "|" + "---|" * (11 if peak else 10),
        *rows,
        "",
        "**Target** (a GPU goal): ours ≥ 2× lm-eval's throughput (default windows): " + "; ".join(verdicts) + ". "
        f"**Agreement** within 1e-4 relative over all columns: max {worst:.1e} over every row "
        f"({'met' if worst <= 1e-4 else 'missed' if worst > 1e-4 else 'not measured: no document fits one window'}).",
    ]
    name = b.section("lmeval") + ("-trained" if a.ladder_root else "")
    title = "lm-evaluation-harness: rolling log-likelihood on the same text" + (
        " (trained checkpoints)" if a.ladder_root else ""
    )
    return b.finish(name, title, "\n".join(lines), {"lm-eval": version})


if __name__ == "__main__":
    main()
