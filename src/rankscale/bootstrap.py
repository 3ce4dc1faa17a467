"""Uncertainty: a paired bootstrap over documents (docs/science.md, "Uncertainty").

Tokens inside one document are correlated, so the resampling unit is the document, never the
token. A replicate draws the corpus's N documents with replacement; its totals are the
per-document sums weighted by how often each document was drawn, so B replicates of every total
are one matrix product. The draws depend only on (seed, family, dataset, N): every model of a
family scored on one dataset sees the same resample (paired noise), whichever job computes it.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

BLOCK = 64  # replicates drawn at once (bounds memory at 64 x N counts)


def seed_sequence(seed: int, *keys: str) -> np.random.SeedSequence:
    """A seed stream for (seed, keys): stable across runs, machines and Python versions."""
    words = [int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") for key in keys]
    return np.random.SeedSequence([seed, *words])


def resample_counts(n_units: int, replicates: int, seed: int, *keys: str) -> Iterator[np.ndarray]:
    """Blocks of draw counts, shape [b, n_units]: each row is one replicate's multinomial draw."""
    rng = np.random.default_rng(seed_sequence(seed, *keys))
    for start in range(0, replicates, BLOCK):
        rows = min(BLOCK, replicates - start)
        draws = rng.integers(0, n_units, size=(rows, n_units))
        offsets = (np.arange(rows) * n_units)[:, None]
        yield np.bincount((draws + offsets).ravel(), minlength=rows * n_units).reshape(rows, n_units)


@dataclass(frozen=True)
class Resampling:
    """Which documents a bootstrap draws from: the dataset's n_units documents (its corpus, the same for every
    tokenizer); document d of this model's token file is unit `units[d]`. The draws depend on (seed, dataset, N)
    alone, so every model of every family scored on the dataset sees the same resample: families compare paired.
    The one type for it: the summaries (`rankscale.summary`) and the token trajectories draw through it."""

    units: np.ndarray
    n_units: int
    replicates: int
    seed: int
    dataset: str

    @classmethod
    def for_dataset(cls, own: np.ndarray, n_documents: int, replicates: int, seed: int, dataset: str) -> Resampling:
        """`own`: the corpus index of each document of this model's token file; `n_documents`: the corpus's."""
        own = np.asarray(own, dtype=np.int64)
        if own.size and (own.min() < 0 or own.max() >= n_documents):
            raise ValueError(f"dataset {dataset}: a token file's documents lie outside its corpus of {n_documents}")
        return cls(own, int(n_documents), replicates, seed, dataset)

    def draws(self, replicates: int) -> Any:
        """Blocks of draw counts of the first `replicates` replicates, [b, n_units] each."""
        return resample_counts(self.n_units, replicates, self.seed, self.dataset)


def replicate_totals(
    per_unit: Mapping[str, np.ndarray],
    unit: np.ndarray,
    n_units: int,
    replicates: int,
    seed: int,
    *keys: str,
    squared: Collection[str] = (),
) -> dict[str, np.ndarray]:
    """Replicate sums [B, ...] of per-document statistics [D, ...]; `unit[d]` is row d's document (0..N-1).

    `squared`: statistics that are squares of a document's sum, which a debiased square subtracts from the square
    of the total (`rankscale.calibration.debiased_square`): their replicate sums weigh a document drawn c times by
    c², so that a replicate's (sum_d c_d S_d)^2 - sum_d c_d^2 S_d^2 keeps the products of different documents
    alone, as the point does (with weights c, the copies' products would bring the noise back)."""
    flat = {name: np.asarray(stat, dtype=np.float64).reshape(len(unit), -1) for name, stat in per_unit.items()}
    out = {name: np.empty((replicates, stat.shape[1])) for name, stat in flat.items()}
    done = 0
    for counts in resample_counts(n_units, replicates, seed, *keys):
        weights = counts[:, unit].astype(np.float64)  # exact: counts and sums stay far below 2^53
        for name, stat in flat.items():
            out[name][done : done + len(weights)] = (weights**2 if name in squared else weights) @ stat
        done += len(weights)
    return {name: out[name].reshape(replicates, *np.shape(per_unit[name])[1:]) for name in out}


