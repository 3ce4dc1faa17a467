"""What the plan is made of: one `ModelPlan` per model, with its `Runtime` (imported by every plan module,
importing none of them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rankscale.gguf import GgufSource
from rankscale.identity import RankIdentity
from rankscale.models import ModelSource
from rankscale.rankfile import calibration_planned
from rankscale.windows import WINDOW_KEYS


@dataclass(frozen=True)
class Runtime:
    """How fast and where a model's extraction runs: changing these never reruns anything."""

    device: str
    batch_size: int
    head_chunk: int | None
    kernel: str
    device_map: str | None
    attn_implementation: str | None
    threads: int
    gpus: int
    mem_mb: int
    runtime: int


RUNTIME_KEYS = tuple(Runtime.__dataclass_fields__)


@dataclass(frozen=True)
class ModelPlan:
    name: str
    family: str
    source: ModelSource
    ladder: bool
    tokenizer_key: str
    settings: dict[str, Any]  # the identity settings (dtype, head dtype, windows, ties) before dataset overrides
    runtime: Runtime
    expected_size: int | None  # published S, checked against the loaded model
    expected_vocab: int | None  # published len(tokenizer), checked at extraction
    dataset_windows: dict[str, dict[str, Any]]  # per-dataset window overrides
    where: str  # the entry's key path, for messages
    keys: dict[str, str]  # setting -> the key path it was given at
    allow_vocab_gap: bool  # an output layer wider than the tokenizer beyond padding is accepted
    D: int | None  # training tokens seen, where known
    size: str  # the training run this model is a checkpoint of (its own name for a final model)
    checkpoint: int | None  # a ladder checkpoint: the training tokens it was asked at
    weights: str | None  # a local model's weights digest (rankscale.content_digest.weights_digest)
    seed: int | None  # the training seed, where known
    replica_of: str  # the size it is one training run of (several seeds of one size share it)
    gguf: GgufSource | None  # the GGUF file a `gguf:` entry converts into `source.location`
    refresh_calibration: bool  # re-extract its arrays made before the calibration fields (rankfile.calibration_planned)
    final: bool = True  # the last checkpoint of its run: size laws use these only (mark_checkpoints sets it)
    # content digests a `path:` model is identified by wherever its files live (None: identified by location)
    tokenizer_digest: str | None = None  # its local tokenizer's files (rankscale.fingerprint.tokenizer_digest)
    by_content: bool = False  # its weights digest stands for its location (a study moved elsewhere keeps its keys)

    def info(self) -> dict[str, Any]:
        """What the summaries record about the model besides what it scored (`rankscale.summary.ModelInfo`)."""
        size = self.size or self.name
        return {"family": self.family, "D": self.D, "size": size, "final": self.final, "seed": self.seed,
                "replica_of": self.replica_of or size}  # fmt: skip

    def identity(self, dataset: str) -> RankIdentity:
        """What this model's rank array on `dataset` depends on (the dataset's windows win)."""
        settings = {**self.settings, **self.dataset_windows.get(dataset, {})}
        location = f"sha256:{self.weights}" if self.by_content and self.weights else self.source.location
        tokenizer = f"sha256:{self.tokenizer_digest}" if self.tokenizer_digest else self.source.tokenizer_location
        return RankIdentity.from_settings(location, self.source.revision, tokenizer, settings, self.weights)

    def extract_params(self, dataset: str, sidecar: str | Path) -> dict[str, Any]:
        """The extract rule's params (its rerun trigger): the identity, and `calibration` where the array is to
        hold the calibration fields. An existing array without them stays up to date until `refresh_calibration`
        asks for them; one extracted since records them, and stays up to date whatever the setting."""
        params = self.identity(dataset).params()
        return params | ({"calibration": True} if calibration_planned(sidecar, self.refresh_calibration) else {})

    def windows_for(self, dataset: str) -> dict[str, Any]:
        identity = self.identity(dataset)
        return {k: getattr(identity, k) for k in WINDOW_KEYS}

    def job(self) -> dict[str, Any]:
        """What an extraction job needs besides its identity: where to load from, runtime, checks."""
        return {
            "name": self.name,
            "family": self.family,
            "source": asdict(self.source),
            "tokenizer_key": self.tokenizer_key,
            "runtime": asdict(self.runtime),
            "expected_size": self.expected_size,
            "expected_vocab": self.expected_vocab,
            "where": self.where,
            "device_key": self.keys["device"],
            "allow_vocab_gap": self.allow_vocab_gap,
        }
