"""Peak memory of extraction against the naive full-logits ranker, with a 151,936-column head.

A Qwen2 model with Qwen2.5's output layer (151,936 columns, 151,665 real tokens, tied embeddings;
random init) scores windows of random token ids. Each row runs in a fresh spawned process, so
peaks of earlier work do not count: `baseline` is its memory once imports, model and data are in
place, `peak` its high-water mark (CPU: VmHWM, the resident set's; CUDA: max_memory_allocated);
`extraction` = peak - baseline. Variants:
- backbone: `model.base_model(...)` alone on the same batches (what any extraction pays);
- ours:     `extract_ranks` with the default head chunk (float32 head), per `--kernels` entry (on CUDA the
            fused rank kernel, which never writes a logit, and the chunked head);
- naive:    full logits + float32 log-softmax + argsort: one batch at 1 and 2 windows, extrapolated
            linearly to ours' batch; on CUDA also run at ours' batch, where it runs out of memory;
- back-off: ours asked for every window at once with too little memory: extract_ranks halves the
            batch until it fits. CUDA: a real limit (`set_per_process_memory_fraction`: the loaded
            model + --oom-headroom-mib); CPU: simulated (the backbone raises torch.OutOfMemoryError
            above a quarter of the windows), since a CPU allocation failure is not an exception torch
            types as out-of-memory. Its ranks must equal the `ours` row's.
Targets: at a batch where naive runs out (CUDA) or would need many GiB (CPU, extrapolated), ours adds at
most 1 GiB over the backbone alone; the fused kernel at most 0.5 GiB.

    python benchmarks/memory.py                                   # CPU: tiny body, 8 windows of 1024
    python benchmarks/memory.py --device cuda --dtype bfloat16    # Qwen2.5-0.5B-like, 64 windows of 1024
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

import harness
import references as ref
import torch
import workloads as wl


def options(argv: list[str] | None) -> harness.Bench:
    p = harness.parser(__doc__)
    p.add_argument("--model", help="a shape of workloads.SHAPES; default qwen2-tiny on CPU, qwen2.5-0.5b on CUDA")
    p.add_argument("--max-length", type=int, default=1024)
    p.add_argument("--windows", type=int, help="windows scored (default 8 on CPU, 64 on CUDA)")
    p.add_argument("--batch", type=int, help="ours' batch (default: every window)")
    p.add_argument("--oom-headroom-mib", type=int, default=1024, help="CUDA back-off row: memory left above the model")
    p.add_argument("--kernels", help="comma-separated head reductions of ours (default fused,chunked on CUDA, chunked on CPU)")
    b = harness.start("memory", p, argv)
    a, cuda = b.args, b.args.device == "cuda"
    a.model = wl.resolve(a.model or ("qwen2.5-0.5b" if cuda else "qwen2-tiny"), a.quick)
    if a.quick:
        a.max_length, a.windows = min(a.max_length, 256), 2
    a.windows = a.windows or (64 if cuda else 8)
    a.batch = a.batch or a.windows
    a.kernels = (a.kernels or ("fused,chunked" if cuda else "chunked")).split(",")
    return b


def rss() -> tuple[int, int]:
    """(current, peak) resident set size of this process: VmRSS and VmHWM (Linux).

    Not ru_maxrss: a spawned child starts by fork + exec, and exec folds the parent's RSS at fork
    into the child's ru_maxrss.
    """
    with contextlib.suppress(OSError, KeyError):
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return peak, peak


def child(
    variant: str,
    shape: str,
    batch: int,
    windows: int,
    length: int,
    device: str,
    dtype: str,
    threads: int,
    headroom_mib: int,
    kernel: str | None = None,
) -> dict[str, Any]:
    """In a fresh process: build the model and windows, run one variant, report its memory."""
    torch.set_num_threads(threads)
    dev = torch.device(device)
    m = wl.load_model(shape, dev, getattr(torch, dtype), length)
    vocab = m.real_vocab or int(m.model.get_output_embeddings().weight.shape[0])
    work = wl.random_tokens(windows, length, vocab)
    if variant == "naive":  # one batch: its peak is the peak, and argsort over |V| is slow
        work = wl.first_windows(work, batch)
    batches = ref.make_batches(work, batch, dev) if variant in ("naive", "backbone") else []
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        baseline = torch.cuda.memory_allocated(dev)
    else:
        baseline = rss()[0]
    stats: dict[str, Any] = {"batch_size": batch}
    started = time.perf_counter()
    out: dict[str, Any] = {}
    try:
        if variant == "backbone":
            with torch.inference_mode():
                for b in batches:
                    m.model.base_model(input_ids=b.input_ids, attention_mask=b.attention_mask)
        elif variant == "naive":
            ref.naive(m.model, batches, vocab, work.scored)
        else:
            if variant == "backoff":
                held = torch.cuda.memory_reserved(dev) if dev.type == "cuda" else 0
                limit_memory(m.model, dev, held, headroom_mib, max(1, batch // 4))
            ranks = wl.ours(m.model, work, vocab, batch, stats=stats, kernel=kernel).rank
            out["ranks_sha"] = hashlib.sha256(ranks.tobytes()).hexdigest()[:12]
    except Exception as exc:
        from rankscale.extract import is_out_of_memory

        if not is_out_of_memory(exc):
            raise
        out["error"] = "out of memory"
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        peak = torch.cuda.max_memory_allocated(dev)
    else:
        peak = rss()[1]
    seconds = time.perf_counter() - started
    return {
        **out,
        "baseline": baseline,
        "peak": peak,
        "seconds": seconds,
        "tokens": work.scored,
        "batch_used": stats["batch_size"],
    }


def limit_memory(model: Any, device: torch.device, held: int, headroom_mib: int, cpu_cap: int) -> None:
    """CUDA: cap this process at what it holds + headroom. CPU: fail batches above cpu_cap windows."""
    if device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
        index = device.index if device.index is not None else torch.cuda.current_device()  # it refuses a bare 'cuda'
        torch.cuda.set_per_process_memory_fraction(min(1.0, (held + headroom_mib * 2**20) / total), index)
        return

    def refuse(module: Any, args: Any, kwargs: Any) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None and ids.shape[0] > cpu_cap:
            raise torch.OutOfMemoryError(f"simulated: batch of {ids.shape[0]} windows > {cpu_cap}")

    model.base_model.register_forward_pre_hook(refuse, with_kwargs=True)


def _entry(queue: Any, kwargs: dict[str, Any]) -> None:
    try:
        queue.put(child(**kwargs))
    except BaseException as exc:  # report, don't leave the parent waiting
        queue.put({"error": repr(exc)[:300]})


def spawn(**kwargs: Any) -> dict[str, Any]:
    """One measurement in a fresh `spawn` process."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_entry, args=(queue, kwargs))
    proc.start()
    try:
        result = queue.get(timeout=1800)
    finally:
        proc.join(timeout=60)
    if proc.exitcode not in (0, None):
        result = {"error": f"child exited with {proc.exitcode}"}
    return result


