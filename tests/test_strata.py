"""Strata of scored tokens (`rankscale.strata`): partitions, definitions, planted laws, coverage.

1. Every stratum kind partitions the scored tokens exactly: token counts and integer hits add up to the
   whole array's, per document, in total and in every bootstrap replicate; the strata's RBP_k and CE,
   weighted by their shares, give the whole array's.
2. The definitions against brute force: frequency ranks by a direct count, context lengths from the windows
   of the true document lengths (documents cut by `max_windows_per_doc`, a BOS before the first target),
   the context bins no target reaches left out, the kind stratum the kind table's.
3. Laws planted per frequency bin (a different exponent each) are recovered through `summarize` and the
   strata tables, each within its interval, and their difference is found by the paired contrast.
4. A stratum's replicates resample documents: each is the dataset's document draw (`resample_counts`) times
   the documents' own stratum sums, the brute-force per-document counts. How often the intervals of a stratum's
   exponent then cover a planted one when tokens within a document are correlated (the document bootstrap's do,
   a token bootstrap's would not) is a Monte Carlo study: benchmarks/strata_coverage.py (RESULTS.md).
5. A family of one model still gets its strata rows with intervals, and note rows in the law tables.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankscale.bootstrap import resample_counts
from rankscale.identity import OWN_SHA
from rankscale.laws import FORMS
from rankscale.metrics import METRICS
from rankscale.rankfile import RankArrays
from rankscale.statistics import Totals
from rankscale.strata import (
    STRATA,
    StrataSettings,
    StrataTokens,
    assign,
    bin_labels,
    binned,
    context_lengths,
    frequency_ranks,
)
from rankscale.summary import ModelInfo, Resampling, Summary, SummarySettings, summarize
from rankscale.tables import Replicates, TableSettings, build_table
from rankscale.tables.selection import ONE_SIZE
from rankscale.tables.strata import strata_contrasts_table, strata_fits_table, stratum_rows
from rankscale.token_kinds import KINDS
from rankscale.windows import WindowSpec, plan_windows

POWER_LAW = FORMS["power_law"]
LEVEL = 0.95


# --- synthetic rank arrays, laid out as extraction's windows score them ------------------------------------


@dataclass(frozen=True)
class Corpus:
    """Documents as the token file holds them: true lengths, first scored positions (2 after a BOS), and the
    (doc, pos) of every target the windows score, in token-file order."""

    lengths: np.ndarray
    first: np.ndarray
    spec: WindowSpec
    doc: np.ndarray
    pos: np.ndarray
    context: np.ndarray  # brute force: per target, its position minus its window's start

    @classmethod
    def of(cls, lengths: np.ndarray, first: np.ndarray, spec: WindowSpec) -> Corpus:
        w = plan_windows(lengths, spec, first)
        doc, pos, context = [], [], []
        for d, start, score_from, end in zip(w.doc, w.start, w.score_from, w.end, strict=True):
            for p in range(int(score_from), int(end)):
                doc.append(int(d))
                pos.append(p)
                context.append(p - int(start))
        return cls(lengths, first, spec, np.array(doc, np.uint32), np.array(pos, np.uint32), np.array(context))

    @property
    def n_docs(self) -> int:
        return len(self.lengths)


def random_corpus(rng: np.random.Generator, n_docs: int, spec: WindowSpec, max_length: int = 130) -> Corpus:
    """Documents of 2..max_length tokens, every third with a BOS (first target 2); a BOS document of two tokens
    scores nothing (a gap in the document numbers)."""
    lengths = rng.integers(2, max_length, n_docs)
    lengths[[1, 5]] = [2, 3]
    first = np.where(np.arange(n_docs) % 3 == 0, 2, 1)
    first[1] = 2  # BOS + one text token: no target
    return Corpus.of(lengths, first, spec)


def zipf_targets(rng: np.random.Generator, n: int, vocab: int, exponent: float = 1.1) -> np.ndarray:
    p = np.arange(1, vocab + 1, dtype=np.float64) ** -exponent
    ids = rng.permutation(vocab)  # frequent tokens are not the small ids
    return ids[rng.choice(vocab, size=n, p=p / p.sum())].astype(np.uint32)


def random_arrays(rng: np.random.Generator, corpus: Corpus, vocab: int) -> RankArrays:
    n = corpus.doc.size
    target = zipf_targets(rng, n, vocab)
    rank = np.where(rng.random(n) < 0.4, 1, np.exp(rng.uniform(0, np.log(vocab), n)).astype(np.int64))
    rank = np.clip(rank, 1, vocab).astype(np.uint32)
    logprob = (-0.8 * np.log(rank) - rng.exponential(0.3, n)).astype(np.float32)
    return RankArrays(rank, logprob, corpus.doc, corpus.pos, target)


def run_summary(
    arrays: RankArrays,
    strata: StrataSettings,
    windows: WindowSpec,
    n_units: int,
    *,
    model: str = "m",
    family: str = "f",
    S: int = 10**6,
    vocab: int,
    replicates: int,
    kind_table: np.ndarray | None = None,
    seed: int = 0,
) -> tuple[Summary, dict[str, np.ndarray]]:
    """`summarize` as the workflow calls it; the summary read back through its JSON form, and its boot arrays."""
    law_k = sorted(strata.k)
    settings = SummarySettings(4, law_k, [1], [1], law_k, replicates, seed, True, 0, strata)
    meta = {"vocab_size": vocab, "model": model, "dataset": "d", "S": S, "ties": "ge", OWN_SHA: model}
    resampling = Resampling(np.arange(n_units), n_units, replicates, seed, "d")
    info = ModelInfo(family, None, model, True, None, model)
    summary, _, boot = summarize(arrays, meta, settings, resampling, info, windows, kind_table)
    return Summary.from_json(summary.to_json()), boot


def replicate_totals_of(boot: dict[str, np.ndarray]) -> Totals:
    return Totals({name[4:]: value for name, value in boot.items() if name.startswith("rep_")})


def brute_bin(values: np.ndarray, edges: list[int]) -> np.ndarray:
    """Bin of each value: how many upper edges lie below it."""
    return np.array([sum(v > e for e in edges) for v in values.tolist()])


def brute_frequency_ranks(target: np.ndarray) -> np.ndarray:
    counts = Counter(target.tolist())
    order = sorted(counts, key=lambda t: (-counts[t], t))
    rank = {t: i + 1 for i, t in enumerate(order)}
    return np.array([rank[t] for t in target.tolist()])


# --- 1. every kind partitions the tokens, exactly ---------------------------------------------------------

VOCAB = 400
SPEC = WindowSpec(max_length=32, stride=12, max_windows_per_doc=3)  # documents over 56 tokens are cut
# context bins: a later window's target has 20..31 tokens of context (stride 12), so the edge at 21 tells strides apart
PARTITION = StrataSettings(["frequency", "context", "kind"], {"frequency": [5, 30, 150], "context": [3, 15, 21, 63]},
                           [1, 10, 50])  # fmt: skip


@pytest.fixture(scope="module")
def partitioned() -> dict[str, Any]:
    rng = np.random.default_rng(11)
    corpus = random_corpus(rng, 90, SPEC)
    arrays = random_arrays(rng, corpus, VOCAB)
    kind_table = rng.integers(0, len(KINDS), VOCAB).astype(np.uint8)
    summary, boot = run_summary(arrays, PARTITION, SPEC, corpus.n_docs, vocab=VOCAB, replicates=60,
                                kind_table=kind_table)  # fmt: skip
    return {"corpus": corpus, "arrays": arrays, "kind_table": kind_table, "summary": summary, "boot": boot}


def columns_of(summary: Summary, kind: str) -> list[int]:
    return [i for i, s in enumerate(summary.strata_columns) if s.kind == kind]


def test_the_corpus_exercises_every_window_case(partitioned) -> None:
    corpus = partitioned["corpus"]
    last = {d: int(corpus.pos[corpus.doc == d].max()) for d in np.unique(corpus.doc).tolist()}
    assert any(corpus.lengths[d] > p + 1 for d, p in last.items())  # documents cut by max_windows_per_doc
    assert 1 not in last  # a BOS document with no target
    assert set(corpus.pos[np.isin(corpus.doc, np.flatnonzero(corpus.first == 2))].tolist()) >= {2}
    assert 1 not in corpus.pos[np.isin(corpus.doc, np.flatnonzero(corpus.first == 2))]
    assert int(corpus.context.max()) == SPEC.max_length - 1


def test_strata_are_those_of_the_settings(partitioned) -> None:
    got = [(s.kind, s.label) for s in partitioned["summary"].strata_columns]
    assert got == [("frequency", "1-5"), ("frequency", "6-30"), ("frequency", "31-150"), ("frequency", "151+"),
                   ("context", "1-3"), ("context", "4-15"), ("context", "16-21"), ("context", "22-63"),  # no 64+
                   *[("kind", k) for k in KINDS]]  # fmt: skip
    assert partitioned["summary"].strata_k == [1, 10, 50]


@pytest.mark.parametrize("kind", ["frequency", "context", "kind"])
def test_each_kind_partitions_the_tokens_per_document_and_in_total(partitioned, kind: str) -> None:
    summary, boot = partitioned["summary"], partitioned["boot"]
    cols = columns_of(summary, kind)
    per_doc = boot["doc_strata_n"][:, cols]
    np.testing.assert_array_equal(per_doc.sum(axis=1), boot["doc_n"])
    total = np.asarray(summary.sums["strata_n"])[cols]
    assert total.sum() == summary.sums["n"] == summary.n_tokens
    assert (total > 0).all()  # every stratum of the settings holds tokens here (the test is not vacuous)
    # hits: integers that add up at every strata k to the whole array's hits at that k
    hits = np.asarray(summary.sums["strata_hits"])[cols]
    for j, k in enumerate(summary.strata_k):
        assert hits[:, j].sum() == summary.sums["hits"][summary.k.index(k)]
        np.testing.assert_array_equal(boot["doc_strata_hits"][:, cols, j].sum(axis=1),
                                      boot["doc_hits"][:, summary.k.index(k)])  # fmt: skip
    logprob = np.asarray(summary.sums["strata_sum_logprob"])[cols]
    assert logprob.sum() == pytest.approx(summary.sums["sum_logprob"], rel=1e-12)


@pytest.mark.parametrize("kind", ["frequency", "context", "kind"])
def test_each_kind_partitions_every_replicate(partitioned, kind: str) -> None:
    summary, boot = partitioned["summary"], partitioned["boot"]
    cols = columns_of(summary, kind)
    np.testing.assert_array_equal(boot["rep_strata_n"][:, cols].sum(axis=1), boot["rep_n"])
    for j, k in enumerate(summary.strata_k):
        np.testing.assert_array_equal(boot["rep_strata_hits"][:, cols, j].sum(axis=1),
                                      boot["rep_hits"][:, summary.k.index(k)])  # fmt: skip
    np.testing.assert_allclose(boot["rep_strata_sum_logprob"][:, cols].sum(axis=1), boot["rep_sum_logprob"],
                               rtol=1e-12)  # fmt: skip
    assert np.std(boot["rep_n"]) > 0  # the replicates do resample


@pytest.mark.parametrize("kind", ["frequency", "context", "kind"])
def test_share_weighted_stratum_metrics_are_the_whole_arrays(partitioned, kind: str) -> None:
    """sum_s share_s RBP_k(s) = RBP_k and sum_s share_s CE(s) = CE, for the point values (stratum_rows) and for
    every replicate (Replicates.at with a stratum)."""
    summary, boot = partitioned["summary"], partitioned["boot"]
    rows = stratum_rows([summary])
    rows = rows[rows["kind"] == kind]
    totals = summary.totals()
    rbp = METRICS["rbp"].compute(totals)
    for k in summary.strata_k:
        at_k = rows[(rows["metric"] == "rbp") & (rows["k"] == k)]
        assert (at_k["share"] * at_k["value"]).sum() == pytest.approx(rbp[summary.k.index(k)], abs=1e-12)
    ce = rows[rows["metric"] == "ce"]
    assert (ce["share"] * ce["value"]).sum() == pytest.approx(float(METRICS["ce"].compute(totals)), abs=1e-12)
    assert ce["share"].sum() == pytest.approx(1.0, abs=1e-12)
    assert (ce["n_stratum"].sum(), len(ce)) == (summary.n_tokens, len(columns_of(summary, kind)))

    replicates = Replicates([summary], [replicate_totals_of(boot)])
    key = (summary.model, summary.dataset)
    n, strata_n = boot["rep_n"], boot["rep_strata_n"]
    for k in summary.strata_k:
        weighted = sum(strata_n[:, i] / n * replicates.at(*key, "rbp", k, i) for i in columns_of(summary, kind))
        np.testing.assert_allclose(weighted, replicates.at(*key, "rbp", k), rtol=0, atol=1e-12)
    weighted = sum(strata_n[:, i] / n * replicates.at(*key, "ce", None, i) for i in columns_of(summary, kind))
    np.testing.assert_allclose(weighted, replicates.at(*key, "ce"), rtol=0, atol=1e-12)


def test_stratum_totals_are_the_brute_force_counts(partitioned) -> None:
    """Each token in the stratum its brute-force definition gives: counts, hits and log-probs per stratum."""
    summary, arrays, corpus = partitioned["summary"], partitioned["arrays"], partitioned["corpus"]
    expected = {
        "frequency": brute_bin(brute_frequency_ranks(arrays.target), PARTITION.bins["frequency"]),
        "context": brute_bin(corpus.context, PARTITION.bins["context"]),
        "kind": partitioned["kind_table"][arrays.target].astype(np.int64),
    }
    for kind, stratum in expected.items():
        cols = columns_of(summary, kind)
        n = np.bincount(stratum, minlength=len(cols))
        assert len(n) == len(cols), kind
        np.testing.assert_array_equal(np.asarray(summary.sums["strata_n"])[cols], n)
        for j, k in enumerate(summary.strata_k):
            hits = np.bincount(stratum, weights=arrays.rank <= k, minlength=len(cols))
            np.testing.assert_array_equal(np.asarray(summary.sums["strata_hits"])[cols, j], hits)
        logprob = np.bincount(stratum, weights=arrays.logprob.astype(np.float64), minlength=len(cols))
        np.testing.assert_allclose(np.asarray(summary.sums["strata_sum_logprob"])[cols], logprob, rtol=1e-12)


def test_the_strata_table_has_every_stratum_with_intervals(partitioned) -> None:
    """strata.csv without the documents' sums: every stratum's share, RBP_k and CE, each with the bias-corrected
    percentile interval of its own replicates (Efron's BC, recomputed here from the replicate totals of the boot
    file), its point strictly inside."""
    summary, boot = partitioned["summary"], partitioned["boot"]
    replicates = Replicates([summary], [replicate_totals_of(boot)])
    table = build_table("strata", [summary], {}, TableSettings(LEVEL, None, None, None, None, None), replicates)
    n_strata = len(summary.strata_columns)
    assert len(table) == n_strata * (len(summary.strata_k) + 1)  # RBP_k at each strata k, and CE
    assert "stratum_index" not in table
    index = {(s.kind, s.label): i for i, s in enumerate(summary.strata_columns)}
    n, strata_n = boot["rep_n"], boot["rep_strata_n"]

    def percentile(values: np.ndarray, point: float) -> tuple[float, float]:
        z0 = stats.norm.ppf((np.sum(values < point) + 0.5 * np.sum(values == point)) / len(values))
        z = stats.norm.ppf((1 + LEVEL) / 2)
        low, high = np.quantile(values, stats.norm.cdf([2 * z0 - z, 2 * z0 + z]))
        assert low < point < high
        return low, high

    for row in table.to_dict("records"):
        i = index[(row["kind"], row["stratum"])]
        if row["metric"] == "rbp":
            values = boot["rep_strata_hits"][:, i, summary.strata_k.index(row["k"])] / strata_n[:, i]
        else:
            values = -boot["rep_strata_sum_logprob"][:, i] / strata_n[:, i]
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(percentile(values, row["value"]), abs=1e-12), row
        share = percentile(strata_n[:, i] / n, row["share"])
        assert (row["share_ci_low"], row["share_ci_high"]) == pytest.approx(share, abs=1e-12), row
        assert row["ci_low"] < row["ci_high"] and row["share_ci_low"] < row["share_ci_high"]


# --- 2. the definitions against brute force ----------------------------------------------------------------


def test_frequency_ranks_are_a_direct_count_ties_by_id() -> None:
    rng = np.random.default_rng(3)
    ids = np.array([900, 7, 55, 3, 41, 12, 600, 8], dtype=np.uint32)
    counts = [5, 5, 3, 3, 3, 9, 1, 1]  # ties among 900/7, 55/3/41 and 600/8
    target = rng.permutation(np.repeat(ids, counts))
    got = frequency_ranks(target)
    np.testing.assert_array_equal(got, brute_frequency_ranks(target))
    rank = dict(zip(target.tolist(), got.tolist(), strict=True))
    assert rank == {12: 1, 7: 2, 900: 3, 3: 4, 41: 5, 55: 6, 8: 7, 600: 8}
    many = zipf_targets(rng, 20_000, 3000)
    np.testing.assert_array_equal(frequency_ranks(many), brute_frequency_ranks(many))


SPECS = [
    WindowSpec(max_length=32, stride=12, max_windows_per_doc=3),
    WindowSpec(max_length=16, stride=None, max_windows_per_doc=None),
    WindowSpec(max_length=8, stride=7, max_windows_per_doc=1),  # the authors' setup: one truncated window
    WindowSpec(max_length=8, stride=1, max_windows_per_doc=5),
    WindowSpec(max_length=2, stride=1, max_windows_per_doc=None),
    WindowSpec(max_length=64, stride=20, max_windows_per_doc=2),
]


@pytest.mark.parametrize("spec", SPECS, ids=repr)
@pytest.mark.parametrize("seed", [0, 1])
def test_context_lengths_are_those_of_the_true_windows(spec: WindowSpec, seed: int) -> None:
    """From the scored (doc, pos) alone, the context of each target in the windows planned for the true document
    lengths: documents longer than `max_windows_per_doc` windows reach (their end unscored), first target 2 after
    a BOS, documents with no target."""
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, 80, spec, max_length=4 * spec.max_length + 7)
    tokens = StrataTokens(np.zeros(corpus.doc.size, np.uint32), corpus.doc, corpus.pos, spec, None)
    np.testing.assert_array_equal(context_lengths(tokens), corpus.context)
    assert corpus.context.min() >= 1 and corpus.context.max() <= spec.max_length - 1
    if spec.max_windows_per_doc is not None:
        scored_end = np.zeros(corpus.n_docs, np.int64)
        np.maximum.at(scored_end, corpus.doc.astype(np.int64), corpus.pos.astype(np.int64) + 1)
        assert (scored_end[scored_end > 0] < corpus.lengths[scored_end > 0]).any()  # some documents were cut


@pytest.mark.parametrize(
    ("max_length", "labels"),
    [
        (2, ["1-3"]),  # one token of context at most
        (4, ["1-3"]),  # three at most: the bin 4-15 cannot be reached
        (5, ["1-3", "4-15"]),
        (16, ["1-3", "4-15"]),
        (17, ["1-3", "4-15", "16-63"]),
        (64, ["1-3", "4-15", "16-63"]),
        (65, ["1-3", "4-15", "16-63", "64+"]),
        (2048, ["1-3", "4-15", "16-63", "64+"]),
    ],
)
def test_context_bins_past_max_length_are_left_out(max_length: int, labels: list[str]) -> None:
    settings = StrataSettings(["context"], {"context": [3, 15, 63]}, [1])
    spec = WindowSpec(max_length, None, None)
    corpus = Corpus.of(np.array([3 * max_length + 5, 2, max_length]), np.array([1, 1, 2]), spec)
    tokens = StrataTokens(np.zeros(corpus.doc.size, np.uint32), corpus.doc, corpus.pos, spec, None)
    strata, index = assign(settings, tokens)
    assert [s.label for s in strata] == labels
    np.testing.assert_array_equal(index[:, 0], brute_bin(corpus.context, [3, 15, 63]))
    assert set(index[:, 0].tolist()) <= set(range(len(labels)))


def test_bin_labels_and_binning() -> None:
    assert bin_labels([10, 100, 1000]) == ["1-10", "11-100", "101-1000", "1001+"]
    assert bin_labels([1, 2, 5]) == ["1", "2", "3-5", "6+"]
    values = np.arange(1, 1200)
    np.testing.assert_array_equal(binned(values, [10, 100, 1000]), brute_bin(values, [10, 100, 1000]))


def test_the_kind_stratum_is_the_kind_table_of_the_target() -> None:
    rng = np.random.default_rng(5)
    table = rng.integers(0, len(KINDS), 700).astype(np.uint8)
    corpus = random_corpus(rng, 30, SPEC)
    target = rng.integers(0, 700, corpus.doc.size).astype(np.uint32)
    tokens = StrataTokens(target, corpus.doc, corpus.pos, SPEC, table)
    strata, index = assign(StrataSettings(["kind"], {}, [1]), tokens)
    assert [s.label for s in strata] == list(KINDS) and {s.kind for s in strata} == {"kind"}
    np.testing.assert_array_equal(index[:, 0], table[target])
    assert STRATA["kind"].needs_kind_table and strata[STRATA["kind"].reference].label == "word"


def test_assign_numbers_the_strata_of_every_kind_in_one_list() -> None:
    rng = np.random.default_rng(8)
    corpus = random_corpus(rng, 40, SPEC)
    target = zipf_targets(rng, corpus.doc.size, 300)
    tokens = StrataTokens(target, corpus.doc, corpus.pos, SPEC, rng.integers(0, 5, 300).astype(np.uint8))
    strata, index = assign(PARTITION, tokens)
    assert index.shape == (target.size, 3)
    offset = 0
    for j, kind in enumerate(PARTITION.kinds):
        n = sum(s.kind == kind for s in strata)
        assert offset <= index[:, j].min() and index[:, j].max() < offset + n
        assert all(strata[i].kind == kind for i in np.unique(index[:, j]))
        offset += n
    none, empty = assign(StrataSettings([], {}, [1]), tokens)
    assert none == [] and empty.shape == (target.size, 0)


# --- 3. laws planted per frequency bin, recovered ----------------------------------------------------------

SIZES = [int(s) for s in np.geomspace(1e5, 1e8, 6)]
FREQUENCY_EDGES = [10, 100]  # bins 1-10, 11-100, 101+


def planted_c(alpha: float, y_at_largest: float = 0.5) -> float:
    """C such that -log RBP_1 = C S^-alpha is `y_at_largest` at the largest size (RBP_1 0.14..0.61 throughout)."""
    return y_at_largest * SIZES[-1] ** alpha


@dataclass(frozen=True)
class Planted:
    """A family whose tokens of frequency bin b have RBP_1 = exp(-C_b S^-alpha_b) * (1 + u_d + v_d t(S)) in
    document d, t(S) running from -1 to 1 over log S: each document has its difficulty u_d and its own gain with
    size v_d (uniform, mean 0, the same for every size of the family), so tokens within a document are correlated
    and the population's law is the planted one. The same documents and targets for every size, hits drawn per
    token and size."""

    alphas: tuple[float, ...]
    n_docs: int
    per_doc: int
    difficulty: float  # u_d in +- this
    gain: float  # v_d in +- this
    vocab: int = 2000

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The family's targets, each target's frequency bin (brute force), and per document (u_d, v_d)."""
        target = zipf_targets(rng, self.n_docs * self.per_doc, self.vocab, exponent=1.0)
        bins = brute_bin(brute_frequency_ranks(target), FREQUENCY_EDGES)
        effects = np.stack([rng.uniform(-self.difficulty, self.difficulty, self.n_docs),
                            rng.uniform(-self.gain, self.gain, self.n_docs)], axis=1)  # fmt: skip
        return target, bins, effects

    def rank_arrays(self, rng: np.random.Generator, S: float, target: np.ndarray, bins: np.ndarray,
                    effects: np.ndarray) -> RankArrays:  # fmt: skip
        doc = np.repeat(np.arange(self.n_docs), self.per_doc).astype(np.uint32)
        pos = np.tile(np.arange(1, self.per_doc + 1), self.n_docs).astype(np.uint32)
        alpha = np.asarray(self.alphas)[bins]
        t = (np.log(S) - np.log(SIZES[0] * SIZES[-1]) / 2) / (np.log(SIZES[-1] / SIZES[0]) / 2)
        factor = 1 + effects[doc, 0] + effects[doc, 1] * t
        p = np.exp(-np.array([planted_c(a) for a in self.alphas])[bins] * S**-alpha) * factor
        assert 0 < p.min() and p.max() < 1
        hit = rng.random(doc.size) < p
        rank = np.where(hit, 1, rng.integers(2, self.vocab + 1, doc.size)).astype(np.uint32)
        logprob = np.where(hit, -0.2, -1.0 - np.log(rank)).astype(np.float32)
        return RankArrays(rank, logprob, doc, pos, target)


