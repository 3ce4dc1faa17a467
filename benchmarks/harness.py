"""What every benchmark module shares: the command line, interleaved timing, machine facts, RESULTS.md.

A module builds its own workload, times it with `interleave`, and hands a Markdown body to
`Bench.finish`, which adds the machine facts and the command that reproduces the section and
replaces that one section of RESULTS.md (between `<!-- begin NAME -->` and `<!-- end NAME -->`),
so each module can be rerun alone. Nothing written names a path on the machine it ran on.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")  # lm-eval opens progress bars; not what we measure
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))  # this checkout's package, not an installed copy
RESULTS = REPO / "benchmarks" / "RESULTS.md"

import torch  # noqa: E402


def parser(description: str | None, repeats: int = 3) -> argparse.ArgumentParser:
    """The options every module takes; modules add their own."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"), help="model weights")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--repeats", type=int, default=repeats, help="timed rounds after one warm-up round")
    p.add_argument("--quick", action="store_true", help="tiny settings: checks the code runs, measures nothing")
    p.add_argument("--write", action="store_true", help="replace this module's section of --results")
    p.add_argument("--results", type=Path, default=RESULTS, help="Markdown file --write updates")
    p.add_argument(
        "--quiet-wait", type=float, default=0.0, help="before each round, wait up to this many s for a quiet CPU"
    )
    return p


@dataclass
class Bench:
    """One module's run: parsed options, device and dtype, and what the footer reports."""

    module: str
    args: argparse.Namespace
    argv: list[str]
    device: torch.device = field(init=False)
    dtype: torch.dtype = field(init=False)
    started: float = field(init=False)
    load_before: float = field(init=False)

    def __post_init__(self) -> None:
        if self.args.device == "cuda" and not torch.cuda.is_available():
            raise SystemExit(f"{self.module}: --device cuda, but torch {torch.__version__} sees no CUDA device")
        torch.set_num_threads(self.args.threads)
        self.device, self.dtype = torch.device(self.args.device), getattr(torch, self.args.dtype)
        self.started, self.load_before = time.perf_counter(), os.getloadavg()[0]

    def section(self, base: str) -> str:
        """Section name: one per module, device and dtype (`throughput-cuda-bfloat16`)."""
        return f"{base}-{self.args.device}-{self.args.dtype}"

    def finish(self, name: str, title: str, body: str, extra_facts: dict[str, str] | None = None) -> str:
        """Add machine facts and the reproducing command; print; write the section if --write."""
        wall = time.perf_counter() - self.started
        facts = {**machine_facts(self.device), **(extra_facts or {})}
        quick = "\n\n**Quick settings** (`--quick`): checks that the code runs; these numbers measure nothing."
        text = (
            f"## {title}\n\n{body.rstrip()}{quick if self.args.quick else ''}\n\n"
            f"Machine: {'; '.join(f'{k} {v}' for k, v in facts.items())}. Load average (1 min) "
            f"{self.load_before:.1f} before, {os.getloadavg()[0]:.1f} after; took {wall:.0f} s; "
            f"{time.strftime('%Y-%m-%d %H:%M')}, commit {commit()}.\n\n"
            f"```bash\n{command_line(self.module, self.argv)}\n```"
        )
        print(text, flush=True)
        if self.args.write:
            write_section(self.args.results, name, text)
        return text


def start(module: str, p: argparse.ArgumentParser, argv: list[str] | None) -> Bench:
    argv = list(sys.argv[1:] if argv is None else argv)
    return Bench(module, p.parse_args(argv), argv)


# --------------------------------------------------------------------------- timing


@dataclass
class Timing:
    """Repetitions of one step; the best is reported, the spread and others' CPU flag disturbance."""

    seconds: list[float] = field(default_factory=list)
    others: list[float] = field(default_factory=list)  # other processes' share of all CPUs during each
    peak: list[int] = field(default_factory=list)  # CUDA: max_memory_allocated during each (bytes)

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def spread(self) -> float:
        return max(self.seconds) / min(self.seconds)

    @property
    def others_at_best(self) -> float:
        return self.others[self.seconds.index(self.best)]


