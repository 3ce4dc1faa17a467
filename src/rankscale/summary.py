"""Per model x dataset summary: everything downstream needs, computed once from a rank array.

- totals: sums over every scored token (count, summed log-prob, tokens with rank <= k on the k
  grid), from which each metric of `rankscale.metrics.METRICS` is computed;
- per-document sufficient statistics (the same sums per document, plus the N-token runs and hit
  pairs of the emergence analysis), and their bootstrap replicates (`rankscale.bootstrap`):
  B replicate totals from which every metric's interval follows;
- the lognormal fit of the rank histogram.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from rankscale.bootstrap import replicate_totals, resample_counts
from rankscale.conjecture import distribution_replicates, distribution_statistics, rank_sums
from rankscale.metrics import hit_pairs, k_grid, rank_histogram, run_windows, segment_starts
from rankscale.rankdist import FAMILIES, fit_family, vuong
from rankscale.rankfile import RankArrays

# the `analysis:` settings a summary is computed with (k grid, emergence runs, bootstrap draws,
# the lognormal and the k of the laws it implies)
SUMMARY_SETTINGS = ("k_points_per_decade", "k_include", "emergence_k", "emergence_N", "bootstrap", "lognormal", "law_k")


def totals(arrays: RankArrays, hist: np.ndarray, ks: list[int]) -> dict[str, Any]:
    """Sums over every scored token: count, summed log-prob (float64), tokens with rank <= k."""
    cumulative = np.cumsum(hist)
    return {
        "n": int(arrays.rank.size),
        "sum_logprob": float(np.sum(arrays.logprob, dtype=np.float64)),
        "hits": [int(cumulative[k]) for k in ks],
    }


def summary_totals(summary: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A summary's totals as arrays, ready for `Metric.compute`."""
    return {key: np.asarray(value) for key, value in summary["totals"].items()}


def hits_per_document(rank: np.ndarray, row: np.ndarray, n_rows: int, ks: list[int]) -> np.ndarray:
    """[documents, K]: tokens of each document with rank <= k, for every k at once: one count per (document,
    smallest k that holds the rank), then a running sum over k (one pass instead of one per k)."""
    order = np.argsort(ks, kind="stable")
    grid = np.asarray(ks, dtype=np.int64)[order]
    first = np.searchsorted(grid, rank, side="left")  # len(ks): above every k
    counts = np.bincount(row * (len(ks) + 1) + first, minlength=n_rows * (len(ks) + 1))
    hits = np.cumsum(counts.reshape(n_rows, len(ks) + 1)[:, : len(ks)], axis=1)
    out = np.empty_like(hits)
    out[:, order] = hits
    return out