def kish_documents(tokens: np.ndarray) -> float:
    """Kish's effective number of documents, (sum n_d)^2 / sum n_d^2 over the resampled units' scored tokens n_d:
    how many equally long documents a token-weighted mean is worth. pydoc's 27 documents (73 to 7,153 tokens
    under the default ladder's tokenizer) are worth 6.6; a bootstrap covariance over them is that noisy."""
    n = np.asarray(tokens, dtype=np.float64)
    squares = float((n**2).sum())
    return float(n.sum()) ** 2 / squares if squares > 0 else float("nan")


EXPANSION_LEVEL = 0.95  # where a law's document deviations are widened (`expansion`), at this level's quantiles


def expansion(n_eff: float, at: float) -> float:
    """sqrt(n / (n - 1)) t_{n - 1} / z at the level `at`: how much too narrow a percentile bootstrap over n documents is.

    A percentile bootstrap of a mean over n documents is too narrow in small samples twice over: its spread is
    that of the plug-in variance (times sqrt((n - 1) / n)) and its quantiles are Normal's, not t's. Hesterberg's
    expanded percentile interval corrects both (Hesterberg 2015, "What teachers should know about the
    bootstrap", Am. Stat. 69:371, section 3.3); n is Kish's effective number of documents
    (`rankscale.bootstrap.kish_documents`), so long and short documents count as they weigh. 1 at n_eff <= 2, where
    t_{n - 1} has no useful quantile (such a dataset is marked `few_documents`), and where n_eff is unknown."""
    if not np.isfinite(n_eff) or n_eff <= 2.0:
        return 1.0
    from scipy import special

    z = special.ndtri(0.5 + at / 2.0)
    return float(np.sqrt(n_eff / (n_eff - 1.0)) * special.stdtrit(n_eff - 1.0, 0.5 + at / 2.0) / z)


def expanded_level(level: float, n_eff: float) -> float:
    """The percentile level of Hesterberg's expanded percentile interval (`expansion`): the level whose Normal
    quantile is sqrt(n / (n - 1)) t_{n - 1}. One model's document-level intervals take their percentiles there;
    it vanishes as n grows (n_eff = 100: 95% -> 95.4%)."""
    factor = expansion(n_eff, level)
    if factor == 1.0:
        return level
    from scipy import special

    return float(1.0 - 2.0 * special.ndtr(-factor * special.ndtri(0.5 + level / 2.0)))


def interval(
    values: np.ndarray,
    level: float,
    estimate: np.ndarray | float | None = None,
    axis: int = 0,
    n_eff: float = float("inf"),
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over replicates; NaN replicates (e.g. unfittable ones) are left out.

    With `estimate`, the interval is extended to contain it where it falls outside: R² of a
    near-perfect fit is the typical case, since every resampled refit can only fit worse.
    With `n_eff`, the effective number of documents a per-model quantity is resampled over, the percentiles are
    Hesterberg's expanded ones (`expanded_level`).
    """
    tail = (1.0 - expanded_level(level, n_eff)) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column gives NaN bounds
        low, high = np.nanquantile(np.asarray(values, dtype=np.float64), [tail, 1.0 - tail], axis=axis)
        if estimate is not None:  # (an interval with no valid replicate stays NaN)
            low = np.where(np.isnan(low), low, np.fmin(low, estimate))
            high = np.where(np.isnan(high), high, np.fmax(high, estimate))
    return low, high


def interval_mc_error(values: np.ndarray, level: float, n_eff: float = float("inf")) -> float:
    """The Monte Carlo standard error of `interval`'s ends as a share of its width, the larger end's: how far
    another B replicates would move them. The count of replicates below the q-quantile is Binomial(B, q), so the
    replicates' quantiles at q -/+ sqrt(q (1 - q) / B) bracket the end by one standard error each side (the
    order-statistic interval of a quantile); half their distance is its SE. Ends of 200 replicates move by up to
    a quarter of a width; of 1000, by about a ninth. NaN with fewer than two finite replicates or no width."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    if v.size < 2:
        return float("nan")
    tail = (1.0 - expanded_level(level, n_eff)) / 2.0
    low, high = np.quantile(v, [tail, 1.0 - tail])
    if not high > low:
        return float("nan")
    step = np.sqrt(tail * (1.0 - tail) / v.size)
    ends = np.quantile(v, np.clip([tail - step, tail + step, 1.0 - tail - step, 1.0 - tail + step], 0.0, 1.0))
    return float(max(ends[1] - ends[0], ends[3] - ends[2]) / 2.0 / (high - low))


