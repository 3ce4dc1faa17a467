"""A model x dataset summary as a typed result, with its one JSON form and its verified files.

The summary JSON is written last, after the rank histogram and bootstrap files it records the
checksums of: a summary on disk means all three are complete, and a truncated or replaced
replicate file is named when it is read, never half-used.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from rankscale.atomic import checksum_matches, json_text, remember_checksum, sha256_file, write_json, write_npz
from rankscale.conjecture import Distribution
from rankscale.statistics import Totals
from rankscale.strata import Stratum

MODEL_COLUMNS = (
    "family",
    "model",
    "dataset",
    "S",
    "D",
    "size",
    "final",
    "seed",
    "replica_of",
    "vocab_size",
    "n_tokens",
    "n_documents",
    "n_eff_documents",
)


class SummaryError(ValueError):
    """A summary file is unreadable or does not match what it records; the message names the file."""


@dataclass(frozen=True)
class ModelInfo:
    """What the plan says of a model besides what it scored (`ModelPlan.info`)."""

    family: str
    D: int | None  # training tokens seen, where known
    size: str  # the training run it is a checkpoint of (its own name for a final model)
    final: bool  # its run's last checkpoint: laws in S use these only
    seed: int | None  # the training seed, where known
    replica_of: str  # the size it is a training run of: runs of one size with other seeds share it


@dataclass(frozen=True)
class RunRate:
    """N consecutive scored tokens all inside the top-k: how many windows, and the share that is."""

    k: int
    N: int
    n_runs: int
    empirical: float


@dataclass(frozen=True)
class RankTest:
    """One family fitted to the rank histogram; against the lognormal, the mean log-likelihood ratio and Vuong's
    token-level z and p (NaN for the lognormal). The tables read only mean_llr: their test is by documents
    (`rankscale.tables.distribution`), since a document's tokens are not independent."""

    params: list[float]
    loglik: float  # per token
    mean_llr: float = float("nan")  # mean log-likelihood ratio, lognormal - this family
    z: float = float("nan")
    p_value: float = float("nan")
    at_bound: list[str] = field(default_factory=list)  # parameters at a bound of the fit's box: limits, not estimates
    note: str = ""  # why nothing could be fitted (e.g. every scored token has one rank)


@dataclass(frozen=True)
class Summary:
    """Everything downstream needs of one rank array: point totals, histogram statistics, fits, runs."""

    model: str
    dataset: str
    info: ModelInfo
    S: int
    vocab_size: int
    n_tokens: int
    n_documents: int
    k: list[int]  # the k grid of the `hits` totals
    sums: dict[str, Any]  # per-document statistics summed over documents, by statistic name
    emergence_k: list[int]
    emergence_N: list[int]
    law_k: list[int]
    distribution: Distribution
    distribution_replicates: int  # bootstrap replicates of the histogram statistics
    truncated: bool  # the lognormal is normalised over 1..|V|
    rank_tests: dict[str, RankTest]  # "lognormal" and each alternative family
    mean_log_rank: float
    runs: list[RunRate]
    ties: str
    rank_sha256: str
    files: dict[str, str] = field(default_factory=dict)  # sha256 of the histogram and replicate files, by kind
    # every stratum of every kind: the strata_* sums' columns
    strata_columns: list[Stratum] = field(default_factory=list)
    strata_k: list[int] = field(default_factory=list)  # the k of the strata's hits
    # a GGUF model's quantization type (e.g. 'Q4_1'): its ranks are those of the dequantized weights
    quantization: str | None = None
    # Kish's effective number of documents (`rankscale.bootstrap.kish_documents`): what a bootstrap over them is worth
    n_eff_documents: float = math.nan

    @property
    def family(self) -> str:
        return self.info.family

    @property
    def final(self) -> bool:
        return self.info.final

    @property
    def replica_of(self) -> str:
        return self.info.replica_of

    @property
    def key(self) -> tuple[str, str]:
        return self.model, self.dataset

    def totals(self) -> Totals:
        """The point totals: the summed statistics and the histogram statistics, as metrics read them."""
        return Totals({**self.sums, **self.distribution.values()})

    def columns(self) -> dict[str, Any]:
        """The columns every per-model table row starts with (MODEL_COLUMNS)."""
        values = {**asdict(self.info), "model": self.model, "dataset": self.dataset, "S": self.S,
                  "vocab_size": self.vocab_size, "n_tokens": self.n_tokens, "n_documents": self.n_documents,
                  "n_eff_documents": self.n_eff_documents}  # fmt: skip
        return {name: values[name] for name in MODEL_COLUMNS}

    def run(self, k: int, n: int) -> RunRate:
        return next(r for r in self.runs if r.k == k and r.N == n)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update(
            info=asdict(self.info),
            distribution=self.distribution.to_json(),
            rank_tests={name: asdict(test) for name, test in self.rank_tests.items()},
            runs=[asdict(r) for r in self.runs],
            strata_columns=[asdict(s) for s in self.strata_columns],
        )
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        return cls(
            **{
                **data,
                "info": ModelInfo(**data["info"]),
                "distribution": Distribution.from_json(data["distribution"]),
                "rank_tests": {name: RankTest(**test) for name, test in data["rank_tests"].items()},
                "runs": [RunRate(**r) for r in data["runs"]],
                "strata_columns": [Stratum(**s) for s in data.get("strata_columns", [])],
            }
        )


