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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE = "rankscale"
SRC = Path(__file__).resolve().parents[1]  # src/, where the package lives
SCRIPTS = SRC.parent / "workflow" / "scripts"


CODE_CACHE = Path(".snakemake") / "rankscale" / "code.json"  # `entry_digests`, in the working directory
VERSIONS_MODULE = SRC / PACKAGE / "formats.py"  # holds the pinned digests themselves: never part of one
# the dataset sources (and their list, `rankscale.sources`): the corpus and training formats leave them out, and each
# source's module is pinned on its own (`FormatVersion.source`), so a new source moves no pin
SOURCES_APART = "sources/*.py"


@dataclass(frozen=True)
class FormatVersion:
    """The meaning of an expensive output: `version` is part of its identity (a bump recomputes it);
    `code` pins the digest of the code that computes it, so a change to that code is a decision."""

    version: int
    code: str  # the digest of `files()` when the version was last reviewed
    scripts: tuple[str, ...] = ()  # the rule scripts (workflow/scripts/<name>.py) whose code this version covers
    modules: tuple[str, ...] = ()  # package modules it covers (paths under src/rankscale), with what they import
    # a glob under src/rankscale: modules left out, and what they import not followed (each is pinned on its own)
    apart: str | None = None
    beside: tuple[str, ...] = ()  # scripts whose format covers the rest (of the sources: the corpus script's)

    @classmethod
    def source(cls, name: str, version: int, code: str) -> FormatVersion:
        """A dataset source's own code: its module src/rankscale/sources/<name>.py and what it imports that the
        corpus format, which leaves every source out (`SOURCES_APART`), does not cover (the `Source` interface)."""
        return cls(version, code, modules=(f"sources/{name}.py",), apart="sources/__init__.py", beside=("corpus",))

    def files(self) -> list[Path]:
        """The files this version covers: the scripts, the modules and every package module they import but
        `formats.py`, less those `apart` and those the `beside` scripts' format covers."""
        base = SRC / PACKAGE
        scripts = [SCRIPTS / f"{name}.py" for name in self.scripts]
        modules = [f"{PACKAGE}.{Path(m).with_suffix('').as_posix().replace('/', '.')}" for m in self.modules]
        starts = [*modules, *(m for script in scripts for m in _imports(script, None))]
        found = {path for path, _, _ in _closure(starts, self.apart).values()}
        covered = set(FormatVersion(0, "", self.beside, apart=SOURCES_APART).files()) if self.beside else set()
        return sorted(
            {*scripts, *(p for p in found if self.apart is None or not p.relative_to(base).match(self.apart))}
            - covered - {VERSIONS_MODULE}
        )

    def current(self) -> str:
        return _files_digest({path: normalised_source(path) for path in self.files()})

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
    tree = _tree(path, stamp)
    return ast.dump(tree, include_attributes=False), _run_imports(tree)


@cache
def _tree(path: Path, stamp: tuple[int, int]) -> ast.Module:
    """A file's syntax tree without docstrings, parsed once per file version (never modified after)."""
    tree = _strip_docstrings(ast.parse(path.read_text(encoding="utf-8")))
    assert isinstance(tree, ast.Module)
    return tree


def _run_imports(tree: ast.AST) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """The import statements of `tree` that run (not those under `if TYPE_CHECKING:`)."""
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    return tuple(
        node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in type_only
    )


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


def _imports(path: Path, module: str | None) -> frozenset[str]:
    """Package modules a file imports, lazily or not (`from rankscale.x import y` may import rankscale.x.y)."""
    return _imports_of(*_version(path), module)


@cache
def _imports_of(path: Path, stamp: tuple[int, int], module: str | None) -> frozenset[str]:
    """`_imports`, once per file version (planning computes a digest per table and figure)."""
    package = module if path.name == "__init__.py" else (module.rsplit(".", 1)[0] if module else None)
    return frozenset(_named(_parsed(path, stamp)[1], package))


def _named(imports: Iterable[ast.Import | ast.ImportFrom], package: str | None) -> set[str]:
    """The package modules these import statements (of a module of `package`) import."""
    found: set[str] = set()
    for node in imports:
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
    return sorted(path for path, _, _ in _closure(m for script in scripts for m in _imports(script, None)).values())


def _closure(
    modules: Iterable[str], opaque: str | None = None
) -> dict[str, tuple[Path, tuple[int, int], frozenset[str]]]:
    """These package modules and every package module they import, transitively: each one's file, its version
    stamp and the package modules it imports (not followed for a file the glob `opaque` matches, under src/rankscale)."""
    seen: dict[str, tuple[Path, tuple[int, int], frozenset[str]]] = {}
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = _module_file(module)
        if path is None:
            continue
        path, stamp = _version(path)
        # formats.py holds the pins and the type they are written with (FormatVersion): a job reads a version from it
        # and runs none of the digest code it imports, so what it imports is not followed (nor is it hashed)
        hidden = path == VERSIONS_MODULE or (opaque is not None and path.relative_to(SRC / PACKAGE).match(opaque))
        imports = frozenset() if hidden else _imports_of(path, stamp, module)
        seen[module] = (path, stamp, imports)
        todo.extend(imports - set(seen))
    return seen