def p_value(difference: np.ndarray) -> float:
    """Two-sided bootstrap p-value of `difference == 0`: twice the smaller tail share, counted as (1 + m) / (1 + B)."""
    d = np.asarray(difference, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return float("nan")
    tail = min(int(np.sum(d <= 0)), int(np.sum(d >= 0)))
    return float(min(1.0, 2.0 * (1 + tail) / (1 + d.size)))


def spread_to_noise(values: np.ndarray, replicates: Sequence[np.ndarray]) -> float:
    """SNR of a fitted quantity across sizes: std over models of log y / mean over models of its bootstrap std.

    Below ~2 the differences between model sizes are comparable to the resampling noise of one
    model: the law cannot be told apart from noise there (the paper's open question near k = |V|).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2 or not np.all(values > 0):
        return float("nan")
    logs = np.log(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        noise = [np.nanstd(np.log(np.where(r > 0, r, np.nan)), ddof=1) for r in replicates]
    mean_noise = float(np.mean(noise))
    return float(np.std(logs, ddof=1) / mean_noise) if mean_noise > 0 else float("inf")


def seed_draws(groups: Sequence[object], replicates: int, seed: int, *keys: str) -> np.ndarray:
    """[B, M] column indices for the seed level of the hierarchical bootstrap: in each replicate, each model
    (column) of a size (`groups[m]`, e.g. its `replica_of`) is replaced by one of that size's runs, drawn with
    replacement. Seeded by (seed, keys) alone, so every law of a family on a dataset draws the same seeds (the
    contrasts stay paired), and the first n rows are the same whatever B (statistics with fewer replicates pair)."""
    labels = np.asarray([str(g) for g in groups])
    u = np.random.default_rng(seed_sequence(seed, *keys, "seeds")).random((replicates, labels.size))
    out = np.empty((replicates, labels.size), dtype=np.int64)
    for label in np.unique(labels):
        cols = np.flatnonzero(labels == label)
        out[:, cols] = cols[np.minimum((u[:, cols] * cols.size).astype(np.int64), cols.size - 1)]
    return out


def has_replicas(groups: Sequence[object]) -> bool:
    """Some size was trained with more than one seed: training noise can be resampled."""
    labels = [str(g) for g in groups]
    return len(set(labels)) < len(labels)


def with_seed_noise(values: np.ndarray, groups: Sequence[object], draws: np.ndarray) -> np.ndarray:
    """Replicates [B, M] of a positive quantity with the seed level added: within each size of m >= 2 runs,
    log values = the size's mean + sqrt(m / (m - 1)) (log value of a drawn run - that mean).

    The documents are already resampled in `values` (the same draw for every model of the family); this
    resamples the runs within each size on top. The factor undoes the (m - 1) / m by which resampling m
    runs shrinks their spread, which with 3 seeds would leave a 95% interval covering ~89%.
    """
    labels = np.asarray([str(g) for g in groups])
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.asarray(values, dtype=np.float64))
    out = logs.copy()
    draws = draws[: len(logs)]
    for label in np.unique(labels):
        cols = np.flatnonzero(labels == label)
        if cols.size < 2:
            continue
        mean = logs[:, cols].mean(axis=1, keepdims=True)
        drawn = np.take_along_axis(logs, draws[:, cols], axis=1)
        out[:, cols] = mean + np.sqrt(cols.size / (cols.size - 1)) * (drawn - mean)
    return np.exp(out)
