"""Window planning and the metrics computed from rank arrays, against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankscale.metrics import METRICS
from rankscale.rankfile import RankArrays
from rankscale.statistics import (
    Totals,
    empirical_runs,
    hit_pairs,
    hits_per_document,
    k_grid,
    rank_histogram,
    run_windows,
    segment_starts,
)
from rankscale.summary import per_document
from rankscale.windows import WindowSpec, plan_windows

# --- windows -------------------------------------------------------------------------------

SPECS = [
    WindowSpec(max_length=2, stride=1, max_windows_per_doc=None),
    WindowSpec(max_length=8, stride=1, max_windows_per_doc=None),
    WindowSpec(max_length=8, stride=3, max_windows_per_doc=None),
    WindowSpec(max_length=8, stride=7, max_windows_per_doc=None),
    WindowSpec(max_length=16, stride=None, max_windows_per_doc=None),  # stride None: max_length // 2
    WindowSpec(max_length=16, stride=5, max_windows_per_doc=3),
    WindowSpec(max_length=33, stride=32, max_windows_per_doc=None),
]


def random_lengths(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 120, size=60)
    return np.concatenate([[0, 1, 2, 3], lengths, [7, 8, 9, 16, 17, 33, 34]])


def scored_targets(windows, d: int) -> list[int]:
    out: list[int] = []
    for w in np.nonzero(windows.doc == d)[0]:
        out.extend(range(int(windows.score_from[w]), int(windows.end[w])))
    return out


@pytest.mark.parametrize("spec", SPECS, ids=repr)
@pytest.mark.parametrize("seed", [0, 1])
def test_plan_windows_full_coverage(spec: WindowSpec, seed: int) -> None:
    lengths = random_lengths(seed)
    w = plan_windows(lengths, spec)
    assert np.all(w.end - w.start <= spec.max_length)
    assert np.all(w.start >= 0) and np.all(w.score_from >= w.start + 1) and np.all(w.end > w.score_from)
    np.testing.assert_array_equal(w.n_scored, w.end - w.score_from)
    assert np.all(np.diff(w.doc) >= 0)  # windows in document order
    stride = spec.resolved_stride()
    for d, n in enumerate(lengths.tolist()):
        if n < 2:
            assert not np.any(w.doc == d)
            continue
        assert np.all(w.end[w.doc == d] <= n)
        targets = scored_targets(w, d)
        if spec.max_windows_per_doc is None:
            assert sorted(targets) == list(range(1, n)), "every target exactly once"
        else:
            assert len(targets) == len(set(targets))
            assert targets == list(range(1, len(targets) + 1))
            assert np.sum(w.doc == d) <= spec.max_windows_per_doc
        # context: a later window starts max_length before its end (or at 0), so every
        # target after the first window has at least max_length - stride tokens before it
        sel = np.nonzero(w.doc == d)[0]
        for i in sel[1:]:
            assert w.start[i] == max(0, w.end[i] - spec.max_length)
            assert w.score_from[i] - w.start[i] >= min(spec.max_length - stride, w.score_from[i])


@pytest.mark.parametrize("max_length", [2, 5, 16, 512])
def test_one_window_per_document_scores_first_targets(max_length: int) -> None:
    lengths = random_lengths(3)
    w = plan_windows(lengths, WindowSpec(max_length=max_length, stride=None, max_windows_per_doc=1))
    kept = [d for d, n in enumerate(lengths.tolist()) if n >= 2]
    assert w.doc.tolist() == kept
    for i, d in enumerate(kept):
        n = int(lengths[d])
        assert (w.start[i], w.score_from[i], w.end[i]) == (0, 1, min(n, max_length))
        assert scored_targets(w, d) == list(range(1, min(n, max_length)))


@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_first_target_after_added_special_tokens(spec: WindowSpec) -> None:
    """After a tokenizer-added BOS (first target 2) every later target is scored exactly once."""
    lengths = random_lengths(4)
    first = np.where(np.arange(len(lengths)) % 2 == 0, 2, 1)
    w = plan_windows(lengths, spec, first)
    assert np.all(w.end - w.start <= spec.max_length)
    for d, (n, f) in enumerate(zip(lengths.tolist(), first.tolist(), strict=True)):
        targets = scored_targets(w, d)
        if min(n, spec.max_length) <= f:
            assert targets == []
        elif spec.max_windows_per_doc is None:
            assert sorted(targets) == list(range(f, n))
        else:
            assert targets == list(range(f, f + len(targets))) and len(targets) == len(set(targets))
    # with first target 1 everywhere, the same windows as without the argument
    plain, same = plan_windows(lengths, spec), plan_windows(lengths, spec, np.ones(len(lengths), dtype=int))
    for a, b in zip(
        (plain.doc, plain.start, plain.end, plain.score_from),
        (same.doc, same.start, same.end, same.score_from),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)


def test_plan_windows_empty_and_short() -> None:
    w = plan_windows(np.array([0, 1, 1]), WindowSpec(max_length=4, stride=2, max_windows_per_doc=None))
    assert len(w) == 0 and w.doc.shape == (0,)
    w = plan_windows(np.array([], dtype=np.int64), WindowSpec(max_length=4, stride=2, max_windows_per_doc=None))
    assert len(w) == 0


def test_plan_windows_worked_example() -> None:
    w = plan_windows(np.array([10]), WindowSpec(max_length=4, stride=2, max_windows_per_doc=None))
    rows = list(zip(w.start.tolist(), w.end.tolist(), w.score_from.tolist(), strict=True))
    assert rows == [(0, 4, 1), (2, 6, 4), (4, 8, 6), (6, 10, 8)]


@pytest.mark.parametrize(
    "spec",
    [
        WindowSpec(8, 0, max_windows_per_doc=None),
        WindowSpec(8, 8, max_windows_per_doc=None),
        WindowSpec(8, -1, max_windows_per_doc=None),
        WindowSpec(8, 9, max_windows_per_doc=None),
        WindowSpec(1, None, max_windows_per_doc=None),
    ],
    ids=repr,
)
def test_invalid_window_spec_raises(spec: WindowSpec) -> None:
    with pytest.raises(ValueError):
        plan_windows(np.array([20]), spec)


# --- metrics -------------------------------------------------------------------------------


def arrays_of(rank: np.ndarray, logprob: np.ndarray) -> RankArrays:
    zeros = np.zeros(rank.size, dtype=np.uint32)
    return RankArrays(
        rank=rank.astype(np.uint32), logprob=logprob.astype(np.float32), doc=zeros, pos=zeros, target=zeros
    )


def totals(arrays: RankArrays, ks: list[int]) -> Totals:
    """Point totals as a summary computes them: every per-document statistic summed over documents."""
    _, stats = per_document(arrays, ks, [], [])
    return Totals({name: value.sum(axis=0) for name, value in stats.items()})


def test_rbp_from_totals_matches_direct_mean() -> None:
    rng = np.random.default_rng(0)
    vocab = 1000
    rank = np.minimum(rng.geometric(0.01, size=20_000), vocab).astype(np.uint32)
    hist = rank_histogram(rank, vocab)
    assert hist.shape == (vocab + 1,) and hist[0] == 0 and hist.sum() == rank.size
    ks = [1, 2, 3, 10, 50, 100, 999, 1000]
    sums = totals(arrays_of(rank, -np.ones(rank.size)), ks)
    rbp = METRICS["rbp"].compute(sums)
    for k, value in zip(ks, rbp, strict=True):
        assert value == pytest.approx(np.mean(rank <= k), abs=1e-15)
    assert rbp[-1] == 1.0
    # replicates: totals with leading axes give one row of RBP_k per replicate
    stacked = Totals({key: np.stack([v, 2 * v]) for key, v in sums.items()})
    np.testing.assert_array_equal(METRICS["rbp"].compute(stacked), np.stack([rbp, rbp]))


def test_rank_histogram_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        rank_histogram(np.array([0, 1, 2]), 10)
    with pytest.raises(ValueError):
        rank_histogram(np.array([1, 11]), 10)


@pytest.mark.parametrize("vocab", [4096, 50277, 151665])
def test_k_grid(vocab: int) -> None:
    ks = k_grid(vocab, 12, [1, 10, 50, 100, 1000, 20000, 30000])
    assert len(ks) >= 40
    assert ks == sorted(set(ks)) and ks[0] == 1 and ks[-1] == vocab
    assert all(1 <= k <= vocab for k in ks)
    for k in (1, 10, 50, 100, 1000):
        assert k in ks
    for k in (20000, 30000):
        assert (k in ks) == (k <= vocab)
    assert set(range(1, 11)) <= set(ks)
    # log-spaced: no decade is empty and consecutive ratios stay bounded above 10
    ratios = np.array(ks[10:][1:]) / np.array(ks[10:][:-1])
    assert ratios.max() < 1.5


def test_k_grid_small_vocab() -> None:
    assert k_grid(1, 12, [1]) == [1]
    assert k_grid(7, 12, [1, 10]) == list(range(1, 8))
    assert max(k_grid(300, 12, [1000])) == 300 and 1000 not in k_grid(300, 12, [1000])
    with pytest.raises(ValueError):
        k_grid(0, 12, [])


def test_cross_entropy_from_totals() -> None:
    rng = np.random.default_rng(1)
    logprob = -rng.exponential(2.5, size=100_001).astype(np.float32)
    rank = np.ones(logprob.size, dtype=np.uint32)
    sums = totals(arrays_of(rank, logprob), [1])
    ce = METRICS["ce"].compute(sums)
    assert ce == pytest.approx(-math.fsum(logprob.astype(np.float64)) / logprob.size, rel=1e-12)
    assert ce == -np.mean(logprob, dtype=np.float64)  # bit for bit the float64 mean
    two = totals(arrays_of(np.ones(2), np.array([-1.0, -3.0])), [1])
    assert METRICS["ce"].compute(two) == 2.0


def brute_force_runs(rank: np.ndarray, doc: np.ndarray, pos: np.ndarray, k: int, n: int) -> tuple[int, int]:
    """All length-n windows of consecutive positions inside one document; how many are all <= k."""
    total = hit = 0
    for i in range(len(rank) - n + 1):
        consecutive = all(doc[i + j] == doc[i] and pos[i + j] == pos[i] + j for j in range(n))
        if consecutive:
            total += 1
            hit += all(rank[i + j] <= k for j in range(n))
    return total, hit


def run_fixture(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Documents of varied length, some with gaps in pos, some with a single scored token."""
    rng = np.random.default_rng(seed)
    docs, positions = [], []
    for d in range(40):
        n = int(rng.choice([1, 1, 2, 3, 5, 12, 30]))
        pos = np.arange(1, n + 1)
        if n > 4 and rng.random() < 0.5:  # drop some positions: gaps break runs
            keep = rng.random(n) > 0.25
            pos = pos[keep]
        docs.append(np.full(pos.size, d))
        positions.append(pos)
    doc = np.concatenate(docs).astype(np.uint32)
    pos = np.concatenate(positions).astype(np.uint32)
    rank = rng.choice([1, 1, 1, 2, 3, 8, 40, 500], size=doc.size).astype(np.uint32)
    return rank, doc, pos


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_empirical_runs_vs_brute_force(seed: int) -> None:
    rank, doc, pos = run_fixture(seed)
    ks, ns = [1, 3, 10, 1000], [1, 2, 3, 5, 12, 40]
    rows = empirical_runs(rank, doc, pos, ks, ns)
    assert [(r["k"], r["N"]) for r in rows] == [(k, n) for k in ks for n in ns]
    for row in rows:
        total, hit = brute_force_runs(rank, doc, pos, row["k"], row["N"])
        assert row["n_runs"] == total
        if total:
            assert row["empirical"] == pytest.approx(hit / total, abs=1e-15)
        else:
            assert math.isnan(row["empirical"])
    by = {(r["k"], r["N"]): r for r in rows}
    assert by[(1, 1)]["empirical"] == pytest.approx(np.mean(rank <= 1))
    assert by[(1000, 5)]["empirical"] == 1.0