PLANTED = Planted(alphas=(0.05, 0.10, 0.20), n_docs=200, per_doc=250, difficulty=0.25, gain=0.25)
PLANTED_STRATA = StrataSettings(["frequency", "context", "kind"],
                                {"frequency": FREQUENCY_EDGES, "context": [3, 15, 63]}, [1, 10])  # fmt: skip
PLANTED_WINDOWS = WindowSpec(512, None, None)
TABLE_SETTINGS = TableSettings(level=LEVEL, law_k=[1, 10], law_form="power_law", forms=None, refits=0, seed=0)


def planted_family(
    planted: Planted, seed: int, family: str, sizes: list[int] = SIZES
) -> tuple[list[Summary], list[Totals]]:
    rng = np.random.default_rng(seed)
    target, bins, effects = planted.draw(rng)
    kind_table = rng.integers(0, len(KINDS), planted.vocab).astype(np.uint8)
    summaries, totals = [], []
    for i, S in enumerate(sizes):
        arrays = planted.rank_arrays(rng, S, target, bins, effects)
        summary, boot = run_summary(arrays, PLANTED_STRATA, PLANTED_WINDOWS, planted.n_docs, model=f"{family}{i}",
                                    family=family, S=S, vocab=planted.vocab, replicates=300, kind_table=kind_table,
                                    seed=seed)  # fmt: skip
        summaries.append(summary)
        totals.append(replicate_totals_of(boot))
    return summaries, totals