def _files_digest(texts: Mapping[Path, str]) -> str:
    """sha256 (16 hex digits) of each file's name and normalised source, in name order."""
    digest = hashlib.sha256()
    for path in sorted(set(texts) - {VERSIONS_MODULE}):
        digest.update(f"{_display(path)}\n{texts[path]}\n".encode())
    return digest.hexdigest()[:16]


def code_digest(*scripts: Path) -> str:
    """A digest of the scripts and every package module they import, blind to formatting, comments and docstrings."""
    files: Iterable[Path] = [*scripts, *module_closure(*scripts)]
    return _files_digest({path: normalised_source(path) for path in files})


def entry_digest(script: Path, target: str) -> str:
    """The code one table's or figure's job runs: its `script`, the module of its entry's implementation `target`
    ("module:function", which the job imports by name) and every package module these import, transitively.

    A topic module holds several entries' functions and the helpers they share: this entry's view of the module is
    what runs when it is imported (its imports, constants, classes, decorated functions) and the functions the entry's
    function and that code use by name, transitively; every other function is left out, unless another module of the
    closure imports the module. So editing one figure's function reruns that figure alone, editing a helper reruns
    the figures that call it, and editing what the module runs on import reruns all of its figures. Found statically
    (ast), without importing the module (planning imports no matplotlib); a function reached only through `getattr` or
    `globals()` would be missed (no topic module does that)."""
    module, _, function = target.partition(":")
    path = _module_file(module)
    if path is None:
        raise ValueError(f"no module for {target!r} under {SRC / PACKAGE}")
    statements = _statements(*_version(path))
    if function not in {name for name, *_ in statements}:
        raise ValueError(f"{target!r}: {path} defines no top-level function {function!r}")
    kept = {i for i, (name, *_) in enumerate(statements) if name is None or name == function}
    while reached := {i for i, (name, *_) in enumerate(statements) if i not in kept and name in _used(statements, kept)}:
        kept |= reached
    view = [statement for i, statement in enumerate(statements) if i in kept]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    imported = _named([node for *_, imports in view for node in imports], package)
    closure = _closure([*_imports(script, None), *_parents(package), *imported])
    closure.pop(module, None)
    whole = any(module in imports for _, _, imports in closure.values())  # another module imports it all
    files = {_version(script), *((file, stamp) for file, stamp, _ in closure.values())}
    digest = hashlib.sha256()
    for file, stamp in sorted(f for f in files if f[0] != VERSIONS_MODULE):
        digest.update(f"{_display(file)}\n{_source_digest(file, stamp)}\n".encode())
    text = "\n".join(dump for _, dump, *_ in (statements if whole else view))
    digest.update(f"{_display(path)}:{function}\n{hashlib.sha256(text.encode()).hexdigest()}\n".encode())
    return digest.hexdigest()[:16]


def entry_digests(script: Path, targets: Mapping[str, str], cache: Path | None = None) -> dict[str, str]:
    """`entry_digest` of every entry of a registry (name -> "module:function"), each run by a job of `script`.

    Parsing the package takes a planning run a few tenths of a second, so the digests are cached (`CODE_CACHE`, in the
    working directory) under a stamp of every package module and the script (names, sizes, modification times): any
    edit, checkout or new module computes them again."""
    import json
    import os

    cache = CODE_CACHE if cache is None else cache
    files = sorted([script.resolve(), *(SRC / PACKAGE).rglob("*.py")])
    stamp = hashlib.sha256(
        repr([sorted(targets.items()), [(str(f), *_version(f)[1]) for f in files]]).encode()
    ).hexdigest()
    key = str(script.resolve())
    try:
        known = json.loads(cache.read_text()) if cache.is_file() else {}
    except ValueError:
        known = {}  # a damaged cache is only a cache: compute again
    if known.get(key, {}).get("stamp") == stamp:
        return dict(known[key]["digests"])
    digests = {name: entry_digest(script, target) for name, target in targets.items()}
    known[key] = {"stamp": stamp, "digests": digests}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=0, sort_keys=True))
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only working directory plans all the same, parsing each time
    return digests


def _display(path: Path) -> str:
    return str(path.relative_to(SRC)) if path.is_relative_to(SRC) else f"scripts/{path.name}"


def _used(statements: tuple[tuple[str | None, str, frozenset[str], tuple], ...], kept: set[int]) -> set[str]:
    return {name for i, (_, _, used, _) in enumerate(statements) if i in kept for name in used}


@cache
def _source_digest(path: Path, stamp: tuple[int, int]) -> str:
    return hashlib.sha256(_parsed(path, stamp)[0].encode()).hexdigest()


@cache
def _statements(
    path: Path, stamp: tuple[int, int]
) -> tuple[tuple[str | None, str, frozenset[str], tuple[ast.Import | ast.ImportFrom, ...]], ...]:
    """Each top-level statement of a module: the function it defines (None for any other statement, and for a
    decorated function: its decorator runs on import), its normalised source, the names it uses and the import
    statements in it that run."""
    running = {id(node) for node in _parsed(path, stamp)[1]}
    out = []
    for node in _tree(path, stamp).body:
        inner = list(ast.walk(node))
        out.append((
            node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.decorator_list else None,
            ast.dump(node, include_attributes=False),
            frozenset(n.id for n in inner if isinstance(n, ast.Name)),
            tuple(n for n in inner if id(n) in running),
        ))  # fmt: skip
    return tuple(out)
