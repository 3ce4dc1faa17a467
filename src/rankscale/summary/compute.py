"""Per model x dataset summary: everything downstream needs, computed once from a rank array.

- every per-document statistic (`rankscale.metrics.document_statistics`): its column sums are the
  point totals, and the same matrix gives the bootstrap replicate totals (`rankscale.bootstrap`);
- the rank-distribution statistics (error entropy, CE decomposition, the fitted lognormal and what
  it implies) of the whole histogram, and their replicates from resampled per-document histograms;
- the lognormal against alternative families (Vuong), with per-document log-likelihood ratios.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import sparse

from rankscale.bootstrap import BLOCK, Resampling, kish_documents, replicate_totals
from rankscale.calibration import SQUARED
from rankscale.conjecture import distribution_replicates, distribution_statistics, rank_sums
from rankscale.decomposition_jackknife import corrected_decomposition, corrected_left_out
from rankscale.identity import OWN_SHA
from rankscale.lognormal import DegenerateRanks
from rankscale.metrics import document_statistics
from rankscale.rankdist import FAMILIES, fit_family, vuong
from rankscale.rankfile import RankArrays
from rankscale.statistics import RUN_HITS, RUN_WINDOWS, TOKENS, Scored, k_grid, rank_histogram, segment_starts
from rankscale.strata import StrataSettings, StrataTokens, assign
from rankscale.summary.types import ModelInfo, RankTest, RunRate, Summary
from rankscale.windows import WindowSpec


@dataclass(frozen=True)
class SummarySettings:
    """The `analysis:` settings a summary is computed with (`rankscale.plan.summary_settings` makes them)."""

    k_points_per_decade: int
    k_include: list[int]  # every k a table or figure reads is on the grid
    emergence_k: list[int]
    emergence_N: list[int]
    law_k: list[int]
    replicates: int  # bootstrap replicates of the summed statistics
    seed: int
    truncate: bool  # the lognormal is normalised over 1..|V|
    distribution_replicates: int  # bootstrap replicates of the histogram statistics
    strata: StrataSettings  # the stratum kinds, their bins and k

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SummarySettings:
        return cls(**{**params, "strata": StrataSettings.from_params(params["strata"])})


@dataclass(frozen=True)
class RankPairs:
    """The (document, rank) pairs of a rank array: per pair its row, rank, token count and summed log-prob."""

    row: np.ndarray
    rank: np.ndarray
    count: np.ndarray
    logprob: np.ndarray

    @classmethod
    def of(cls, row: np.ndarray, arrays: RankArrays, vocab_size: int) -> RankPairs:
        keys, inverse = np.unique(row.astype(np.int64) * (vocab_size + 1) + arrays.rank, return_inverse=True)
        return cls(
            keys // (vocab_size + 1),
            keys % (vocab_size + 1),
            np.bincount(inverse).astype(np.float64),
            np.bincount(inverse, weights=arrays.logprob.astype(np.float64)),
        )

    def by_row(self, vocab_size: int, n_rows: int) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
        """Per-document rank histograms and log-prob sums as sparse matrices [|V| + 1, documents]."""
        shape = (vocab_size + 1, n_rows)
        return (
            sparse.csr_matrix((self.count, (self.rank, self.row)), shape=shape),
            sparse.csr_matrix((self.logprob, (self.rank, self.row)), shape=shape),
        )


def rank_tests(hist: np.ndarray, pairs: RankPairs, n_rows: int) -> tuple[dict[str, RankTest], dict[str, np.ndarray]]:
    """Fits of the lognormal and each alternative family, Vuong's test of the lognormal against each,
    and per document the summed pointwise log-likelihood ratio (for its bootstrap interval)."""
    # every family on 1..|V| alike, whatever analysis.lognormal.truncate says of the conjecture's lognormal:
    # a test of fits to the same support
    try:
        lognormal = fit_family("lognormal", hist, truncate=True)
    except DegenerateRanks as exc:  # one distinct rank: no family has anything to fit, no test is possible
        nan = math.nan
        none = {"lognormal": RankTest([nan, nan], nan, note=str(exc))}
        none.update({name: RankTest([nan] * len(f.params), nan, note=str(exc)) for name, f in FAMILIES.items()})
        return none, {f"llr_{name}": np.full(n_rows, nan) for name in FAMILIES}
    out = {"lognormal": RankTest(list(lognormal.params), lognormal.loglik_per_token, at_bound=list(lognormal.at_bound))}
    per_doc: dict[str, np.ndarray] = {}
    for name in FAMILIES:
        alternative = fit_family(name, hist, truncate=True)
        test = vuong(lognormal, alternative, hist)
        out[name] = RankTest(list(alternative.params), alternative.loglik_per_token, test.mean_llr, test.z,
                             test.p_value, list(alternative.at_bound))  # fmt: skip
        llr = lognormal.log_pmf - alternative.log_pmf
        per_doc[f"llr_{name}"] = np.bincount(pairs.row, weights=pairs.count * llr[pairs.rank - 1], minlength=n_rows)
    return out, per_doc


def per_document(
    arrays: RankArrays,
    ks: list[int],
    emergence_k: list[int],
    emergence_n: list[int],
    stratified: tuple[np.ndarray, int, list[int]] | None = None,
    token_bytes: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(documents, statistics): every per-document statistic, one row per scored document (token-file order);
    `stratified`: each token's stratum of each kind, the number of strata and their k (`rankscale.strata.assign`);
    `token_bytes`: each token id's UTF-8 byte length (`rankscale.token_kinds.byte_table`; without it, no
    `sum_bytes` and so no bits per byte)."""
    docs, row = np.unique(arrays.doc, return_inverse=True)
    index, n_strata, strata_k = stratified if stratified is not None else (None, 0, [])
    n_bytes = None if token_bytes is None else target_bytes(arrays.target, token_bytes)
    scored = Scored(arrays.rank, arrays.logprob, row, len(docs), segment_starts(arrays.doc, arrays.pos), ks,
                    emergence_k, emergence_n, index, n_strata, strata_k, n_bytes, arrays.calibration)  # fmt: skip
    stats = {statistic.name: statistic.per_document(scored) for statistic in document_statistics()}
    return docs, {name: value for name, value in stats.items() if value is not None}