@pytest.fixture(scope="module")
def planted() -> dict[str, pd.DataFrame]:
    """Two families: exponents 0.05 / 0.10 / 0.20 by frequency bin, and one exponent (0.10) for every bin."""
    summaries, totals = planted_family(PLANTED, 1, "f")
    same, same_totals = planted_family(Planted((0.1, 0.1, 0.1), 200, 250, 0.25, 0.25), 2, "g")
    replicates = Replicates(summaries + same, totals + same_totals)
    tables = {name: build_table(name, summaries + same, {}, TABLE_SETTINGS, replicates)
              for name in ("strata", "strata_fits", "strata_contrasts")}  # fmt: skip
    return tables


def frequency_law(frame: pd.DataFrame, family: str, k: int = 1) -> pd.DataFrame:
    rows = frame[(frame["family"] == family) & (frame["kind"] == "frequency") & (frame["metric"] == "neg_log_rbp")]
    return rows[rows["k"] == k].set_index("stratum")


def test_each_bins_planted_exponent_is_within_its_interval(planted) -> None:
    fits = frequency_law(planted["strata_fits"], "f")
    assert list(fits.index) == bin_labels(FREQUENCY_EDGES)
    for label, alpha in zip(bin_labels(FREQUENCY_EDGES), PLANTED.alphas, strict=True):
        row = fits.loc[label]
        assert row["alpha_ci_low"] <= alpha <= row["alpha_ci_high"], (label, alpha, row.to_dict())
        assert row["alpha"] == pytest.approx(alpha, abs=0.02)
        assert row["alpha_ci_high"] - row["alpha_ci_low"] < 0.05
        assert row["n_models"] == len(SIZES) and row["noise"] == "documents+sizes" and not row["note"]
    # every stratum of every kind has its law of RBP_1, RBP_10 and CE, each fitted
    f = planted["strata_fits"][planted["strata_fits"]["family"] == "f"]
    assert len(f) == (3 + 4 + len(KINDS)) * 3
    assert set(f["metric"]) == {"neg_log_rbp", "ce"}