def main(argv: list[str] | None = None) -> str:
    b = options(argv)
    a, cuda = b.args, b.device.type == "cuda"
    shape = wl.SHAPES[a.model]
    runs = [("backbone", a.batch, ""), *((f"ours {k}", a.batch, "") for k in a.kernels)]
    runs += [("naive", n, "one batch") for n in (1, 2)]
    runs += [("naive", a.batch, "one batch")] if cuda and a.batch > 2 else []
    runs += [("backoff", a.windows, "real limit" if cuda else "simulated out-of-memory")]
    common = {"shape": a.model, "windows": a.windows, "length": a.max_length, "device": a.device, "dtype": a.dtype}
    res: dict[tuple[str, int], dict[str, Any]] = {}
    rows = []
    for variant, batch, note in runs:
        kernel = variant.split(" ")[1] if variant.startswith("ours ") else a.kernels[0]
        r = spawn(variant=variant.split(" ")[0], batch=batch, threads=a.threads, headroom_mib=a.oom_headroom_mib,
                  kernel=kernel, **common)  # fmt: skip
        res[(variant, batch)] = r
        if "peak" not in r:
            rows.append(f"| {variant} | {batch} | — | — | — | — | — | failed: {r['error']} |")
            continue
        if r.get("error"):
            note = f"{note}; **{r['error']}**"
        if variant == "backoff":
            same = r.get("ranks_sha") == res[(f"ours {a.kernels[0]}", a.batch)].get("ranks_sha")
            note += (
                f"; asked {batch}, settled on {r['batch_used']}; ranks {'identical to' if same else 'DIFFER from'} ours"
            )
        extra = r["peak"] - r["baseline"]
        rows.append(
            f"| {variant} | {batch} | {r['tokens']:,} | {harness.mib(r['baseline'])} | {harness.mib(r['peak'])} | "
            f"{harness.mib(extra)} | {r['seconds']:.1f} | {note.lstrip('; ')} |"
        )
        print(rows[-1], flush=True)
    one, two = res[("naive", 1)], res[("naive", 2)]
    if "peak" in one and "peak" in two and not one.get("error") and not two.get("error"):
        per = (two["peak"] - two["baseline"]) - (one["peak"] - one["baseline"])
        extra = one["peak"] - one["baseline"] + per * (a.batch - 1)
        rows.insert(
            len(rows) - 1,  # before the back-off row
            f"| naive (extrapolated) | {a.batch} | — | {harness.mib(one['baseline'])} | {harness.mib(one['baseline'] + extra)} "
            f"| {harness.mib(extra)} | — | linear in batch from batches 1 and 2 |",
        )
    verdicts = []
    back = res[("backbone", a.batch)]
    for k in a.kernels:
        ours, limit = res[(f"ours {k}", a.batch)], 0.5 if k == "fused" else 1.0
        if "peak" in ours and "peak" in back and not ours.get("error"):
            over = (ours["peak"] - ours["baseline"]) - (back["peak"] - back["baseline"])
            met = "met" if over <= limit * 2**30 else "missed"
            verdicts.append(f"ours ({k}) adds {over / 2**30:.2f} GiB over the backbone alone (≤ {limit} GiB: {met})")
        else:
            verdicts.append(f"ours ({k}) not measured (a run failed)")
    verdict = "; ".join(verdicts)
    full = a.batch * a.max_length * shape.columns * 4 / 2**30
    what = "torch.cuda.max_memory_allocated" if cuda else "resident set size (VmRSS / VmHWM)"
    lines = [
        f"`{a.model}` ({shape.arch}, hidden {shape.hidden}, {shape.layers} layers, {shape.columns:,} output columns, "
        f"{shape.real_vocab:,} real tokens ranked; {a.dtype} weights, float32 head), {a.windows} windows of "
        f"{a.max_length} random token ids. Memory: {what}. For scale: float32 logits of one batch of {a.batch} × "
        f"{a.max_length} take {full:.1f} GiB.",
        "",
        "| variant | batch | tokens | baseline MiB | peak MiB | extraction MiB | seconds | note |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"**Targets** at batch {a.batch}: fused ≤ the backbone alone + 0.5 GiB, chunked + 1 GiB: {verdict}.",
    ]
    return b.finish(b.section("memory"), "Peak memory with a 151,936-column output layer", "\n".join(lines))


if __name__ == "__main__":
    main()