def document_statistics(
    arrays: RankArrays, ks: list[int], emergence_k: list[int], emergence_n: list[int]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(documents, statistics): per scored document (rows, in the token file's order) the sums a
    replicate weights: n, sum_logprob, hits [D, K], and for each emergence k the N-runs and hit pairs."""
    docs, row = np.unique(arrays.doc, return_inverse=True)
    n_rows = len(docs)
    rank = arrays.rank
    stats: dict[str, np.ndarray] = {
        "n": np.bincount(row, minlength=n_rows),
        "sum_logprob": np.bincount(row, weights=arrays.logprob.astype(np.float64), minlength=n_rows),
        "hits": hits_per_document(rank, row, n_rows, ks),
    }
    starts = segment_starts(arrays.doc, arrays.pos)
    stats["run_windows"] = run_windows(np.ones(rank.size, dtype=bool), starts, row, emergence_n, n_rows)
    run_hits, prev_hit, both_hit = [], [], []
    for k in emergence_k:
        mask = rank <= k
        run_hits.append(run_windows(mask, starts, row, emergence_n, n_rows))
        pairs, prev, both = hit_pairs(mask, starts, row, n_rows)
        prev_hit.append(prev)
        both_hit.append(both)
    stats["run_hits"] = np.stack(run_hits, axis=1) if run_hits else np.zeros((n_rows, 0, len(emergence_n)))
    stats["pairs"] = hit_pairs(np.ones(rank.size, dtype=bool), starts, row, n_rows)[0]
    stats["pairs_prev_hit"] = np.stack(prev_hit, axis=1) if prev_hit else np.zeros((n_rows, 0))
    stats["pairs_both_hit"] = np.stack(both_hit, axis=1) if both_hit else np.zeros((n_rows, 0))
    return docs, stats


@dataclass(frozen=True)
class Resampling:
    """Which documents a bootstrap draws from: the n_units documents any model of the family scored
    on the dataset; document d of this model's token file is unit `units[d]`."""

    units: np.ndarray
    n_units: int
    replicates: int
    seed: int
    family: str
    dataset: str

    @classmethod
    def for_family(
        cls, own: np.ndarray, family: Sequence[np.ndarray], replicates: int, seed: int, family_name: str, dataset: str
    ) -> Resampling:
        """`own`, `family`: corpus indices of the documents this model's and each family tokenizer's token file kept."""
        universe = np.unique(np.concatenate([np.asarray(u, dtype=np.int64) for u in [own, *family]]))
        return cls(np.searchsorted(universe, own), len(universe), replicates, seed, family_name, dataset)


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


def rank_tests(hist: np.ndarray, pairs: RankPairs, n_rows: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Fits of the lognormal and each alternative family, Vuong's test of the lognormal against each,
    and per document the summed pointwise log-likelihood ratio (for its bootstrap interval)."""
    lognormal = fit_family("lognormal", hist)
    out: dict[str, Any] = {"lognormal": {"params": list(lognormal.params), "loglik": lognormal.loglik_per_token}}
    per_doc: dict[str, np.ndarray] = {}
    for name in FAMILIES:
        alternative = fit_family(name, hist)
        test = vuong(lognormal, alternative, hist)
        out[name] = {
            "params": list(alternative.params),
            "loglik": alternative.loglik_per_token,
            "mean_llr": test.mean_llr,
            "z": test.z,
            "p_value": test.p_value,
        }
        llr = lognormal.log_pmf - alternative.log_pmf
        per_doc[f"llr_{name}"] = np.bincount(pairs.row, weights=pairs.count * llr[pairs.rank - 1], minlength=n_rows)
    return out, per_doc


def summarize(
    arrays: RankArrays,
    meta: Mapping[str, Any],
    analysis: Mapping[str, Any],
    resampling: Resampling,
    model: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], np.ndarray, dict[str, np.ndarray]]:
    """(summary, rank histogram, bootstrap arrays): totals on the k grid, N-token runs, rank-distribution
    statistics (error entropy, CE decomposition, lognormal and alternatives), the per-document statistics
    and their replicate totals. `model`: what the plan says of the model (training tokens D, the size
    it is a checkpoint of, whether it is that size's final model)."""
    vocab_size = int(meta["vocab_size"])
    if arrays.rank.size == 0:
        raise ValueError(f"{meta['model']} / {meta['dataset']}: no scored tokens")
    hist = rank_histogram(arrays.rank, vocab_size)
    ks = k_grid(vocab_size, analysis["k_points_per_decade"], analysis["k_include"])
    emergence_k = [k for k in analysis["emergence_k"] if k <= vocab_size]
    emergence_n = list(analysis["emergence_N"])
    law_k = [k for k in analysis["law_k"] if k <= vocab_size]
    truncate = analysis["lognormal"]["truncate"]
    docs, stats = document_statistics(arrays, ks, emergence_k, emergence_n)
    row = np.searchsorted(docs, arrays.doc)
    pairs = RankPairs.of(row, arrays, vocab_size)
    tests, llr = rank_tests(hist, pairs, len(docs))
    stats.update(llr)
    units = resampling.units[docs]
    keys = (resampling.seed, resampling.family, resampling.dataset)
    replicates = replicate_totals(stats, units, resampling.n_units, resampling.replicates, *keys)
    distribution = distribution_statistics(*rank_sums(arrays.rank, arrays.logprob, vocab_size), law_k, truncate)
    blocks = (
        b[:, units].astype(np.float64)
        for b in resample_counts(resampling.n_units, analysis["lognormal"]["replicates"], *keys)
    )
    replicates.update(
        distribution_replicates(*pairs.by_row(vocab_size, len(docs)), blocks, distribution, law_k, truncate)
    )
    statistics = [name for name, value in distribution.items() if isinstance(value, float)]
    run_total, run_hit = stats["run_windows"].sum(axis=0), stats["run_hits"].sum(axis=0)
    runs = [
        {
            "k": k,
            "N": n,
            "n_runs": int(run_total[j]),
            "empirical": float(run_hit[i, j] / run_total[j]) if run_total[j] else float("nan"),
        }
        for i, k in enumerate(emergence_k)
        for j, n in enumerate(emergence_n)
    ]
    point_totals = totals(arrays, hist, ks)
    point_totals.update({name: distribution[name] for name in statistics})  # metrics such as `ee` read them
    point_totals.update(
        {name: [int(v) for v in stats[name].sum(axis=0)] for name in ("pairs_prev_hit", "pairs_both_hit")}
    )
    info = {"D": None, "size": meta["model"], "final": True, **(model or {})}  # `ModelPlan.info()`
    summary = {
        "model": meta["model"],
        "family": resampling.family,
        "dataset": meta["dataset"],
        "S": int(meta["S"]),
        "D": info["D"],
        "size": info["size"],
        "final": info["final"],
        "vocab_size": vocab_size,
        "n_tokens": int(arrays.rank.size),
        "n_documents": len(docs),
        "k": ks,
        "totals": point_totals,
        "emergence_k": emergence_k,
        "emergence_N": emergence_n,
        "law_k": law_k,
        "distribution": distribution,
        "distribution_replicates": int(analysis["lognormal"]["replicates"]),
        "lognormal": {
            "mu": distribution["mu"],
            "sigma": distribution["sigma"],
            "mu_over_sigma": distribution["mu"] / distribution["sigma"],
            "truncated": truncate,
            "note": distribution["note"],
        },
        "rank_tests": tests,
        "mean_log_rank": float(np.mean(np.log(arrays.rank.astype(np.float64)))),
        "runs": runs,
        "ties": meta["ties"],
        "rank_sha256": meta["sha256"],
    }
    boot = {
        "units": units,
        **{f"doc_{k}": v for k, v in stats.items()},
        **{f"rep_{k}": v for k, v in replicates.items()},
    }
    return summary, hist, boot


def load_replicates(path: str | Path) -> dict[str, np.ndarray]:
    """The replicate totals of a summary's bootstrap file, keyed like `totals` (n, sum_logprob, hits, ...)."""
    with np.load(path) as data:
        return {name[4:]: data[name] for name in data.files if name.startswith("rep_")}
