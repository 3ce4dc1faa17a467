"""Load causal LMs and tokenizers by hub id + revision or local path, the same code for both."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankscale.atomic import sha256_dir

if TYPE_CHECKING:
    import torch

DTYPES = ("float32", "bfloat16", "float16")


class ModelLoadError(RuntimeError):
    """A model or tokenizer could not be loaded; the message says what to try."""


@dataclass(frozen=True)
class ModelSource:
    """Where a model's weights (and tokenizer) come from."""

    name: str
    location: str  # hub id or local directory
    revision: str | None  # hub revision (None for a local directory)
    tokenizer: str | None  # None: the model's own, at `location`
    trust_remote_code: bool
    allow_pickle: bool
    tokenizer_revision: str | None  # of a separate hub `tokenizer`; None = main
    local: bool = False
    tokenizer_local: bool = False  # the tokenizer is a directory here (e.g. the ladder's), existing yet or not

    @classmethod
    def directory(cls, name: str, path: str) -> ModelSource:
        """A save_pretrained directory with its own tokenizer, safetensors only, no remote code."""
        return cls(name, path, revision=None, tokenizer=None, trust_remote_code=False, allow_pickle=False,
                   tokenizer_revision=None, local=True)  # fmt: skip

    @property
    def tokenizer_location(self) -> str:
        return self.tokenizer or self.location

    @property
    def tokenizer_ref(self) -> str | None:
        """The hub revision the tokenizer is read at (None for a local directory).

        A model's own tokenizer comes with the model's revision; a tokenizer borrowed from
        another repository (a family's shared tokenizer) has revisions of its own, so the
        model's commit must not be looked up there.
        """
        if self.tokenizer is None:
            return None if self.local else self.revision
        if self.tokenizer_local or Path(self.tokenizer).exists() or self.tokenizer.startswith(("/", ".")):
            return None
        return self.tokenizer_revision or "main"


def resolve_device(name: str) -> torch.device:
    """'auto' picks CUDA, then MPS, then CPU; anything else is passed to torch."""
    import torch

    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return torch.device(name)


def available_devices() -> list[str]:
    import torch

    devices = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0)]
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        devices.append("mps")
    return devices


def check_device(name: str, model: str, key: str) -> None:
    """Refuse a device this machine lacks before loading anything (torch's own error names neither).

    The plan cannot know this: jobs may run on other machines (cluster nodes) than the planner.
    """
    import platform

    if name in ("auto", "cpu"):
        return
    wanted = "cuda:0" if name == "cuda" else name
    available = available_devices()
    if wanted not in available:
        raise ModelLoadError(
            f"model {model!r}: {key} is {name!r}, but this machine ({platform.node()}) has no such device; "
            f"available: {available}. Set `device: auto` (or cpu), or run the job where that device exists"
        )


def resolve_dtype(name: str) -> torch.dtype:
    import torch

    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {name!r}")
    return getattr(torch, name)


def _hint(source: ModelSource, exc: Exception | None = None, label: str | None = None) -> str:
    if exc is not None and "trust_remote_code" in str(exc):
        return (
            f"{label or f'model {source.name!r}'} ships its own code; set `trust_remote_code: true` in its entry "
            "only if you trust it"
        )
    if source.local:
        return f"check that {source.location!r} is a directory written by save_pretrained"
    return (
        f"check the hub id {source.location!r} and revision {source.revision!r}; without network, "
        "download it elsewhere and point the model's `path:` at the local copy, or set HF_HUB_OFFLINE=1 "
        "with a warm cache"
    )


def load_tokenizer(source: ModelSource, label: str | None = None) -> Any:
    """The tokenizer; errors start with `label` (default: the model's name)."""
    from transformers import AutoTokenizer

    label = label or f"model {source.name!r}"
    if source.local and not Path(source.tokenizer_location).exists():
        raise ModelLoadError(f"{label}: tokenizer path {source.tokenizer_location!r} does not exist")
    try:
        return AutoTokenizer.from_pretrained(
            source.tokenizer_location,
            revision=source.tokenizer_ref,
            trust_remote_code=source.trust_remote_code,
        )
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{label}: could not load tokenizer: {exc}; {_hint(source, exc, label)}") from exc


def load_model(
    source: ModelSource,
    dtype: str,
    device: str,
    device_map: str | None,
    attn_implementation: str | None,
    max_memory: dict[int, int] | None = None,
) -> Any:
    """The model in eval mode on `device` (or spread by `device_map`, over the devices of `max_memory` where
    given), weights in `dtype`."""
    from transformers import AutoModelForCausalLM

    if source.local and not Path(source.location).exists():
        raise ModelLoadError(f"model {source.name!r}: path {source.location!r} does not exist")
    kwargs: dict[str, Any] = {
        "dtype": resolve_dtype(dtype),
        "trust_remote_code": source.trust_remote_code,
        "use_safetensors": None if source.allow_pickle else True,
    }
    if not source.local and source.revision:
        kwargs["revision"] = source.revision
    if device_map:
        kwargs["device_map"] = device_map
        if max_memory:
            kwargs["max_memory"] = max_memory
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    from safetensors import SafetensorError

    try:
        model = AutoModelForCausalLM.from_pretrained(source.location, **kwargs)
    except SafetensorError as exc:
        raise ModelLoadError(f"model {source.name!r}: could not load weights: {_broken_weights(source, exc)}") from exc
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"model {source.name!r}: could not load weights: {exc}; {_hint(source, exc)}") from exc
    if not device_map:
        model.to(resolve_device(device))
    model.eval()
    return model


def _broken_weights(source: ModelSource, exc: Exception) -> str:
    """Which safetensors file of a local model does not open (safetensors' own error names none)."""
    from safetensors import SafetensorError, safe_open

    if source.local:
        for path in sorted(Path(source.location).glob("*.safetensors")):
            try:
                with safe_open(str(path), framework="pt") as handle:
                    handle.keys()
            except SafetensorError as broken:
                return (f"{path} ({path.stat().st_size} bytes) is truncated or corrupt: {broken}; copy or save the "
                        "model again")  # fmt: skip
    return f"{exc}; a weights file is truncated or corrupt: {_hint(source)}"


def resolved_revision(source: ModelSource, model: Any, weights: str | None = None) -> str:
    """The exact weights: the hub commit; for a local directory its weights digest from the plan (`weights`:
    content_digest.weights_digest, hashed once per version of the files), else (the workflow's own ladder models,
    which do not exist when it plans) a content hash of the directory."""
    if source.local:
        return f"weights:{weights}" if weights else "sha256:" + sha256_dir(source.location)
    commit = getattr(model.config, "_commit_hash", None)
    return str(commit or source.revision or "unknown")


def output_columns(model: Any) -> int:
    head = model.get_output_embeddings()
    return int(head.weight.shape[0])


def check_window_fits(model: Any, max_length: int, name: str) -> None:
    """Refuse windows longer than the positions the model was built for (silently wrong otherwise)."""
    limit = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
    if limit is not None and max_length > int(limit):
        raise ValueError(f"model {name!r}: max_length {max_length} exceeds its {limit} position embeddings")
