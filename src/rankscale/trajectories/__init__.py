"""Which tokens a larger model gets right: per-token rank trajectories across a family's sizes, checkpoints
and seeds (docs/science.md, "Token trajectories"). One job per family x dataset reads the family's rank
arrays (rule `trajectories`) and writes the counts four tables read (`rankscale.tables.tokens`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rankscale.bootstrap import Resampling
from rankscale.rankfile import RankArrays
from rankscale.strata import StrataSettings, StrataTokens, assign
from rankscale.trajectories.align import Aligned, TrackedModel, align, alignment_problems
from rankscale.trajectories.compute import RANK_BINS, Groups, Pair, learning_codes, size_chains
from rankscale.trajectories.result import TrajectoryResult, analyse, load, save
from rankscale.windows import WindowSpec


@dataclass(frozen=True)
class TrajectorySettings:
    """What a `trajectories` job counts with, typed once from its params (`rankscale.plan.trajectory_settings`
    makes them from the validated configuration): the k followed, the bootstrap's draws (the summaries', so every
    interval is paired) and the strata."""

    ks: list[int]
    replicates: int
    seed: int
    strata: StrataSettings

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TrajectorySettings:
        unknown = set(params) - {"ks", "replicates", "seed", "strata"}
        if unknown:
            raise KeyError(f"trajectory settings {sorted(unknown)} are not fields of TrajectorySettings")
        return cls([int(k) for k in params["ks"]], int(params["replicates"]), int(params["seed"]),
                   StrataSettings.from_params(params["strata"]))  # fmt: skip


def trajectories(
    family: str,
    dataset: str,
    models: Sequence[TrackedModel],
    read: Callable[[int], tuple[RankArrays, Mapping[str, Any]]],
    bootstrap: Resampling,
    ks: Sequence[int],
    strata: StrataSettings,
    windows: WindowSpec,
    kind_table: np.ndarray | None,
) -> TrajectoryResult:
    """The family's trajectories on the dataset: align its models (`read(i)`: model i's array and sidecar),
    stratify the reference's tokens, count per document, bootstrap. `bootstrap.units[d]` is the corpus document
    of document d of the token file."""
    aligned = align(models, read)
    docs, row = np.unique(aligned.doc, return_inverse=True)
    tokens = StrataTokens(aligned.target, aligned.doc, aligned.pos, windows, kind_table)
    kinds = [k for k in strata.kinds if k != "kind" or kind_table is not None]  # no token table: no kind stratum
    labels, index = assign(replace(strata, kinds=kinds), tokens)
    groups = Groups(row.astype(np.int64), len(docs), index.astype(np.int64), 1 + len(labels))
    units = replace(bootstrap, units=np.asarray(bootstrap.units, dtype=np.int64)[docs])
    return analyse(family, dataset, aligned, groups, labels, sorted(set(ks)), units)


__all__ = [
    "RANK_BINS",
    "Aligned",
    "Groups",
    "Pair",
    "TrackedModel",
    "TrajectoryResult",
    "TrajectorySettings",
    "align",
    "alignment_problems",
    "analyse",
    "learning_codes",
    "load",
    "save",
    "size_chains",
    "trajectories",
]