def test_empirical_runs_across_document_boundary() -> None:
    """Consecutive positions in different documents are not a run; neither are gaps."""
    doc = np.array([0, 0, 1, 1, 1, 2, 2], dtype=np.uint32)
    pos = np.array([1, 2, 3, 4, 6, 1, 2], dtype=np.uint32)
    rank = np.ones(7, dtype=np.uint32)
    starts = segment_starts(doc, pos)
    assert starts.tolist() == [True, False, True, False, True, True, False]
    row = empirical_runs(rank, doc, pos, [1], [2, 3])
    assert row[0]["n_runs"] == 3 and row[0]["empirical"] == 1.0
    assert row[1]["n_runs"] == 0 and math.isnan(row[1]["empirical"])
    row_of = np.array([0, 0, 1, 1, 1, 2, 2])
    assert run_windows(rank <= 1, starts, row_of, [1, 2], 3).tolist() == [[2, 1], [3, 1], [2, 1]]


@pytest.mark.parametrize("seed", [0, 1])
def test_per_document_runs_and_pairs_vs_brute_force(seed: int) -> None:
    rank, doc, pos = run_fixture(seed)
    starts = segment_starts(doc, pos)
    docs, row = np.unique(doc, return_inverse=True)
    for k in (1, 3, 10):
        mask = rank <= k
        per_doc = run_windows(mask, starts, row, [1, 2, 5], len(docs))
        pairs, prev_hit, both = hit_pairs(mask, starts, row, len(docs))
        for r, d in enumerate(docs):
            sel = doc == d
            for j, n in enumerate([1, 2, 5]):
                assert per_doc[r, j] == brute_force_runs(rank[sel], doc[sel], pos[sel], k, n)[1]
            consecutive = [i for i in np.nonzero(sel)[0][1:] if pos[i] == pos[i - 1] + 1]
            assert pairs[r] == len(consecutive)
            assert prev_hit[r] == sum(mask[i - 1] for i in consecutive)
            assert both[r] == sum(mask[i - 1] and mask[i] for i in consecutive)


def test_empirical_runs_empty() -> None:
    empty = np.zeros(0, dtype=np.uint32)
    rows = empirical_runs(empty, empty, empty, [1], [1, 2])
    assert all(r["n_runs"] == 0 and math.isnan(r["empirical"]) for r in rows)


def test_hits_per_document_match_a_count_per_k() -> None:
    """The one-pass count of hits per document equals counting each k on its own, any k order, ties at k."""
    rng = np.random.default_rng(1)
    for trial in range(20):
        n, n_docs = int(rng.integers(1, 5000)), int(rng.integers(1, 50))
        rank = rng.integers(1, 5000, n).astype(np.uint32)
        row = rng.integers(0, n_docs, n)
        ks = [int(k) for k in rng.choice(np.arange(1, 6000), int(rng.integers(1, 40)), replace=False)]
        ks = sorted(ks) if trial % 2 else ks
        ks[0] = int(rank[0])  # a rank exactly at k counts
        reference = np.stack([np.bincount(row[rank <= k], minlength=n_docs) for k in ks], axis=1)
        np.testing.assert_array_equal(hits_per_document(rank, row, n_docs, ks), reference)
