"""One family x dataset's token trajectories: the counts and their bootstrap replicates, on disk as an .npz and
a JSON sidecar written last (a sidecar means complete), read back by the four tables."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from rankscale.atomic import sha256_file, write_json, write_npz
from rankscale.bootstrap import Resampling, kish_documents, replicate_totals
from rankscale.strata import Stratum
from rankscale.trajectories.align import Aligned, TrackedModel
from rankscale.trajectories.compute import (
    Groups,
    Pair,
    model_pairs,
    per_document,
    permutations,
    size_chains,
    slope_quantiles,
)

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True)
class TrajectoryResult:
    """Point totals (`point`: every count summed over documents) and replicate totals (`replicates`: [B, ...])."""

    family: str
    dataset: str
    models: list[TrackedModel]  # the aligned models
    sizes: list[str]  # the size axis, in S order
    S: list[int]
    n_chains: int  # runs per size followed (seeds); 1 without seeds
    seeded_sizes: int  # sizes with several runs
    ks: list[int]
    pairs: list[Pair]
    strata: list[Stratum]  # group g >= 1 of the counts is strata[g - 1]
    n_tokens: int
    n_permutations: int
    quantiles: dict[str, float]
    notes: list[str]
    point: dict[str, np.ndarray] = field(repr=False)
    replicates: dict[str, np.ndarray] = field(repr=False)
    # Kish's effective number of the resampled documents (`rankscale.bootstrap.kish_documents`): under
    # `rankscale.intervals.RELIABLE_DOCUMENTS` of them the tables' intervals are marked unreliable
    n_eff_documents: float = math.nan
    # every count summed per resampling unit (a corpus document) [U, ...]: the tables' intervals of ratios (cluster-
    # robust t) and the jackknife of other statistics (BCa) come from them (`rankscale.intervals`); empty in files
    # written before they were kept, whose intervals are then bias-corrected percentiles of the replicates
    units: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def meta(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("point", "replicates", "units")}
        out["models"] = [asdict(m) for m in self.models]
        out["pairs"] = [asdict(p) for p in self.pairs]
        out["strata"] = [asdict(s) for s in self.strata]
        return out


def empty(
    family: str, dataset: str, ks: Sequence[int], notes: list[str], models: list[TrackedModel]
) -> TrajectoryResult:
    """A family with nothing to follow (fewer than two aligned models): its notes alone."""
    return TrajectoryResult(family, dataset, models, [], [], 0, 0, list(ks), [], [], 0, 0, {}, notes, {}, {})


def analyse(
    family: str,
    dataset: str,
    aligned: Aligned,
    groups: Groups,
    strata: list[Stratum],
    ks: Sequence[int],
    bootstrap: Resampling,
) -> TrajectoryResult:
    """Every count of `per_document`, summed (the point values) and bootstrapped over documents."""
    notes = list(aligned.notes)
    if len(aligned.models) < 2:
        notes.append(f"{len(aligned.models)} aligned model(s): nothing to follow across sizes or training")
        return empty(family, dataset, ks, notes, aligned.models)
    chains = size_chains(aligned.models)
    if len(chains.sizes) < 2:
        notes.append(f"one size ({', '.join(chains.sizes) or 'no final model'}): no churn, learning or slopes in S")
    elif len(chains.sizes) < 3:
        notes.append("two sizes: no permutation of the sizes estimates the slopes' noise")
    counts = per_document(aligned, groups, ks, bootstrap.seed)
    reps = replicate_totals(counts, bootstrap.units, bootstrap.n_units, bootstrap.replicates, bootstrap.seed,
                            bootstrap.dataset)  # fmt: skip
    return TrajectoryResult(
        family=family,
        dataset=dataset,
        models=aligned.models,
        sizes=chains.sizes,
        S=chains.S,
        n_chains=int(chains.rows.shape[0]),
        seeded_sizes=chains.seeded,
        ks=list(ks),
        pairs=model_pairs(aligned.models),
        strata=strata,
        n_tokens=int(aligned.ranks.shape[1]),
        n_permutations=len(permutations(len(chains.sizes), bootstrap.seed)),
        quantiles={
            f"q{round(q * 100):02d}": v for q, v in zip(QUANTILES, slope_quantiles(aligned, QUANTILES), strict=True)
        },
        notes=notes,
        point={name: value.sum(axis=0) for name, value in counts.items()},
        replicates=reps,
        n_eff_documents=kish_documents(np.bincount(bootstrap.units, weights=counts["tokens"][:, 0])),
        units=unit_sums(counts, bootstrap.units, bootstrap.n_units),
    )


def unit_sums(counts: dict[str, np.ndarray], units: np.ndarray, n_units: int) -> dict[str, np.ndarray]:
    """Every count [rows, ...] summed per resampling unit [n_units, ...] (`units[d]`: row d's document)."""
    rows = len(units)
    to_units = sparse.csr_matrix((np.ones(rows), (np.asarray(units), np.arange(rows))), shape=(n_units, rows))
    return {name: np.asarray(to_units @ np.asarray(value, dtype=np.float64).reshape(rows, -1)).reshape(
        n_units, *np.shape(value)[1:]) for name, value in counts.items()}  # fmt: skip


def save(result: TrajectoryResult, npz: str | Path, meta: str | Path) -> None:
    """The counts first, then the sidecar with their checksum."""
    arrays = {f"point_{k}": v for k, v in result.point.items()} | {f"rep_{k}": v for k, v in result.replicates.items()}
    arrays |= {f"unit_{k}": v for k, v in result.units.items()}
    write_npz(npz, **arrays)
    write_json(meta, {**result.meta(), "sha256": sha256_file(npz)})


def load(npz: str | Path, meta: str | Path) -> TrajectoryResult:
    """A result as saved; a counts file that is not the one its sidecar names is refused, naming both."""
    info = json.loads(Path(meta).read_text())
    if sha256_file(npz) != info.pop("sha256"):
        raise ValueError(f"{npz}: checksum does not match its sidecar {meta} (truncated or replaced file?)")
    with np.load(npz) as data:
        point = {k[6:]: data[k] for k in data.files if k.startswith("point_")}
        reps = {k[4:]: data[k] for k in data.files if k.startswith("rep_")}
        units = {k[5:]: data[k] for k in data.files if k.startswith("unit_")}
    info["models"] = [TrackedModel(**m) for m in info["models"]]
    info["pairs"] = [Pair(**p) for p in info["pairs"]]
    info["strata"] = [Stratum(**s) for s in info["strata"]]
    return TrajectoryResult(**info, point=point, replicates=reps, units=units)