def test_the_contrast_finds_the_planted_difference(planted) -> None:
    contrasts = frequency_law(planted["strata_contrasts"], "f")
    assert set(contrasts["reference"]) == {"1-10"} and list(contrasts.index) == ["11-100", "101+"]
    rare = contrasts.loc["101+"]
    planted_difference = PLANTED.alphas[2] - PLANTED.alphas[0]
    assert rare["ci_low"] <= planted_difference <= rare["ci_high"], rare.to_dict()
    assert rare["difference"] == pytest.approx(rare["alpha"] - rare["alpha_reference"], abs=1e-12)
    assert rare["p_value"] < 0.05 and rare["noise"] == "documents+sizes"
    middle = contrasts.loc["11-100"]
    assert middle["ci_low"] <= PLANTED.alphas[1] - PLANTED.alphas[0] <= middle["ci_high"]
    # the contrast is paired: its interval is narrower than the two exponents' intervals would make it apart
    fits = frequency_law(planted["strata_fits"], "f")
    # (the bins share their documents' difficulty and gain: paired, the difference's noise is far below theirs)
    apart = math.hypot(*(fits.loc[s, "alpha_ci_high"] - fits.loc[s, "alpha_ci_low"] for s in ("101+", "1-10")))
    assert rare["ci_high"] - rare["ci_low"] < 0.75 * apart


