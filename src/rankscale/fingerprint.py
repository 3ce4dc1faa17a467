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
            - covered
            - {VERSIONS_MODULE}
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


# an import statement that runs: (the module of a `from` import, None for `import`; its level; the names it imports)
Imported = tuple[str | None, int, tuple[str, ...]]


def _parsed(path: Path, stamp: tuple[int, int]) -> tuple[str, tuple[Imported, ...]]:
    """A Python file's syntax tree without docstrings, comments or positions, and the import statements it runs: one
    parse per file version (every digest of a planning run shares it).

    Imports under `if TYPE_CHECKING:` never run, so they are not code an output is computed with: one such import
    (downloads.py's of the plan's types) once put 87 of 94 modules behind the rank arrays' format."""
    return _MODULE[0] + ", ".join(_dumps(path, stamp)) + _MODULE[1], _imports_in(path, stamp)


# `ast.dump` of a module, around its statements' dumps joined by ", " (each statement is dumped once, for the code
# digests and the entries' alike; tests/test_entry_digests.py checks it is `ast.dump`'s own text)
_MODULE = tuple(ast.dump(ast.Module(body=[ast.Pass()], type_ignores=[])).split(ast.dump(ast.Pass())))


def _imports_in(path: Path, stamp: tuple[int, int]) -> tuple[Imported, ...]:
    return tuple(node for *_, imports in _statements(path, stamp) for node in imports)


def _dumps(path: Path, stamp: tuple[int, int]) -> tuple[str, ...]:
    return tuple(dump for _, dump, *_ in _statements(path, stamp))


@cache
def _statements(
    path: Path, stamp: tuple[int, int]
) -> tuple[tuple[str | None, str, frozenset[str], tuple[Imported, ...]], ...]:
    """Each top-level statement of a file, from one parse and one walk per file version: the function it defines
    (None for any other statement, and for a decorated function: its decorator runs on import), its normalised
    source (`ast.dump` without docstrings or positions), the names it uses and the imports in it that run. The syntax
    tree itself is not kept: a planning run holding every module's tree spent its time in the garbage collector."""
    tree = _strip_docstrings(ast.parse(path.read_text(encoding="utf-8")))
    assert isinstance(tree, ast.Module)
    out = []
    for statement in tree.body:
        names: set[str] = set()
        imports: list[ast.Import | ast.ImportFrom] = []
        type_only: set[int] = set()
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                imports.append(node)
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                type_only.update(id(inner) for branch in node.body for inner in ast.walk(branch))
        running = tuple(
            (node.module if isinstance(node, ast.ImportFrom) else None,
             (node.level or 0) if isinstance(node, ast.ImportFrom) else 0,
             tuple(alias.name for alias in node.names))
            for node in imports
            if id(node) not in type_only
        )  # fmt: skip
        function = isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and not statement.decorator_list
        out.append((
            statement.name if function else None,  # type: ignore[union-attr]
            ast.dump(statement, include_attributes=False),
            frozenset(names),
            running,
        ))  # fmt: skip
    return tuple(out)


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
    return frozenset(_named(_imports_in(path, stamp), package))


def _named(imports: Iterable[Imported], package: str | None) -> set[str]:
    """The package modules these import statements (of a module of `package`) import."""
    found: set[str] = set()
    for module, level, aliases in imports:
        names: list[str] = list(aliases)
        if module is not None or level:
            base = module or ""
            if level and package:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base] + [f"{base}.{alias}" for alias in aliases]
        for name in names:
            if name == PACKAGE or name.startswith(f"{PACKAGE}."):
                found.update(m for m in _parents(name) if _module_file(m))
    return found


def module_closure(*scripts: Path) -> list[Path]:
    """Every package module the scripts import, directly or through each other, as files (sorted)."""
    return sorted(path for path, _, _ in _closure(m for script in scripts for m in _imports(script, None)).values())


def _closure(
    modules: Iterable[str],
    opaque: str | None = None,
    known: dict[str, tuple[Path, tuple[int, int], frozenset[str]] | None] | None = None,
) -> dict[str, tuple[Path, tuple[int, int], frozenset[str]]]:
    """These package modules and every package module they import, transitively: each one's file, its version
    stamp and the package modules it imports (not followed for a file the glob `opaque` matches, under src/rankscale)."""
    seen: dict[str, tuple[Path, tuple[int, int], frozenset[str]]] = {}
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        if known is not None and module in known:  # found already by this planning run's other entries
            if (entry := known[module]) is not None:
                seen[module] = entry
                todo.extend(entry[2] - set(seen))
            continue
        path = _module_file(module)
        if path is None:
            if known is not None:
                known[module] = None
            continue
        path, stamp = _version(path)
        # formats.py holds the pins and the type they are written with (FormatVersion): a job reads a version from it
        # and runs none of the digest code it imports, so what it imports is not followed (nor is it hashed)
        hidden = path == VERSIONS_MODULE or (opaque is not None and path.relative_to(SRC / PACKAGE).match(opaque))
        imports = frozenset() if hidden else _imports_of(path, stamp, module)
        seen[module] = (path, stamp, imports)
        if known is not None:
            known[module] = seen[module]
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


def entry_digest(
    script: Path, target: str, known: dict[str, tuple[Path, tuple[int, int], frozenset[str]] | None] | None = None
) -> str:
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
    while reached := {
        i for i, (name, *_) in enumerate(statements) if i not in kept and name in _used(statements, kept)
    }:
        kept |= reached
    view = [statement for i, statement in enumerate(statements) if i in kept]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    imported = _named([node for *_, imports in view for node in imports], package)
    closure = _closure([*_imports(script, None), *_parents(package), *imported], known=known)
    closure.pop(module, None)
    # the script or another module imports it all
    whole = module in _imports(script, None) or any(module in imports for _, _, imports in closure.values())
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
    found: dict[str, tuple[Path, tuple[int, int], frozenset[str]] | None] = {}  # modules found, shared by the entries
    digests = {name: entry_digest(script, target, found) for name, target in targets.items()}
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
    """A file's normalised source, statement by statement (`_dumps`: each file is dumped once)."""
    return hashlib.sha256("\n".join(_dumps(path, stamp)).encode()).hexdigest()
