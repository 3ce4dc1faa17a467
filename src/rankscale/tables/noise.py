"""Where a law's interval comes from: the replicates of its fitted quantity, and the sources they resample.

The documents always (every replicate is one document draw, the same for every model of a family);
the training runs too wherever some size of the law has several seeds: the hierarchical bootstrap
resamples the runs within each size on top (`rankscale.bootstrap.with_seed_noise`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rankscale.bootstrap import has_replicas, seed_draws, seed_sequence, with_seed_noise
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

    @classmethod
    def of(cls, group: pd.DataFrame, replicates: int, seed: int | None) -> Noise:
        groups = [str(g) for g in group["replica_of"]] if "replica_of" in group else list(group["model"])
        if not has_replicas(groups):
            return cls(groups, None, seed)
        assert seed is not None, "a table whose laws may have several seeds per size declares the `seed` setting"
        keys = (str(group["family"].iloc[0]), str(group["dataset"].iloc[0]))
        return cls(groups, seed_draws(groups, replicates, seed, *keys), seed)

    @property
    def label(self) -> str:
        return "documents" if self.draws is None else "documents+seeds"

    def apply(self, values: np.ndarray) -> np.ndarray:
        """Replicates [B, points] of the fitted quantity, with the seed level added where there is one."""
        return values if self.draws is None else with_seed_noise(values, self.groups, self.draws)

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