def test_equal_exponents_give_a_contrast_around_zero(planted) -> None:
    contrasts = frequency_law(planted["strata_contrasts"], "g")
    for label in ("11-100", "101+"):
        assert contrasts.loc[label, "ci_low"] <= 0 <= contrasts.loc[label, "ci_high"], contrasts.loc[label]
        assert contrasts.loc[label, "p_value"] > 0.05


def test_every_kind_gets_contrasts_against_its_reference(planted) -> None:
    contrasts = planted["strata_contrasts"]
    f = contrasts[contrasts["family"] == "f"]
    assert dict(f.groupby("kind")["reference"].first()) == {"context": "1-3", "frequency": "1-10", "kind": "word"}
    assert len(f) == (2 + 3 + (len(KINDS) - 1)) * 3  # every stratum but the reference, RBP_1, RBP_10 and CE
    assert not (f["stratum"] == f["reference"]).any()


def test_the_strata_table_of_a_planted_family(planted) -> None:
    table = planted["strata"]
    rbp = table[(table["family"] == "f") & (table["kind"] == "frequency") & (table["metric"] == "rbp")]
    rbp = rbp[rbp["k"] == 1]
    for label, alpha in zip(bin_labels(FREQUENCY_EDGES), PLANTED.alphas, strict=True):
        rows = rbp[rbp["stratum"] == label].sort_values("S")
        truth = np.exp(-planted_c(alpha) * rows["S"].to_numpy(np.float64) ** -alpha)
        assert (rows["ci_low"].to_numpy() < truth + 0.03).all() and (truth - 0.03 < rows["ci_high"].to_numpy()).all()
        assert (np.diff(rows["value"].to_numpy()) > 0).all()  # RBP_1 grows with S in every bin