def per_round(a: Timing, b: Timing) -> list[float]:
    """a / b within each round, sorted: interleaving makes these robust to slow drifts in load."""
    return sorted(x / y for x, y in zip(a.seconds, b.seconds, strict=True))


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleave(
    steps: dict[str, Callable[[], Any]],
    repeats: int,
    device: torch.device,
    quiet_wait: float = 0.0,
    warmup: bool = True,
) -> tuple[dict[str, Timing], dict[str, Any]]:
    """One warm-up round, then `repeats` rounds A, B, C, A, B, C, ...; returns timings and last outputs.

    `warmup=False` (--quick, which measures nothing) leaves out the warm-up round: the fused kernel under
    Triton's interpreter (a GPU session's CPU rehearsal) would run each step twice for nothing.
    """
    times = {k: Timing() for k in steps}
    outputs: dict[str, Any] = {}
    for rep in range(0 if warmup else 1, repeats + 1):
        if rep and quiet_wait > 0:
            wait_quiet(quiet_wait)
        for key, fn in steps.items():
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            load: list[float] = []
            sync(device)
            with others_cpu(load):
                t0 = time.perf_counter()
                outputs[key] = fn()
                sync(device)
                seconds = time.perf_counter() - t0
            if rep:  # round 0 is the warm-up
                times[key].seconds.append(seconds)
                times[key].others.append(load[0])
                if device.type == "cuda":
                    times[key].peak.append(torch.cuda.max_memory_allocated(device))
    return times, outputs


def _busy_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot, from /proc/stat ((0, 0) where absent)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


@contextlib.contextmanager
def others_cpu(out: list[float]) -> Iterator[None]:
    """Append the share of all CPUs (0..1) that *other* processes used during the block."""
    busy0, total0 = _busy_ticks()
    own0 = sum(os.times()[:2])
    yield
    busy1, total1 = _busy_ticks()
    ticks = os.sysconf("SC_CLK_TCK")
    if total1 > total0:
        others = (busy1 - busy0) / ticks - (sum(os.times()[:2]) - own0)
        out.append(max(0.0, others / ((total1 - total0) / ticks)))
    else:
        out.append(float("nan"))


def wait_quiet(max_wait: float, threshold: float = 0.15) -> None:
    """Sleep in 1 s samples until other processes use < threshold of the CPUs, at most max_wait s."""
    deadline = time.monotonic() + max_wait
    while time.monotonic() < deadline:
        sample: list[float] = []
        with others_cpu(sample):
            time.sleep(1.0)
        if not sample[0] >= threshold:
            return


def fit_batch(run: Callable[[int], Any], batch: int) -> tuple[int, Any]:
    """Call run(batch), halving batch on out-of-memory; (the batch that fitted, its result)."""
    from rankscale.extract import is_out_of_memory

    while True:
        try:
            return batch, run(batch)
        except Exception as exc:
            if not is_out_of_memory(exc) or batch == 1:
                raise
        batch //= 2
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


# --------------------------------------------------------------------------- machine facts and report


def machine_facts(device: torch.device) -> dict[str, str]:
    """CPU, cores, library versions and threads, the accelerator; no paths."""
    cpu = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        cpu = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            cpu,
        )
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    facts = {
        "CPU": f"{cpu} ({os.cpu_count()} cores, {usable} usable)",
        "torch": f"{torch.__version__} ({torch.get_num_threads()} threads)",
        "transformers": importlib.metadata.version("transformers"),
        "numpy": importlib.metadata.version("numpy"),
        "Python": platform.python_version(),
        "device": device.type,
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        facts["device"] = (
            f"cuda: {props.name}, {props.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}, "
            f"{torch.cuda.device_count()} visible GPU(s)"
        )
    return facts


def commit() -> str:
    """Short hash of HEAD, marked when the working tree differs from it; BENCH_COMMIT where no git
    history travels (a GPU machine gets a copy of the working tree: benchmarks/gpu_session.sh)."""
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "")


def command_line(module: str, argv: list[str]) -> str:
    """The command that reproduces a section; absolute paths become placeholders."""

    def clean(arg: str) -> str:
        key, eq, value = arg.partition("=")
        if eq and os.path.isabs(value):
            return f"{key}=DIR"
        return "DIR" if os.path.isabs(arg) or arg.startswith("~") else shlex.quote(arg)

    return " ".join(["python", f"benchmarks/{module}.py", *map(clean, argv)])


HEADER = (
    "# Benchmarks\n\nEach section is written by one module of benchmarks/ (benchmarks/README.md) and ends with "
    "the command that reproduces it; `python benchmarks/run_all.py --write` regenerates them all.\n"
)


def write_section(path: Path, name: str, text: str) -> None:
    """Replace (or append) the `<!-- begin NAME -->` ... `<!-- end NAME -->` block, atomically."""
    doc = path.read_text() if path.exists() else HEADER
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in doc and end in doc:
        head, rest = doc.split(begin, 1)
        doc = head + block + rest.split(end, 1)[1]
    else:
        doc = doc.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(doc)
    tmp.replace(path)


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A scratch directory for tokenizers and checkpoints, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="rankscale-bench-") as tmp:
        yield Path(tmp)


def rate(tokens: int, seconds: float) -> str:
    return f"{tokens / seconds:,.0f}"


def mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"
