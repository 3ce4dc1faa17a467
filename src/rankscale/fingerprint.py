"""What code an output was computed by: a digest of a rule script and every package module it imports.

Snakemake judges a script rule by the script's modification time and never looks at the modules
it imports, so a `git pull` of a fix reran nothing while a `touch` reran everything. The cheap
rules (summaries, tables, figures) carry `code_digest(script)` in their params instead: a change
to what they run reruns them, a touch or a reformat does not. The digest is of the code's syntax
tree without docstrings and comments, so formatting, comments and docstrings never count.

The expensive rules (training, extraction) carry an explicit format version instead (`FormatVersion`),
with the digest of their code pinned beside it: a test fails when that code changes without the
version being bumped or the new digest pinned (docs/architecture.md, "What reruns").
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE = "rankscale"
SRC = Path(__file__).resolve().parents[1]  # src/, where the package lives
SCRIPTS = SRC.parent / "workflow" / "scripts"


VERSIONS_MODULE = SRC / PACKAGE / "formats.py"  # holds the pinned digests themselves: never part of one


@dataclass(frozen=True)
class FormatVersion:
    """The meaning of an expensive output: `version` is part of its identity (a bump recomputes it);
    `code` pins the digest of the code that computes it, so a change to that code is a decision."""

    version: int
    code: str  # code_digest of `scripts` when the version was last reviewed
    scripts: tuple[str, ...]  # the rule scripts (workflow/scripts/<name>.py) whose code this version covers

    def current(self) -> str:
        return code_digest(*(SCRIPTS / f"{name}.py" for name in self.scripts))

    def params(self, params: dict) -> dict:
        """`params` with this version; version 1 adds nothing (outputs made before versions existed stay valid)."""
        return params if self.version == 1 else {**params, "format": self.version}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


@cache
def _parsed(path: Path, stamp: tuple[int, int]) -> tuple[str, tuple[ast.Import | ast.ImportFrom, ...]]:
    """A Python file's syntax tree without docstrings, comments or positions, and the import statements it runs: one
    parse per file version (every digest of a planning run shares it; planning computes four).

    Imports under `if TYPE_CHECKING:` never run, so they are not code an output is computed with: one such import
    (downloads.py's of the plan's types) once put 87 of 94 modules behind the rank arrays' format."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    imports = tuple(
        node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in type_only
    )
    return ast.dump(_strip_docstrings(tree), include_attributes=False), imports


def _is_type_checking(test: ast.expr) -> bool:
    """`TYPE_CHECKING` or `typing.TYPE_CHECKING`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _version(path: Path) -> tuple[Path, tuple[int, int]]:
    stat = path.stat()
    return path.resolve(), (stat.st_mtime_ns, stat.st_size)


def normalised_source(path: Path) -> str:
    return _parsed(*_version(path))[0]


def _module_file(module: str) -> Path | None:
    """src/rankscale/a/b.py or src/rankscale/a/b/__init__.py of `rankscale.a.b`, if it exists."""
    base = SRC.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _parents(module: str) -> list[str]:
    """`rankscale.a.b` -> rankscale, rankscale.a, rankscale.a.b: importing a module runs its packages' __init__."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _imports(path: Path, module: str | None) -> set[str]:
    """Package modules a file imports, lazily or not (`from rankscale.x import y` may import rankscale.x.y)."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else (module.rsplit(".", 1)[0] if module else None)
    for node in _parsed(*_version(path))[1]:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level and package:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            if name == PACKAGE or name.startswith(f"{PACKAGE}."):
                found.update(m for m in _parents(name) if _module_file(m))
    return found


def module_closure(*scripts: Path) -> list[Path]:
    """Every package module the scripts import, directly or through each other, as files (sorted)."""
    seen: dict[str, Path] = {}
    todo = [m for script in scripts for m in _imports(script, None)]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = _module_file(module)
        if path is None:
            continue
        seen[module] = path
        todo.extend(_imports(path, module) - set(seen))
    return sorted(seen.values())


def code_digest(*scripts: Path) -> str:
    """A digest of the scripts and every package module they import, blind to formatting, comments and docstrings."""
    files: Iterable[Path] = [*scripts, *module_closure(*scripts)]
    digest = hashlib.sha256()
    for path in sorted(set(files) - {VERSIONS_MODULE}):
        name = path.relative_to(SRC) if path.is_relative_to(SRC) else f"scripts/{path.name}"
        digest.update(f"{name}\n{normalised_source(path)}\n".encode())
    return digest.hexdigest()[:16]


WEIGHT_PATTERNS = (
    "config.json",
    "*.safetensors",
    "*.safetensors.index.json",
    "*.bin",
    "*.bin.index.json",
    "*.pt",
    "*.pth",
)
WEIGHTS_CACHE = Path(".snakemake") / "rankscale" / "weights.json"  # in the working directory, beside Snakemake's own


def weight_files(directory: Path) -> list[Path]:
    """The files a local model's weights and architecture are read from (not its tokenizer: the token files cover it)."""
    return sorted({p for pattern in WEIGHT_PATTERNS for p in directory.glob(pattern) if p.is_file()})


def weights_digest(directory: str | Path, cache: Path = WEIGHTS_CACHE) -> str | None:
    """A content digest of a local model's weight and config files, or None if it has none (yet).

    Hashing gigabytes at every plan would be slow, so the digest is cached under a cheap stamp of
    the files (names, sizes, modification times): an unchanged model is hashed once, a model whose
    weights are replaced in place (any stamp changes) is hashed again, and so rescored.
    """
    files = weight_files(Path(directory))
    return _cached_digest(Path(directory), files, named=True, cache=cache) if files else None


# the files a tokenizer loads from (transformers' fast and slow tokenizers, sentencepiece, tiktoken); not config.json,
# so models of several sizes sharing one tokenizer share its key
TOKENIZER_PATTERNS = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "*.model",
    "*.tiktoken",
)


def tokenizer_digest(directory: str | Path, cache: Path = WEIGHTS_CACHE) -> str | None:
    """A content digest of a local tokenizer's files (cached like `weights_digest`), or None if it has none:
    what a local tokenizer's key and a rank array's identity follow, wherever the directory lives."""
    base = Path(directory)
    files = sorted({p for pattern in TOKENIZER_PATTERNS for p in base.glob(pattern) if p.is_file()}) if base.is_dir() else []
    return _cached_digest(base, files, named=True, cache=cache) if files else None


def file_digest(path: str | Path, cache: Path = WEIGHTS_CACHE) -> str:
    """A content digest of one file (e.g. a GGUF model), cached like `weights_digest`; its name is not part of it."""
    return _cached_digest(Path(path), [Path(path)], named=False, cache=cache)


def _cached_digest(anchor: Path, files: list[Path], named: bool, cache: Path) -> str:
    """sha256 (16 hex digits) of the files' contents (with each file's name and size where `named`), cached."""
    import json
    import os

    stamp = hashlib.sha256(
        repr([str(anchor.resolve()), [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]]).encode()
    ).hexdigest()
    if not named:
        stamp = f"file:{stamp}"
    known: dict[str, str] = {}
    if cache.is_file():
        try:
            known = json.loads(cache.read_text())
        except ValueError:
            known = {}  # a damaged cache is only a cache: rehash
    if stamp in known:
        return known[stamp]
    digest = hashlib.sha256()
    for path in files:
        if named:
            digest.update(f"{path.name}\n{path.stat().st_size}\n".encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 24), b""):
                digest.update(block)
    known[stamp] = digest.hexdigest()[:16]
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(known, indent=0, sort_keys=True))
    os.replace(tmp, cache)
    return known[stamp]
