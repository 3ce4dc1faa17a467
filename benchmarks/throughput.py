"""Extraction against the bare forward pass (the floor) and a naive full-logits ranker.

On the same token windows and the same padded, length-sorted batches, interleaved rounds of
- floor: `model(input_ids, attention_mask).logits` (inputs prebuilt, not timed);
- ours:  `rankscale.extract.extract_ranks` (ranks and log-probs of every scored token), once per
         `--kernels` entry (the head's reduction, rankscale.head: fused and chunked on CUDA);
- naive: full logits, float32 log-softmax, argsort (workloads.naive), and its rank agreement.
Targets: fused <= 1.05x and chunked <= 1.15x the floor's time on a GPU; on CPU, chunked <= 1.10x for
the largest ladder model. With --dtype bfloat16 the weights are bfloat16 and ours computes logits
with a float32 copy of the head; the ranks are compared with a float32 run of the same weights.
`--batch-sizes auto` asks extract_ranks for --max-batch windows and keeps the batch size its
out-of-memory back-off settles on; the floor and naive get the largest that fits them too.

    python benchmarks/throughput.py                       # CPU: ladder sizes on HumanEval
    python benchmarks/throughput.py --device cuda --dtype bfloat16   # the paper's shapes and Gemma-3's, 1024 tokens
    python benchmarks/throughput.py --models smollm2-135m --batch-sizes 1,8   # a real pretrained model (GGUF)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import harness
import numpy as np
import references as ref
import torch
import workloads as wl

NO_TARGET = {wl.LADDER_SMALLEST, "pythia-tiny", "qwen2-tiny", "gemma3-tiny"}  # real models (wl.REAL_MODELS) have the target  # the head dominates a tiny body


def options(argv: list[str] | None) -> harness.Bench:
    p = harness.parser(__doc__)
    p.add_argument("--models", help="comma-separated shapes (workloads.SHAPES) or checkpoint directories")
    p.add_argument("--text", choices=("humaneval", "random"), help="default: humaneval on CPU, random on CUDA")
    p.add_argument("--max-length", type=int, help="window length; default 128 on CPU, 1024 on CUDA")
    p.add_argument("--windows", type=int, help="windows of random text (default 16 on CPU, 128 on CUDA)")
    p.add_argument("--batch-sizes", help="comma-separated, or auto; default 1,16 on CPU, auto on CUDA")
    p.add_argument("--max-batch", type=int, default=256, help="what --batch-sizes auto asks for first")
    p.add_argument("--ladder-root", type=Path, help="a finished workflow run: its trained ladder checkpoints")
    p.add_argument("--device-map", choices=("auto",), help="spread each model over the visible GPUs (transformers)")
    p.add_argument("--kernels", help="comma-separated head reductions of ours (default fused,chunked on CUDA, chunked on CPU)")
    b = harness.start("throughput", p, argv)
    a, cuda = b.args, b.args.device == "cuda"
    a.models = (
        a.models or ("pythia-1.4b,qwen2.5-0.5b,gemma-3-270m" if cuda else f"{wl.LADDER_LARGEST},{wl.LADDER_SMALLEST}")
    ).split(",")
    a.text = a.text or ("random" if cuda else "humaneval")
    a.max_length = a.max_length or (1024 if cuda else 128)
    a.windows = a.windows or (128 if cuda else 16)
    a.batch_sizes = (a.batch_sizes or ("auto" if cuda else "1,16")).split(",")
    a.kernels = (a.kernels or ("fused,chunked" if cuda else "chunked")).split(",")
    if a.quick:
        a.repeats, a.max_batch, a.windows, a.max_length = 1, min(a.max_batch, 8), 2, min(a.max_length, 256)
    return b


def workload(b: harness.Bench, m: wl.BenchModel, workdir: Path, cache: dict[Any, wl.Workload]) -> wl.Workload:
    """Token windows for one model (shared by models with the same tokenizer)."""
    a = b.args
    key = (a.text, id(m.tokenizer) if m.tokenizer is not None else m.real_vocab)
    if key not in cache:
        if a.text == "humaneval":
            cache[key] = wl.humaneval(a.max_length, workdir, m.tokenizer, max_docs=12 if a.quick else None)
        else:
            vocab = m.real_vocab or (len(m.tokenizer) if m.tokenizer is not None else 4096)
            cache[key] = wl.random_tokens(a.windows, a.max_length, vocab)
    return cache[key]


def longest(work: wl.Workload, n: int) -> wl.Workload:
    """The n longest windows (the first batches): enough to find the batch size that fits."""
    order = np.argsort(-(work.windows.end - work.windows.start), kind="stable")[:n]
    w = work.windows
    cut = wl.Windows(w.doc[order], w.start[order], w.end[order], w.score_from[order])
    return wl.Workload(work.corpus, cut, work.description)


def batch_sizes(b: harness.Bench, model: Any, work: wl.Workload, vocab: int, spec: str) -> dict[str, int]:
    """Batch per variant: `spec`, or with auto the largest each fits (ours: extract_ranks' own back-off)."""
    if spec != "auto":
        return dict.fromkeys(("floor", "ours", "naive"), int(spec))
    want = min(b.args.max_batch, len(work.windows))
    stats: dict[str, Any] = {}
    wl.ours(model, longest(work, want), vocab, want, stats=stats)
    size = {"ours": stats["batch_size"]}
    first = longest(work, size["ours"])
    size["floor"], _ = harness.fit_batch(
        lambda n: ref.floor(model, ref.make_batches(longest(first, n), n, b.device)), size["ours"]
    )
    total = lambda n: int(longest(first, n).windows.n_scored.sum())  # noqa: E731
    size["naive"], _ = harness.fit_batch(
        lambda n: ref.naive(model, ref.make_batches(longest(first, n), n, b.device), vocab, total(n)), size["floor"]
    )
    if b.device.type == "cuda" and size["naive"] > 1:  # the timed rounds also hold the floor's batches and
        size["naive"] //= 2  # ours' results: half what fitted alone (an H200 ran out at the full size)
    size["ours"] = size["floor"] = min(size["ours"], size["floor"])  # compared on the same batches
    return size


def target(kernel: str, cuda: bool) -> float:
    """ours / floor the target of each kernel (the CPU's chunked path: the old 1.10)."""
    return {"fused": 1.05, "chunked": 1.15 if cuda else 1.10}[kernel]


def measure(b: harness.Bench, m: wl.BenchModel, work: wl.Workload, vocab: int, spec: str) -> tuple[list[str], list[str]]:
    """Table rows, one a kernel: floor, ours per kernel and naive interleaved; and their agreement."""
    size = batch_sizes(b, m.model, work, vocab, spec)
    total = work.scored
    floor_batches = ref.make_batches(work, size["floor"], b.device)
    naive_batches = floor_batches if size["naive"] == size["floor"] else ref.make_batches(work, size["naive"], b.device)
    kernels = b.args.kernels
    steps = {
        "floor": lambda: ref.floor(m.model, floor_batches),
        **{k: (lambda k=k: wl.ours(m.model, work, vocab, size["ours"], kernel=k)) for k in kernels},
        "naive": lambda: ref.naive(m.model, naive_batches, vocab, total),
    }
    times, out = harness.interleave(steps, b.args.repeats, b.device, b.args.quiet_wait, warmup=not b.args.quick)
    f, n = times["floor"], times["naive"]
    rank, logprob = out["naive"]
    batch = f"{size['ours']}" + ("" if size["naive"] == size["ours"] else f" (naive {size['naive']})")
    rows, verdicts = [], []
    for k in kernels:
        o, arrays = times[k], out[k]
        mismatched = np.flatnonzero(rank != arrays.rank.astype(np.int64))
        ties = ref.near_ties(m.model, naive_batches, vocab, mismatched, arrays.rank)
        against_first = int((arrays.rank != out[kernels[0]].rank).sum())
        row = [
            m.name,
            k,
            batch,
            harness.rate(total, f.best),
            harness.rate(total, o.best),
            f"**{o.best / f.best:.2f}×**",
            " ".join(f"{r:.2f}" for r in harness.per_round(o, f)),
            f"{o.spread:.2f}",
            harness.rate(total, n.best),
            f"{n.best / f.best:.2f}×",
            f"{mismatched.size} / {total:,} ({ties})",
            f"{against_first} / {total:,}",
            f"{float(np.abs(logprob - arrays.logprob).max()):.1e}",
        ]
        if b.device.type == "cuda":
            row.append(" / ".join(f"{max(t.peak) / 2**30:.1f}" for t in (f, o, n)))
        row.append(f"{f.others_at_best:.0%} / {o.others_at_best:.0%}")
        goal = target(k, b.device.type == "cuda")
        met = "no target" if m.name in NO_TARGET else "met" if o.best / f.best <= goal else "missed"
        rows.append("| " + " | ".join(row) + " |")
        verdicts.append(f"{m.name} {k} batch {batch}: {o.best / f.best:.2f}× (≤ {goal:.2f}×: {met})")
    return rows, verdicts


def bf16_agreement(b: harness.Bench, m: wl.BenchModel, work: wl.Workload, vocab: int, reference: Any) -> str:
    """Rank mismatch rate of the bfloat16 model (float32 head, and its own head) against float32."""
    batch, fp32_head = harness.fit_batch(lambda n: wl.ours(m.model, work, vocab, n), 64)
    _, own_head = harness.fit_batch(lambda n: wl.ours(m.model, work, vocab, n, head_dtype=None), batch)
    cells = [m.name]
    for arrays in (fp32_head, own_head):
        bad = int((arrays.rank != reference.rank).sum())
        cells += [f"{bad:,} / {arrays.rank.size:,} ({bad / arrays.rank.size:.2%})"]
    cells.append(f"{float(np.abs(fp32_head.logprob - reference.logprob).mean()):.1e}")
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> str:
    b = options(argv)
    a = b.args
    rows, verdicts, bf16_rows, described, texts = [], [], [], [], []
    with harness.workspace() as tmp:
        cache: dict[Any, wl.Workload] = {}
        for name in (wl.resolve(n, a.quick) for n in a.models):
            load_dtype = torch.float32  # bfloat16 runs start in float32: the reference ranks
            m = wl.load_model(name, b.device, load_dtype, max(a.max_length, 128), a.ladder_root, a.device_map, tmp)
            work = workload(b, m, tmp, cache)
            vocab = m.vocab(work)
            columns = int(m.model.get_output_embeddings().weight.shape[0])
            described.append(f"{m.name} (|V| = {vocab:,} of {columns:,} output columns)")
            texts += [work.description] if work.description not in texts else []
            reference = None
            if b.dtype != torch.float32:
                _, reference = harness.fit_batch(lambda n, m=m, w=work, v=vocab: wl.ours(m.model, w, v, n), 64)
                m.model.to(b.dtype)
            for spec in a.batch_sizes:
                new_rows, new_verdicts = measure(b, m, work, vocab, spec)
                rows += new_rows
                verdicts += new_verdicts
                print("\n".join(new_rows), flush=True)
            if reference is not None:
                bf16_rows.append(bf16_agreement(b, m, work, vocab, reference))
            del m
            if b.device.type == "cuda":
                torch.cuda.empty_cache()
    peak = " | peak GiB floor / ours / naive" if b.device.type == "cuda" else ""
    real = all(name in wl.REAL_MODELS for name in a.models)
    source = "trained checkpoints of a workflow run (`--ladder-root`)" if a.ladder_root else "random init (seed 0)"
    if real:
        source = "real pretrained weights, dequantized from the GGUF files their packages ship"
    if a.device_map:
        source += f", loaded by the workflow's loader with device_map={a.device_map!r}"
    lines = [
        f"Models ({source}, {a.dtype}{' weights, float32 head' if b.dtype != torch.float32 else ''}): "
        + ", ".join(described)
        + f". Windows: {'; '.join(texts)}. tok/s counts scored tokens. Floor = `model(input_ids, attention_mask).logits` on the same padded, "
        f"length-sorted batches as `extract_ranks`. Best of {a.repeats}{'' if a.quick else ' after one warm-up round'}; rounds interleaved "
        "(floor, ours, naive, floor, ...). Ratios: time / floor time (lower is better), best / best and per round, "
        "sorted. `spread`: slowest / fastest round of ours. Naive mismatches: tokens whose naive rank differs from "
        "ours (in brackets: of which within a 1e-5 near-tie of the target); `vs first kernel`: tokens whose rank differs from "
        f"the {a.kernels[0]} kernel's. `others' CPU`: share of all cores "
        "used by other processes during the best floor / ours rounds.",
        "",
        "| model | kernel | batch | floor tok/s | ours tok/s | **ours / floor** | per round | spread | naive tok/s "
        f"| naive / floor | naive rank mismatches | vs first kernel | max abs Δ log p{peak} | others' CPU |",
        "|" + "---|" * (15 if peak else 14),
        *rows,
        "",
        "**Targets** (GPU goals): fused ≤ 1.05×, chunked ≤ 1.15× the floor's time. " + "; ".join(verdicts) + ".",
    ]
    if bf16_rows:
        lines += [
            "",
            f"{a.dtype} against float32 (the same weights, rounded): tokens whose rank differs.",
            "",
            "| model | float32 head (the default) | the model's own head (`head_dtype: model`) | mean abs Δ log p (float32 head) |",
            "|---|---|---|---|",
            *bf16_rows,
        ]
        if not a.ladder_root:
            lines.append("\nRandom weights give near-uniform logits, so this overstates a trained model's mismatches.")
    title = "Throughput: extraction vs the bare forward pass and a naive ranker"
    kind = "-trained" if a.ladder_root else "-real" if real else ""
    name = b.section("throughput") + kind + ("-device-map" if a.device_map else "")
    subtitle = {"-trained": " (trained checkpoints)", "-real": " (a real pretrained model)"}.get(kind, "")
    return b.finish(name, title + subtitle, "\n".join(lines))


if __name__ == "__main__":
    main()
