"""A finished run's results in Python: `rankscale.results.load("results/my")`.

The tables as pandas DataFrames by name, the manifest, and the rank arrays of a model on a dataset without knowing
the key in their file names: a run writes `results/<run>/arrays.json`, the index of the arrays behind its results
(model, dataset, path, checksum), when it succeeds (Snakefile `onsuccess`). docs/outputs.md, "Loading results in
Python", shows its use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rankscale.atomic import write_json
from rankscale.layout import RESULTS, Layout, RunFiles
from rankscale.rankfile import RankArrays, load_rank_arrays
from rankscale.tables.base import read_table

INDEX = "arrays.json"  # under results/<run>/


@dataclass(frozen=True)
class ArrayEntry:
    """One rank array behind a run's results: its model and dataset, and where it lies (relative to the
    workflow's directory, the parent of results/)."""

    model: str
    dataset: str
    path: str  # results/ranks/<model>/<dataset>-<key>.npz; its sidecar is the same path ending in .json

    @property
    def sidecar(self) -> str:
        return str(Path(self.path).with_suffix(".json"))


def write_index(out: Path, arrays: Mapping[tuple[str, str], str]) -> None:
    """Write results/<run>/arrays.json: every (model, dataset)'s rank array (`Layout.ranks`), for `load`."""
    entries = [{"model": m, "dataset": d, "path": str(p)} for (m, d), p in sorted(arrays.items())]
    path = out / INDEX
    if path.is_file() and json.loads(path.read_text(encoding="utf-8")) == {"arrays": entries}:
        return  # unchanged: keep its bytes and time
    write_json(path, {"arrays": entries})


@dataclass(frozen=True)
class Results:
    """A run's results: `tables[name]` (results/<run>/tables/<name>.csv as written: k and D nullable integers),
    the manifest, and its rank arrays (`ranks`)."""

    directory: Path  # results/<run>
    tables: Mapping[str, pd.DataFrame]
    manifest: Mapping[str, Any]
    arrays: tuple[ArrayEntry, ...]

    @property
    def root(self) -> Path:
        """The workflow's directory, that results/<run> and results/ranks/ lie in."""
        return self.directory.resolve().parent.parent

    @property
    def models(self) -> list[str]:
        return sorted({a.model for a in self.arrays})

    @property
    def datasets(self) -> list[str]:
        return sorted({a.dataset for a in self.arrays})

    def entry(self, model: str, dataset: str) -> ArrayEntry:
        found = [a for a in self.arrays if a.model == model and a.dataset == dataset]
        if not found:
            raise KeyError(f"{self.directory}: no rank array of model {model!r} on dataset {dataset!r}; "
                           f"models: {', '.join(self.models)}; datasets: {', '.join(self.datasets)}")  # fmt: skip
        return found[0]

    def ranks(self, model: str, dataset: str, verify: bool = True) -> RankArrays:
        """The rank array of `model` on `dataset` (rank, log-prob, document, position and target of every scored
        token), its checksum verified against its sidecar unless `verify` is False."""
        entry = self.entry(model, dataset)
        return load_rank_arrays(self.root / entry.path, self.root / entry.sidecar, verify_checksum=verify)[0]

    def sidecar(self, model: str, dataset: str) -> dict[str, Any]:
        """The provenance of that rank array: model, revision, S, |V|, tokenizer and corpus hashes, windows, ..."""
        return json.loads((self.root / self.entry(model, dataset).sidecar).read_text(encoding="utf-8"))


def _scan(root: Path, models: Sequence[str], datasets: Sequence[str]) -> tuple[ArrayEntry, ...]:
    """The arrays of a run written before arrays.json existed: each (model, dataset) of its metrics whose sidecar
    is the only one of that model and dataset under results/ranks/ (several: ambiguous, left out)."""
    out = []
    for model in models:
        for dataset in datasets:
            sidecars = [p for p in (root / Layout.ranks_dir(model)).glob(f"{dataset}-*.json")
                        if Layout.dataset_of(p.stem) == dataset]  # fmt: skip
            if len(sidecars) == 1:
                out.append(ArrayEntry(model, dataset, str(sidecars[0].with_suffix(".npz").relative_to(root))))
    return tuple(out)


def load(directory: str | Path) -> Results:
    """The results in `directory` (results/<run>): every table, the manifest and the index of its rank arrays."""
    directory = Path(directory)
    files = RunFiles(directory)
    tables_dir = Path(files.tables)
    if not tables_dir.is_dir():
        raise FileNotFoundError(f"{directory}: no tables/ here; give a run's directory, e.g. {RESULTS}/default")
    tables = {p.stem: read_table(p) for p in sorted(tables_dir.glob("*.csv"))}
    manifest_path = Path(files.manifest)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    index = directory / INDEX
    if index.is_file():
        arrays = tuple(ArrayEntry(**e) for e in json.loads(index.read_text(encoding="utf-8"))["arrays"])
    else:
        metrics = tables.get("metrics", pd.DataFrame())
        models = sorted(metrics["model"].unique()) if "model" in metrics else []
        datasets = sorted(metrics["dataset"].unique()) if "dataset" in metrics else []
        arrays = _scan(directory.resolve().parent.parent, models, datasets)
    return Results(directory, tables, manifest, arrays)
