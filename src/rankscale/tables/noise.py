"""Where a law's interval comes from: the replicates of its fitted quantity, and the sources they resample.

The documents always (every replicate is one document draw, the same for every model of a family);
the training runs too wherever some size of the law has several seeds: the hierarchical bootstrap
resamples the runs within each size on top (`rankscale.bootstrap.with_seed_noise`); and the sizes' own
scatter around the law, beyond what documents and seeds explain (`LawNoise`, `rankscale.laws.random_effects`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from rankscale.bootstrap import EXPANSION_LEVEL, expansion, has_replicas, seed_draws, seed_sequence, with_seed_noise
from rankscale.laws import FitForm, FittedLaw, Points
from rankscale.laws.components import fit_components
from rankscale.laws.few_documents import Documents
from rankscale.laws.form import RefittedParameters as Refitted
from rankscale.laws.paired import size_correlation
from rankscale.laws.random_effects import (
    SizeDraws,
    SizeLevel,
    fit_size_level,
    log_design,
    ols_map,
    replicate_covariance,
    size_matrix,
    with_size_level,
)
from rankscale.metrics import METRICS
from rankscale.tables.base import Replicates
from rankscale.tables.selection import optional_int


@dataclass(frozen=True)
class Noise:
    """The sources a law's intervals include: the documents always (the replicates resample them), and the
    training runs wherever some size of the law has several seeds (the hierarchical bootstrap's seed level)."""

    groups: list[str]  # each point's size (`replica_of`)
    draws: np.ndarray | None  # [B, points] seed draws, None when every size has one run
    seed: int | None  # the bootstrap's seed
    # degrees of freedom of the document covariance: the fewest effective documents of the points, less one
    # (`covariance_df`); inf where the rows do not say (a covariance taken as known)
    documents_df: float = math.inf
    # each resampling unit's influence on log y and its tokens, where the documents test the law from them
    # (`law_documents`, `rankscale.laws.few_documents`); None: Hotelling's T^2 on `documents_df`
    documents: Documents | None = None

    @classmethod
    def of(cls, group: pd.DataFrame, replicates: int, seed: int | None) -> Noise:
        groups = [str(g) for g in group["replica_of"]] if "replica_of" in group else list(group["model"])
        df = rows_covariance_df(group)
        if not has_replicas(groups):
            return cls(groups, None, seed, df)
        assert seed is not None, "a table whose laws may have several seeds per size declares the `seed` setting"
        keys = (str(group["family"].iloc[0]), str(group["dataset"].iloc[0]))
        return cls(groups, seed_draws(groups, replicates, seed, *keys), seed, df)

    @property
    def label(self) -> str:
        return "documents" if self.draws is None else "documents+seeds"

    def with_documents(self, documents: Documents | None) -> Noise:
        """This noise with the units' influence on a law's points (`law_documents`), unless seeds add a level the
        documents' influence does not see."""
        return replace(self, documents=documents if self.draws is None else None)

    def apply(self, values: np.ndarray) -> np.ndarray:
        """Replicates [B, points] of the fitted quantity, with the seed level added where there is one."""
        return values if self.draws is None else with_seed_noise(values, self.groups, self.draws)

    @property
    def expansion(self) -> float:
        """The factor a law's document deviations are widened by for few documents (`rankscale.bootstrap.expansion`
        at the fewest effective documents of the points; 1 where unknown)."""
        return expansion(self.documents_df + 1.0, EXPANSION_LEVEL)

    def expand(self, y: np.ndarray, document_reps: np.ndarray) -> np.ndarray:
        """Document replicates [B, points] of positive y with their log deviations from y widened by `expansion`:
        what a law's intervals are built from (its size level and lack of fit use the replicates as drawn)."""
        factor = self.expansion
        if factor == 1.0:
            return document_reps
        reps = np.asarray(document_reps, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_y = np.log(np.asarray(y, dtype=np.float64))[None, :]
            widened = np.exp(log_y + factor * (np.log(reps) - log_y))
        return np.where(np.isfinite(widened) & (reps > 0), widened, reps)  # a value <= 0 keeps what it is

    def new_run(self, values: np.ndarray, keys: Sequence[str]) -> np.ndarray | float:
        """Per replicate, the factor by which one new run's value departs from the law: exp of a log deviation
        drawn from the runs of the sizes with several seeds in `values` (1 without seeds)."""
        if self.draws is None:
            return 1.0
        logs, deviations = np.log(values), []
        labels = np.asarray(self.groups)
        for label in np.unique(labels):
            cols = np.flatnonzero(labels == label)
            if cols.size > 1:
                mean = logs[:, cols].mean(axis=1, keepdims=True)
                deviations.append(np.sqrt(cols.size / (cols.size - 1)) * (logs[:, cols] - mean))
        if not deviations:
            return 1.0
        pooled = np.concatenate(deviations, axis=1)
        rng = np.random.default_rng(seed_sequence(self.seed or 0, *keys, "new run"))
        pick = rng.integers(0, pooled.shape[1], len(pooled))
        return np.exp(pooled[np.arange(len(pooled)), pick])


def covariance_df(n_eff_documents: Sequence[float] | pd.Series) -> float:
    """The degrees of freedom of a bootstrap covariance over the documents of some models (`lack_of_fit`): Kish's
    effective number of documents less one, the fewest of the models' (`Summary.n_eff_documents`); inf where one
    is unknown (a covariance then taken as known)."""
    n_eff = pd.to_numeric(pd.Series(n_eff_documents, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    return float(n_eff.min()) - 1.0 if n_eff.size and np.isfinite(n_eff).all() else math.inf


def rows_covariance_df(rows: pd.DataFrame) -> float:
    """`covariance_df` of the models of some per-model rows (their `n_eff_documents`; inf where the rows lack it)."""
    return covariance_df(rows["n_eff_documents"]) if "n_eff_documents" in rows else math.inf


def law_replicates(group: pd.DataFrame, replicates: Replicates) -> np.ndarray:
    """The fitted quantity of a (family, dataset, metric, k) group on every replicate: [B, models] (of one
    stratum's tokens where the rows say which)."""
    metric = METRICS[group["metric"].iloc[0]]
    k = optional_int(group["k"].iloc[0])
    # rows of one stratum (strata tables) carry each model's index of it (`Summary.strata_columns`)
    strata = group["stratum_index"].tolist() if "stratum_index" in group else [None] * len(group)
    columns = [replicates.at(m, d, metric.name, k, s)
               for m, d, s in zip(group["model"], group["dataset"], strata, strict=True)]  # fmt: skip
    with np.errstate(divide="ignore"):
        return metric.to_law(np.stack(columns, axis=1))


@dataclass(frozen=True)
class LawNoise:
    """A law's replicates with every source of noise: the documents, the seeds where sizes have several (`Noise`),
    and the sizes' scatter around the law (`SizeLevel`: tau^2 by REML with the replicates' full covariance), so a
    percentile interval of anything refitted on them (parameters, bands, predictions) includes all three."""

    noise: Noise
    size_level: SizeLevel | None  # None: as many sizes as parameters, no scatter to estimate
    documents: np.ndarray  # [B, points] of the fitted quantity: documents (+ seeds)
    replicates: np.ndarray  # [B, points]: documents (+ seeds) (+ sizes)
    draws: SizeDraws | None

    @classmethod
    def of(cls, form: FitForm, law: FittedLaw, points: Points, y: np.ndarray, document_reps: np.ndarray,
           noise: Noise, keys: Sequence[str], kinds: Sequence[np.ndarray] = ()) -> LawNoise:  # fmt: skip
        """The size level of the law `law` fitted to `y` at `points`, from replicates [B, points] that resample
        the documents (the seed level is added here where `noise` has one); draws seeded by `keys` (`law_keys`: each
        law its own, so no one draw of the size level narrows every law of a family at once; a contrast pairs
        its two laws' draws itself, `rankscale.tables.lawkit.exponent_contrast`). `kinds`: the K of each
        variance component where there are several (`rankscale.laws.components`), else one deviation per size."""
        with np.errstate(divide="ignore", invalid="ignore"):
            reps = noise.apply(document_reps)
            log_reps, log_y = np.log(reps), np.log(np.asarray(y, dtype=np.float64))
        level = size_level_of(form, law, points, log_y, log_reps, noise.groups, kinds, noise.documents_df,
                              noise.documents)  # fmt: skip
        wide = noise.apply(noise.expand(y, document_reps))  # few documents: widened (`Noise.expand`)
        if level is None:
            return cls(noise, None, wide, wide, None)
        return cls(noise, level, wide, wide, None).drawn(y, keys, 1.0)

    def drawn(self, y: np.ndarray, keys: Sequence[str], correlation: float) -> LawNoise:
        """This law's size level drawn from the stream `keys` names, its deviations correlated `correlation` with
        those of another law of the same stream (1: the same normals; `rankscale.laws.paired`)."""
        if self.size_level is None:
            return self
        seed = self.noise.seed or 0
        rng = np.random.default_rng(seed_sequence(seed, *keys, "sizes"))
        fresh = np.random.default_rng(seed_sequence(seed, *keys, "sizes", "paired"))
        draws = SizeDraws.of(self.size_level, size_matrix(self.noise.groups), len(self.documents), rng,
                             (correlation, fresh))  # fmt: skip
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a far-off draw: inf, left out
            log_y = np.log(np.asarray(y, dtype=np.float64))
            return replace(self, replicates=np.exp(draws.apply(log_y, np.log(self.documents))), draws=draws)

    @property
    def label(self) -> str:
        return self.noise.label + ("+sizes" if self.size_level is not None else "")

    @property
    def new_size(self) -> np.ndarray:
        """[B] a new size's log deviation off the law (0 without a size level)."""
        return np.zeros(len(self.documents)) if self.draws is None else self.draws.new

    def refit(self, form: FitForm, law: FittedLaw, points: Points, refits: int) -> Refitted:
        """The law's parameters on every replicate, the size level included (`refit_both`, without its refits on
        the documents alone where a form refitted exactly does not need them)."""
        if self.draws is not None and (form.log_linear or form.batch_refits):
            return form.fit_replicates(points, self.replicates, law, refits)
        return self.refit_both(form, law, points, refits)[0]

    def refit_both(self, form: FitForm, law: FittedLaw, points: Points, refits: int) -> tuple[Refitted, Refitted]:
        """The law's parameters on every replicate with the size level, and on the documents (and seeds) alone.
        A form linear in log space (the power law), or one that refits every replicate cheaply (the joint law), is
        refitted on `replicates` (exact); another is refitted on the document replicates only, and the size level
        added through its linearisation at the fit (`SizeDraws.shift_parameters`), so its refits cost what they
        did and converge as they did; parameters stay inside their domain."""
        documents = form.fit_replicates(points, self.documents, law, refits)
        if self.draws is None:
            return documents, documents
        if form.log_linear or form.batch_refits:
            return form.fit_replicates(points, self.replicates, law, refits), documents
        refitted = documents
        X, names = log_design(form, law, points)
        if not names:
            return documents, documents
        theta = np.array([float(law.row()[n]) for n in names])
        shifted = self.draws.shift_parameters(theta, np.stack([refitted[n] for n in names], axis=1), ols_map(X))
        out = dict(refitted)
        for j, name in enumerate(names):
            bound = form.bounds.get(name)
            out[name] = shifted[:, j] if bound is None else np.clip(shifted[:, j], bound.low, bound.high)
        return out, documents

    def columns(self) -> dict[str, float]:
        """The size level's columns of a law's row (`size_level_columns`)."""
        return size_level_columns(self.size_level)


SIZE_LEVEL_COLUMNS = ("tau2", "lof_q", "lof_df", "lof_p", "lof_n_eff", "df")


def size_level_columns(level: SizeLevel | None) -> dict[str, float]:
    """The size level's columns of a law's row: tau^2, the lack-of-fit Q, its df and p-value (NaN: not testable,
    under `rankscale.laws.few_documents.MIN_DOCUMENTS` effective documents), the effective number of documents
    that decided it (`SizeLevel.q_n_eff`; NaN where a covariance was taken as known), and the exponent's interval
    as Student's t degrees of freedom (`SizeLevel.df`; NaN where there is no size level, or no wider than Normal)."""
    if level is None:
        return dict.fromkeys(SIZE_LEVEL_COLUMNS, math.nan)
    finite = {"lof_n_eff": level.q_n_eff, "df": level.df}
    return {"tau2": level.tau2, "lof_q": level.q, "lof_df": level.q_df, "lof_p": level.q_p,
            **{k: float(v) if np.isfinite(v) else math.nan for k, v in finite.items()}}  # fmt: skip


def size_level_of(form: FitForm, law: FittedLaw, points: Points, log_y: np.ndarray, log_reps: np.ndarray,
                  groups: Sequence[str], kinds: Sequence[np.ndarray] = (), documents_df: float = math.inf,
                  documents: Documents | None = None) -> SizeLevel | None:  # fmt: skip
    """tau^2 and the lack of fit of a law in log space (None where the points cannot show scatter: no more points
    than parameters, a point that is not positive, or too few finite replicates); with `kinds`, every component's;
    `documents_df`: the degrees of freedom of the replicates' covariance (`Noise.documents_df`); `documents`: the
    units' influence and tokens (`Noise.documents`)."""
    if not np.all(np.isfinite(log_y)):
        return None
    X, names = log_design(form, law, points)
    if not names:  # every parameter at a bound of its domain: nothing left to linearise
        return None
    contrast = np.zeros(len(names))
    contrast[names.index(form.exponent) if form.exponent in names else 0] = 1.0
    try:
        V = replicate_covariance(log_y, log_reps)
        if kinds:
            return fit_components(X, log_y, V, kinds, contrast, documents_df)
        return fit_size_level(X, log_y, V, size_matrix(groups), contrast, documents_df, documents)
    except (ValueError, np.linalg.LinAlgError):
        return None


def size_correlation_of(form: FitForm, laws: tuple[FittedLaw, FittedLaw], points: Points,
                        y: tuple[np.ndarray, np.ndarray], document_reps: tuple[np.ndarray, np.ndarray],
                        each: tuple[LawNoise, LawNoise]) -> float:  # fmt: skip
    """The correlation of two laws' size deviations over the same models (`rankscale.laws.paired`): REML with each
    law's own tau^2, their designs linearised at the fits and the documents' (and seeds') joint covariance of the
    paired replicates; 0 where either law has no size level or the covariance cannot be formed."""
    levels = [n.size_level for n in each]
    if any(level is None or level.parts for level in levels):
        return 0.0
    noise = each[0].noise
    with np.errstate(divide="ignore", invalid="ignore"):
        log_y = [np.log(np.asarray(v, dtype=np.float64)) for v in y]
        log_reps = [np.log(noise.apply(r)) for r in document_reps]
    try:
        V = replicate_covariance(np.concatenate(log_y), np.concatenate(log_reps, axis=1))
        designs = tuple(log_design(form, law, points)[0] for law in laws)
        return size_correlation(designs, (log_y[0], log_y[1]), V, size_matrix(noise.groups),
                                (levels[0].tau2, levels[1].tau2))  # fmt: skip
    except (ValueError, np.linalg.LinAlgError):
        return 0.0


def law_keys(family: object, dataset: object, metric: object, k: object) -> tuple[str, ...]:
    """The stream a law's size-level draws come from: its family, dataset, metric and k. One stream per family and
    dataset made every law of them share one draw of the sizes' scatter (all 47 of HumanEval's exponent intervals
    7.6% narrower than their pivot at seed 0)."""
    return str(family), str(dataset), str(metric), str(optional_int(k))


def law_documents(group: pd.DataFrame, replicates: Replicates) -> Documents | None:
    """Each resampling unit's influence on log of the group's fitted quantity, [U, models] (`Replicates.influence`),
    and its scored tokens (the first model's: a law's models score the same documents), where every model has unit
    totals (the sign-flip test from the documents, `rankscale.laws.few_documents`, at any number of documents:
    Hotelling's T^2 rejected 9.3% of exact laws at 41 effective real documents); else None (Hotelling's T^2)."""
    metric = group["metric"].iloc[0]
    k = optional_int(group["k"].iloc[0])
    strata = group["stratum_index"].tolist() if "stratum_index" in group else [None] * len(group)
    columns = [replicates.influence(m, d, metric, k, s)
               for m, d, s in zip(group["model"], group["dataset"], strata, strict=True)]  # fmt: skip
    if any(c is None for c in columns) or len({len(c) for c in columns if c is not None}) != 1:
        return None
    tokens = replicates.unit_tokens(group["model"].iloc[0], group["dataset"].iloc[0], strata[0])
    return Documents(np.stack([c for c in columns if c is not None], axis=1), tokens)


def law_noise(group: pd.DataFrame, replicates: Replicates, form: FitForm, law: FittedLaw, points: Points,
              seed: int | None) -> LawNoise:  # fmt: skip
    """The `LawNoise` of a (family, dataset, metric, k) group's law (`law_replicates`: one stratum's where the rows
    say which)."""
    reps = law_replicates(group, replicates)
    metric = METRICS[group["metric"].iloc[0]]
    y = metric.to_law(group["value"].to_numpy(dtype=np.float64))
    keys = law_keys(group["family"].iloc[0], group["dataset"].iloc[0], group["metric"].iloc[0], group["k"].iloc[0])
    noise = Noise.of(group, len(reps), seed).with_documents(law_documents(group, replicates))
    return LawNoise.of(form, law, points, y, reps, noise, keys)


def line_with_sizes(
    x: np.ndarray,
    y: np.ndarray,
    samples: np.ndarray,
    groups: Sequence[str],
    seed: int | None,
    keys: Sequence[str],
    documents_df: float = math.inf,
) -> tuple[SizeLevel | None, np.ndarray]:
    """A straight line y = a + b x across models in y's own units (the lognormal's mu against log S): its size
    level and replicates [B, M] that carry it (the `samples` themselves where no scatter can be estimated), their
    document deviations widened for few documents (`rankscale.bootstrap.expansion`, additive in y's units)."""
    X = np.stack([np.ones_like(x), x], axis=1)
    try:
        V = replicate_covariance(y, samples)
        level = fit_size_level(X, y, V, size_matrix(groups), np.array([0.0, 1.0]), documents_df)
    except (ValueError, np.linalg.LinAlgError):
        level = None
    factor = expansion(documents_df + 1.0, EXPANSION_LEVEL)
    wide = samples if factor == 1.0 else y[None, :] + factor * (samples - y[None, :])
    if level is None:
        return None, wide
    rng = np.random.default_rng(seed_sequence(seed or 0, *keys, "sizes"))
    return level, with_size_level(y, wide, size_matrix(groups), level, rng)[0]
