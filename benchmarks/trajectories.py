"""Token trajectories (docs/science.md, "Token trajectories"): memory and time of one family x dataset job, and the
coverage of its intervals on synthetic families with document effects.

`memory`: a family of `--models` sizes x `--tokens` scored tokens (synthetic ranks, documents of 500 tokens, one
frequency stratum kind, k = 1, 10, 50, 100, B = 1000), each model's rank array made only when the job reads it, as
`load_rank_arrays` would; peak memory is tracemalloc's (numpy's arrays included) and the process's peak RSS.

`coverage`: a population of documents (lengths 20-200 tokens) whose tokens' log ranks fall with log S, each token
at its own rate, with a document effect shared by its tokens; each simulation draws `--documents` documents and
checks whether each quantity's 95% interval holds its value on the whole population (a ratio of population totals).

    python benchmarks/trajectories.py memory [--models 25] [--tokens 1000000]
    python benchmarks/trajectories.py coverage [--sims 300] [--documents 200]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from rankscale.bootstrap import Resampling
from rankscale.rankfile import RankArrays
from rankscale.strata import StrataSettings
from rankscale.trajectories import TrackedModel, trajectories
from rankscale.windows import WindowSpec

KS = [1, 10, 50, 100]
STRATA = StrataSettings(["frequency"], {"frequency": [10, 100, 1000]}, KS)
VOCAB = 50_000


def _family(n: int, S0: int = 10**6) -> list[TrackedModel]:
    return [TrackedModel(f"m{i}", int(S0 * 1.4**i), None, f"m{i}", f"m{i}", None, True) for i in range(n)]


def memory(models: int, tokens: int, replicates: int) -> None:
    per_doc = 500
    doc = (np.arange(tokens) // per_doc).astype(np.uint32)
    pos = (np.arange(tokens) % per_doc + 1).astype(np.uint32)
    target = np.random.default_rng(0).zipf(1.2, tokens).clip(1, VOCAB - 1).astype(np.uint32)
    base = np.random.default_rng(1).lognormal(3.0, 2.0, tokens)
    meta = {"tokens_sha256": "t", "n_tokens": tokens, "windows": {"max_length": per_doc}}

    def read(i: int) -> tuple[RankArrays, dict]:
        rank = np.clip(base * np.random.default_rng(10 + i).lognormal(-0.05 * i, 0.5, tokens), 1, VOCAB)
        return RankArrays(rank.astype(np.uint32), np.zeros(tokens, np.float32), doc, pos, target), meta

    n_docs = int(doc[-1]) + 1
    fam = _family(models)
    floor = tokens * (4 * 3 + 8)  # the shared doc/pos/target and one float64 base the synthetic loader keeps
    tracemalloc.start()
    start = time.perf_counter()
    result = trajectories("f", "d", fam, read, Resampling(np.arange(n_docs), n_docs, replicates, 0, "d"), KS, STRATA,
                          WindowSpec(per_doc, None, None), None)  # fmt: skip
    wall = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    ranks = models * tokens * 4
    print(f"## Token trajectories: one family x dataset job, {models} models x {tokens:,} tokens\n")
    print(f"- the aligned ranks, [models, tokens] uint32: {ranks / 2**20:.0f} MiB")
    print(f"- peak traced memory (numpy included) during the job: {peak / 2**20:.0f} MiB "
          f"(of which the synthetic inputs the loader keeps: {floor / 2**20:.0f} MiB)")  # fmt: skip
    print(f"- peak RSS of the process: {rss:.0f} MiB")
    print(f"- wall time: {wall:.1f} s ({n_docs} documents, {len(result.strata)} strata, k = {KS}, B = {replicates})")


def population(n_docs: int, sizes: int, seed: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """(document of each token, ranks per size): log R = base + u_doc - rate_t * j + noise, rate_t heterogeneous."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 201, n_docs)
    doc = np.repeat(np.arange(n_docs), lengths)
    u = rng.normal(0, 0.8, n_docs)[doc]
    base = rng.normal(2.5, 1.8, doc.size) + u
    rate = rng.gamma(2.0, 0.15, doc.size) * (1 + 0.5 * rng.normal(0, 0.3, n_docs)[doc])
    ranks = [np.clip(np.exp(base - rate * j + rng.normal(0, 0.6, doc.size)), 1, VOCAB).astype(np.uint32)
             for j in range(sizes)]  # fmt: skip
    return doc, ranks