@dataclass(frozen=True)
class SummaryPaths:
    """The three files of one summary: the JSON, the rank histogram and the bootstrap file."""

    summary: Path
    hist: Path
    boot: Path

    @classmethod
    def beside(cls, summary: str | Path) -> SummaryPaths:
        """results/summary/<model>/<dataset>-<key>.json and its .hist.npz and .boot.npz."""
        path = Path(summary)
        stem = path.name.removesuffix(".json")
        return cls(path, path.with_name(f"{stem}.hist.npz"), path.with_name(f"{stem}.boot.npz"))

    def recompute(self) -> str:
        """What to run when one of the files is broken (Snakemake cannot see it: the files exist)."""
        return f"delete {self.summary}, {self.hist} and {self.boot}, then rerun snakemake"


def write_summary(summary: Summary, hist: np.ndarray, boot: Mapping[str, np.ndarray], paths: SummaryPaths) -> Summary:
    """Write the histogram and bootstrap files, then the summary recording their checksums (last: it marks completion)."""
    write_npz(paths.hist, counts=hist)
    write_npz(paths.boot, **boot)
    files = {"hist": sha256_file(paths.hist), "boot": sha256_file(paths.boot)}
    done = Summary(**{**{f.name: getattr(summary, f.name) for f in fields(summary)}, "files": files})
    body = json.loads(json_text(done.to_json()))  # as read back
    write_json(paths.summary, {**body, OWN_CHECKSUM: _digest(body)})
    for kind, checksum in files.items():  # hashed once, here: the table and figure jobs that read them need not
        remember_checksum(paths.hist if kind == "hist" else paths.boot, checksum)
    return done


OWN_CHECKSUM = "json_sha256"  # of the summary's own JSON without this key: a flipped digit is no valid-looking number


def _digest(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json_text(body).encode()).hexdigest()


def read_summary(path: str | Path) -> Summary:
    """A summary as written; refused, naming the file, when unreadable or when its JSON is not what was written."""
    try:
        body = json.loads(Path(path).read_text())
        recorded = body.pop(OWN_CHECKSUM, None)
        if recorded is not None and recorded != _digest(body):  # summaries written before it was recorded lack it
            raise ValueError(f"its contents do not match its own checksum {OWN_CHECKSUM} (bit-flipped or edited?)")
        return Summary.from_json(body)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SummaryError(f"{path}: unreadable summary ({exc}); {SummaryPaths.beside(path).recompute()}") from None


def _verified(summary: Summary, paths: SummaryPaths, kind: str) -> Path:
    path = paths.hist if kind == "hist" else paths.boot
    recorded = summary.files.get(kind)
    if recorded is None or not path.exists() or not checksum_matches(path, recorded):
        raise SummaryError(
            f"{path}: does not match the checksum {paths.summary} records for it (truncated, replaced or missing); "
            f"{paths.recompute()}"
        )
    return path


def load_replicates(summary: Summary, paths: SummaryPaths) -> Totals:
    """The replicate totals of a summary's bootstrap file [B, ...], keyed like its totals; checked first."""
    with np.load(_verified(summary, paths, "boot")) as data:
        return Totals({name[4:]: data[name] for name in data.files if name.startswith("rep_")})


def left_out(name: str) -> str:
    """The key of a histogram statistic's leave-one-unit-out values [U] among `unit_totals`."""
    return f"{name} without the unit"


def unit_totals(boot: Mapping[str, np.ndarray]) -> Totals:
    """Every per-document statistic of a bootstrap file's arrays summed per resampling unit (the documents the
    bootstrap draws) [U, ...], U the largest unit + 1 (a unit without scored tokens sums to 0): what a replicate
    weights by its draw counts, so each unit's influence on a metric (`rankscale.tables.base.Replicates.influence`).
    Beside them, under `left_out(name)`, each histogram statistic with the unit's documents left out (its
    jackknife, where the file has one)."""
    units = np.asarray(boot["units"], dtype=np.int64)
    size = int(units.max()) + 1 if units.size else 0
    out = {}
    for name, array in boot.items():
        if name.startswith("doc_"):
            values = np.asarray(array, dtype=np.float64)
            summed = np.zeros((size, *values.shape[1:]))
            np.add.at(summed, units, values)
            out[name[4:]] = summed
        elif name.startswith("jack_"):
            out[left_out(name[5:])] = np.asarray(array, dtype=np.float64)
    return Totals(out)


def load_unit_totals(summary: Summary, paths: SummaryPaths) -> Totals:
    """`unit_totals` of a summary's bootstrap file; checked first."""
    with np.load(_verified(summary, paths, "boot")) as data:
        return unit_totals({name: data[name] for name in data.files if name == "units" or name.startswith(("doc_", "jack_"))})


def load_histogram(summary: Summary, paths: SummaryPaths) -> np.ndarray:
    """The rank histogram counts[r], r = 0..|V|; checked against the summary first."""
    with np.load(_verified(summary, paths, "hist")) as data:
        return data["counts"]