# --- 4. a stratum's replicates resample documents -----------------------------------------------------------


def test_every_strata_replicate_is_one_document_draw_of_the_documents_own_sums(partitioned) -> None:
    """Every replicate's stratum sums are the dataset's document draw (`resample_counts(N, B, seed, dataset)`, the
    one every stratum, the whole array and every model share) times the documents' own stratum sums, and those
    are the brute-force per-document counts of each frequency stratum: exact integers. A token bootstrap, a
    stratum drawn on a stream of its own (unpaired), or sums per token rather than per document fail it; how the
    intervals then cover is benchmarks/strata_coverage.py's."""
    summary, boot, arrays = partitioned["summary"], partitioned["boot"], partitioned["arrays"]
    units, replicates = boot["units"], len(boot["rep_n"])
    counts = np.concatenate(list(resample_counts(partitioned["corpus"].n_docs, replicates, 0, "d")))[:, units]
    cols = columns_of(summary, "frequency")
    row = np.searchsorted(units, arrays.doc)  # each token's document among those that score a target
    stratum = brute_bin(brute_frequency_ranks(arrays.target), PARTITION.bins["frequency"])
    n = np.zeros((len(units), len(cols)))
    np.add.at(n, (row, stratum), 1.0)
    np.testing.assert_array_equal(boot["doc_strata_n"][:, cols], n)
    for j, k in enumerate(summary.strata_k):
        hits = np.zeros((len(units), len(cols)))
        np.add.at(hits, (row, stratum), (arrays.rank <= k).astype(np.float64))
        np.testing.assert_array_equal(boot["doc_strata_hits"][:, cols, j], hits)
    np.testing.assert_array_equal(boot["rep_strata_n"], counts @ boot["doc_strata_n"])
    np.testing.assert_array_equal(boot["rep_strata_hits"], np.einsum("bd,dsk->bsk", counts, boot["doc_strata_hits"]))
    np.testing.assert_array_equal(boot["rep_n"], counts @ boot["doc_n"])  # the whole array: the same draw