def shares(result) -> dict[str, tuple[float, np.ndarray]]:  # noqa: ANN001
    """(point, replicates) of the quantities checked: gained, lost per pair and learned_at per size at k = 1, 10."""
    out = {}
    for name, total in (("point", result.point), ("rep", result.replicates)):
        n = total["tokens"][..., 0]
        for i, k in enumerate(result.ks):
            for j in range(len(result.sizes) - 1):
                for what in ("gained", "lost"):
                    out.setdefault(f"{what} {j}->{j + 1}, k={k}", {})[name] = total[what][..., 0, i, j] / n
            for j in range(len(result.sizes) + 2):
                out.setdefault(f"learning code {j}, k={k}", {})[name] = total["learning"][..., 0, i, j] / n
    return {q: (float(v["point"]), v["rep"]) for q, v in out.items()}


def run_family(doc: np.ndarray, ranks: list[np.ndarray], replicates: int, seed: int):  # noqa: ANN201
    n = int(doc.max()) + 1
    pos = np.zeros(doc.size, dtype=np.uint32)
    starts = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])
    pos = (np.arange(doc.size) - np.repeat(starts, np.diff(np.r_[starts, doc.size])) + 1).astype(np.uint32)
    target = np.zeros(doc.size, dtype=np.uint32)
    meta = {"tokens_sha256": "t", "n_tokens": doc.size}
    arrays = [RankArrays(r, np.zeros(doc.size, np.float32), doc.astype(np.uint32), pos, target) for r in ranks]
    return trajectories("f", "d", _family(len(ranks)), lambda i: (arrays[i], meta),
                        Resampling(np.arange(n), n, replicates, seed, "d"), [1, 10],
                        StrataSettings([], {}, [1, 10]), WindowSpec(10**6, None, None), None)  # fmt: skip


def coverage(sims: int, documents: int, replicates: int, sizes: int = 4) -> None:
    doc, ranks = population(20_000, sizes, seed=0)
    truth = {q: p for q, (p, _) in shares(run_family(doc, ranks, 1, 0)).items()}
    hits = {q: 0 for q in truth}
    rng = np.random.default_rng(1)
    start = time.perf_counter()
    for s in range(sims):
        chosen = np.sort(rng.choice(20_000, documents, replace=False))
        keep = np.isin(doc, chosen)
        sample_doc = np.searchsorted(chosen, doc[keep])
        result = run_family(sample_doc, [r[keep] for r in ranks], replicates, s)
        for q, (_, reps) in shares(result).items():
            low, high = np.nanquantile(reps, [0.025, 0.975])
            hits[q] += bool(low <= truth[q] <= high)
    wall = time.perf_counter() - start
    cover = np.array([100 * h / sims for h in hits.values()])
    print(f"## Token trajectories: coverage of the 95% intervals ({sims} samples of {documents} documents)\n")
    print(f"{len(hits)} quantities (gained and lost between each two consecutive of {sizes} sizes, each learning "
          f"category, k = 1 and 10), population of 20,000 documents: coverage {cover.mean():.1f}% on average, "
          f"{cover.min():.1f}-{cover.max():.1f}% per quantity (binomial sd of one: "
          f"{100 * np.sqrt(0.95 * 0.05 / sims):.1f} points); {wall:.0f} s\n")  # fmt: skip
    for q, h in hits.items():
        print(f"- {q}: truth {truth[q]:.4f}, coverage {100 * h / sims:.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["memory", "coverage"])
    parser.add_argument("--models", type=int, default=25)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--sims", type=int, default=300)
    parser.add_argument("--documents", type=int, default=200)
    args = parser.parse_args()
    if args.what == "memory":
        memory(args.models, args.tokens, args.replicates)
    else:
        coverage(args.sims, args.documents, args.replicates)


if __name__ == "__main__":
    main()