JACKKNIFE = "jack_"  # a bootstrap file's leave-one-unit-out values of the histogram statistics: jack_<name> [U]


def leave_one_out(
    units: np.ndarray, statistics: Callable[[Iterator[np.ndarray]], dict[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """Each histogram statistic with one resampling unit's documents left out, [U] over units 0..U - 1 (NaN for a
    unit with no scored document): the jackknife over documents that BCa's acceleration reads
    (`rankscale.bca.acceleration`). `statistics` maps blocks of document weights [b, documents] to values."""
    present = np.unique(units)
    size = int(units.max()) + 1 if units.size else 0

    def blocks() -> Iterator[np.ndarray]:
        for start in range(0, present.size, BLOCK):
            yield (units[None, :] != present[start : start + BLOCK, None]).astype(np.float64)

    with np.errstate(divide="ignore", invalid="ignore"):  # a lone unit left out leaves an empty histogram
        values = statistics(blocks())
    out = {}
    for name, value in values.items():
        full = np.full(size, np.nan)
        full[present] = value
        out[name] = full
    return out


def target_bytes(target: np.ndarray, token_bytes: np.ndarray) -> np.ndarray:
    """Per scored token, the UTF-8 byte length of its target's text (`token_bytes` indexed by token id)."""
    if target.size and int(target.max()) >= token_bytes.size:
        raise ValueError(f"target token id {int(target.max())} is outside the tokenizer's byte table of "
                         f"{token_bytes.size} tokens: the token table is not this rank array's tokenizer's")  # fmt: skip
    return np.asarray(token_bytes, dtype=np.int64)[target.astype(np.int64)]


def summarize(
    arrays: RankArrays,
    meta: Mapping[str, Any],
    settings: SummarySettings,
    resampling: Resampling,
    info: ModelInfo,
    windows: WindowSpec,
    kind_table: np.ndarray | None,
    token_bytes: np.ndarray | None = None,
) -> tuple[Summary, np.ndarray, dict[str, np.ndarray]]:
    """(summary, rank histogram, bootstrap arrays) of one rank array; `meta` is its sidecar, `windows` how its
    documents were cut (the context strata), `kind_table` its tokenizer's token kinds (the kind stratum) and
    `token_bytes` their UTF-8 byte lengths (cross-entropy in bits per byte; None: the summary has none)."""
    vocab_size = int(meta["vocab_size"])
    if arrays.rank.size == 0:
        raise ValueError(f"{meta['model']} / {meta['dataset']}: no scored tokens")
    hist = rank_histogram(arrays.rank, vocab_size)
    ks = k_grid(vocab_size, settings.k_points_per_decade, settings.k_include)
    emergence_k = [k for k in settings.emergence_k if k <= vocab_size]
    emergence_n = list(settings.emergence_N)
    law_k = [k for k in settings.law_k if k <= vocab_size]
    strata_k = [k for k in settings.strata.k if k <= vocab_size]
    tokens = StrataTokens(arrays.target, arrays.doc, arrays.pos, windows, kind_table)
    strata, index = assign(replace(settings.strata, k=strata_k), tokens)
    docs, stats = per_document(arrays, ks, emergence_k, emergence_n, (index, len(strata), strata_k), token_bytes)
    row = np.searchsorted(docs, arrays.doc)
    pairs = RankPairs.of(row, arrays, vocab_size)
    tests, llr = rank_tests(hist, pairs, len(docs))
    units = resampling.units[docs]
    keys = (resampling.seed, resampling.dataset)
    replicates = replicate_totals({**stats, **llr}, units, resampling.n_units, resampling.replicates, *keys,
                                  squared=SQUARED)  # fmt: skip
    distribution = distribution_statistics(
        *rank_sums(arrays.rank, arrays.logprob, vocab_size), law_k, settings.truncate
    )
    blocks = (b[:, units].astype(np.float64) for b in resampling.draws(settings.distribution_replicates))
    by_row = pairs.by_row(vocab_size, len(docs))
    replicates.update(distribution_replicates(*by_row, blocks, distribution, law_k, settings.truncate))
    jackknife = leave_one_out(units, lambda w: distribution_replicates(*by_row, w, distribution, law_k,
                                                                      settings.truncate))  # fmt: skip
    # CE's decomposition by its jackknife over documents, point and replicates; its leave-one-out values are the
    # corrected estimator's own (the plug-in's would measure the bias the correction removed, not what is left)
    corrected, corrected_reps = corrected_decomposition(*by_row, units, resampling.draws(settings.distribution_replicates))
    jackknife.update(corrected_left_out(*by_row, units, int(units.max()) + 1 if units.size else 0))
    distribution = replace(distribution, **corrected)
    replicates.update(corrected_reps)
    sums = {name: value.sum(axis=0) for name, value in stats.items()}
    run_total, run_hit = sums[RUN_WINDOWS.name], sums[RUN_HITS.name]
    runs = [
        RunRate(k, n, int(run_total[j]), float(run_hit[i, j] / run_total[j]) if run_total[j] else float("nan"))
        for i, k in enumerate(emergence_k)
        for j, n in enumerate(emergence_n)
    ]
    summary = Summary(
        model=meta["model"],
        dataset=meta["dataset"],
        info=info,
        S=int(meta["S"]),
        vocab_size=vocab_size,
        n_tokens=int(arrays.rank.size),
        n_documents=len(docs),
        n_eff_documents=kish_documents(np.bincount(units, weights=stats[TOKENS.name])),
        k=ks,
        sums={name: value.tolist() for name, value in sums.items()},
        emergence_k=emergence_k,
        emergence_N=emergence_n,
        law_k=law_k,
        distribution=distribution,
        distribution_replicates=settings.distribution_replicates,
        truncated=settings.truncate,
        rank_tests=tests,
        mean_log_rank=float(np.mean(np.log(arrays.rank.astype(np.float64)))),
        runs=runs,
        ties=meta["ties"],
        rank_sha256=meta[OWN_SHA],
        quantization=meta.get("quantization"),
        strata_columns=strata,
        strata_k=strata_k,
    )
    boot = {
        "units": units,
        **{f"doc_{k}": v for k, v in {**stats, **llr}.items()},
        **{f"rep_{k}": v for k, v in replicates.items()},
        **{f"{JACKKNIFE}{k}": v for k, v in jackknife.items()},
    }
    return summary, hist, boot