# --- 5. a family of one model -------------------------------------------------------------------------------


def test_a_family_of_one_model_gets_strata_rows_and_notes() -> None:
    summaries, totals = planted_family(Planted((0.05, 0.1, 0.2), 60, 100, 0.25, 0.25), 4, "solo", sizes=[SIZES[2]])
    replicates = Replicates(summaries, totals)
    strata = build_table("strata", summaries, {}, TABLE_SETTINGS, replicates)
    n_strata = len(summaries[0].strata_columns)
    assert len(strata) == n_strata * 3  # RBP_1, RBP_10, CE
    finite = strata[["value", "ci_low", "ci_high"]].notna().all(axis=1)
    assert finite.all(), strata[~finite]
    assert ((strata["ci_low"] <= strata["value"]) & (strata["value"] <= strata["ci_high"])).all()
    fits = build_table("strata_fits", summaries, {}, TABLE_SETTINGS, replicates)
    assert len(fits) == n_strata * 3 and (fits["note"] == ONE_SIZE).all()
    assert fits["alpha"].isna().all() and fits.columns[-1] == "note"
    contrasts = build_table("strata_contrasts", summaries, {}, TABLE_SETTINGS, replicates)
    assert sorted(contrasts["kind"]) == ["context", "frequency", "kind"] and (contrasts["note"] == ONE_SIZE).all()
    assert contrasts.columns[-1] == "note"
    # the same tables straight from the builders
    assert strata_fits_table(summaries, POWER_LAW, replicates, LEVEL, 0, 0).equals(fits)
    assert strata_contrasts_table(summaries, POWER_LAW, replicates, LEVEL, 0, 0).equals(contrasts)
