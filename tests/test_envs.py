"""`--sdm conda` correctness, checked statically (no conda, no network).

Every rule that runs code declares a pinned environment from workflow/envs/; the project's package is
importable inside it (each rule script puts src/ on sys.path before importing it); each
environment provides every distribution the code its rules run imports, lazily or not (the
transitive closure over `rankscale.*`); and every pin is exact, satisfies pyproject.toml and
equals the version installed here, so CI tests exactly what the environments pin.

Why this matters: Snakemake's script preamble appends the *host's* sys.path to the
environment's, so a module missing from an environment is silently taken from the host in
a same-Python setup and only fails on a clean cluster node.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import os
import re
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ENVS = REPO / "workflow" / "envs"
PACKAGE = "rankscale"

# conda-forge names whose PyPI (import-metadata) name differs
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib", "pytorch": "torch", "pytorch-cpu": "torch"}
# pins that are tooling of the environment itself, not dependencies of the code
TOOLING = {"python", "pip"}
# optional dependencies the code relies on that a distribution's metadata does not require:
# rankscale loads transformers' PyTorch models (transformers[torch])
EXTRA_REQUIREMENTS = {"transformers": ("torch",)}


# ---------------------------------------------------------------------------------------------
# rules


@dataclass(frozen=True)
class RuleInfo:
    name: str
    defined_in: Path
    conda_env: str | None
    script: Path | None
    shell: bool
    run: bool
    norun: bool


def load_rules(workdir: Path) -> list[RuleInfo]:
    """The workflow's rules, as Snakemake itself parses them (default config, no jobs run)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    cwd = os.getcwd()
    try:
        with SnakemakeApi(OutputSettings(quiet=set())) as api:
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(),
                config_settings=ConfigSettings(configfiles=[REPO / "config/config.yaml"]),
                snakefile=REPO / "workflow/Snakefile",
                workdir=workdir,
            )
            workflow = workflow_api._workflow  # no public accessor for the parsed rules
            rules = []
            for rule in workflow.rules:
                basedir = Path(str(rule.basedir))
                env = rule.conda_env
                rules.append(
                    RuleInfo(
                        name=rule.name,
                        defined_in=basedir,
                        conda_env=None if env is None else (env if isinstance(env, str) else repr(env)),
                        script=(basedir / rule.script).resolve() if rule.script else None,
                        shell=bool(rule.shellcmd),
                        run=bool(rule.is_run),
                        norun=bool(rule.norun) and not (rule.notebook or rule.wrapper),
                    )
                )
            return rules
    finally:
        os.chdir(cwd)


def rule_names_in_sources() -> set[str]:
    """Every `rule NAME:` in the Snakefile and workflow/rules/*.smk, conditional or not."""
    names = set()
    for path in [REPO / "workflow/Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]:
        names |= set(re.findall(r"^\s*(?:local)?rule\s+(\w+)\s*:", path.read_text(), re.MULTILINE))
    return names


def env_path(rule: RuleInfo) -> Path:
    assert rule.conda_env is not None
    return (rule.defined_in / rule.conda_env).resolve()


# ---------------------------------------------------------------------------------------------
# imports


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Imports(ast.NodeVisitor):
    """Absolute names of every module a file imports, at any depth, outside `if TYPE_CHECKING:`."""

    def __init__(self, package: str | None) -> None:
        self.package = package  # the file's package, for relative imports
        self.modules: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:  # only the runtime branch
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.modules.update(alias.name for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            assert self.package, f"relative import outside a package: line {node.lineno}"
            parts = self.package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1])
            module = f"{base}.{node.module}" if node.module else base
        else:
            module = node.module or ""
        self.modules.add(module)
        # `from pkg import name` may import the submodule pkg.name
        self.modules.update(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")


def module_file(module: str, src: Path) -> Path | None:
    """The source file of a first-party module under `src`, or None if there is none."""
    path = src.joinpath(*module.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def file_imports(path: Path, package: str | None) -> set[str]:
    visitor = _Imports(package)
    visitor.visit(ast.parse(path.read_text(), filename=str(path)))
    return visitor.modules


def third_party_imports(script: Path, src: Path = SRC, package: str = PACKAGE) -> dict[str, set[str]]:
    """Top-level third-party modules reached from `script` -> the files (relative) importing them.

    Follows every `package.*` import (and the parent packages it executes) into `src`.
    """
    needed: dict[str, set[str]] = {}
    seen: set[Path] = set()
    todo: list[tuple[Path, str | None]] = [(script, None)]
    while todo:
        path, pkg = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        where = str(path.relative_to(src.parent) if path.is_relative_to(src.parent) else path)
        for module in file_imports(path, pkg):
            top = module.split(".")[0]
            if top == package:
                parts = module.split(".")
                for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b, a.b.c
                    name = ".".join(parts[:i])
                    found = module_file(name, src)
                    if found is not None:
                        todo.append((found, name if found.name == "__init__.py" else name.rpartition(".")[0]))
            elif top and top not in sys.stdlib_module_names:
                needed.setdefault(top, set()).add(where)
    return needed


@cache
def _packages_distributions() -> dict[str, list[str]]:
    return md.packages_distributions()


def distributions_for(module: str) -> set[str]:
    """Canonical distribution names providing a top-level module, as installed here."""
    return {canonicalize_name(d) for d in _packages_distributions().get(module, [])}


# ---------------------------------------------------------------------------------------------
# environments


@dataclass(frozen=True)
class Pin:
    name: str  # canonical PyPI name
    raw: str
    source: str  # "conda" or "pip"
    operator: str | None
    version: str | None


@dataclass
class Env:
    path: Path
    channels: list[str]
    pins: dict[str, Pin] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


_CONDA_SPEC = re.compile(r"^(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(?:(==|=|>=|<=|>|<|!=|~=)\s*([^\s]+))?$")


def parse_env(path: Path) -> Env:
    data = yaml.safe_load(path.read_text())
    env = Env(path=path, channels=list(data.get("channels") or []))

    def add(pin: Pin) -> None:
        if pin.name in env.pins:
            env.problems.append(f"{path.name}: {pin.name} is listed twice ({env.pins[pin.name].raw!r}, {pin.raw!r})")
        env.pins[pin.name] = pin

    for entry in data.get("dependencies") or []:
        if isinstance(entry, dict):
            for spec in entry.get("pip") or []:
                req = Requirement(spec)
                ops = [(s.operator, s.version) for s in req.specifier]
                op, version = ops[0] if len(ops) == 1 else (None, None)
                add(Pin(canonicalize_name(req.name), spec, "pip", op, version))
            continue
        match = _CONDA_SPEC.match(str(entry).strip())
        if not match:
            env.problems.append(f"{path.name}: cannot parse conda spec {entry!r}")
            continue
        name, op, version = match.groups()
        name = canonicalize_name(CONDA_TO_PYPI.get(name.lower(), name))
        add(Pin(name, str(entry), "conda", op, version))
    return env


def requirement_closure(names: Iterable[str]) -> set[str]:
    """`names` plus everything their installed metadata requires (base install, this platform)."""
    marker_env = {**default_environment(), "extra": ""}
    out: set[str] = set()
    todo = [canonicalize_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        todo.extend(EXTRA_REQUIREMENTS.get(name, ()))
        todo.extend(
            canonicalize_name(req.name)
            for req in installed_requirements(name)
            if req.marker is None or req.marker.evaluate(marker_env)
        )
    return out


@cache
def installed_requirements(name: str) -> tuple[Requirement, ...]:
    """What the installed distribution `name` declares it requires (all extras); () if not installed."""
    try:
        return tuple(Requirement(r) for r in md.requires(name) or [])
    except md.PackageNotFoundError:
        return ()


@cache
def project_requirements() -> dict[str, Requirement]:
    """The project's dependencies and its optional features' (e.g. `gguf`: code imports them lazily, where a
    configuration uses the feature), not the `dev` tooling."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    features = [r for name, reqs in project["optional-dependencies"].items() if name != "dev" for r in reqs]
    return {canonicalize_name(r.name): r for r in map(Requirement, [*project["dependencies"], *features])}


def missing_distributions(script: Path, env_file: Path, src: Path = SRC) -> list[str]:
    """What an environment lacks to run `script`: one line per problem; empty when it has it all.

    Covers the distributions whose modules the script reaches (directly or through the package,
    lazy imports included), and every project dependency those (or the environment's own pins)
    pull in, which must be pinned explicitly so the environment resolves to the tested versions.
    """
    env = parse_env(env_file)
    problems = list(env.problems)
    needed: set[str] = set()
    for module, importers in sorted(third_party_imports(script, src).items()):
        dists = distributions_for(module)
        if not dists:
            problems.append(f"module {module!r} (imported by {sorted(importers)}) maps to no installed distribution")
        elif not dists & env.pins.keys():
            problems.append(
                f"{env_file.name} lacks {'/'.join(sorted(dists))} for module {module!r} (imported by {sorted(importers)})"
            )
        needed |= dists
    project = project_requirements()
    pinned = set(env.pins) - TOOLING
    for dist in sorted(requirement_closure(needed | pinned) & project.keys()):
        if dist not in env.pins and dist not in needed:  # a needed one is reported above
            problems.append(f"{env_file.name} lacks an explicit pin of {dist} (a project dependency it pulls in)")
    return problems


def env_files() -> list[Path]:
    return sorted(ENVS.glob("*.yaml")) + sorted(ENVS.glob("*.yml"))


# ---------------------------------------------------------------------------------------------
# tests


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> list[RuleInfo]:
    return load_rules(tmp_path_factory.mktemp("workdir"))


@pytest.fixture(scope="module")
def code_rules(rules: list[RuleInfo]) -> list[RuleInfo]:
    return [r for r in rules if not r.norun]


def test_snakemake_sees_every_rule(rules: list[RuleInfo]) -> None:
    """No rule is hidden from the checks below by the default config (e.g. a conditional rule)."""
    assert {r.name for r in rules} == rule_names_in_sources()
    assert any(r.script for r in rules)


def test_every_code_rule_declares_an_env_from_envs(code_rules: list[RuleInfo]) -> None:
    problems = []
    for rule in code_rules:
        if rule.run:
            problems.append(f"{rule.name}: a run: block runs in Snakemake's own process, not in a conda env")
        if not rule.script and not rule.shell:
            problems.append(f"{rule.name}: runs neither a script nor a shell command; add a check for it here")
        if rule.conda_env is None:
            problems.append(f"{rule.name}: no conda: directive")
            continue
        path = env_path(rule)
        if path.parent != ENVS or not path.is_file():
            problems.append(f"{rule.name}: conda: {rule.conda_env} is not a file in workflow/envs/ ({path})")
    assert not problems, "\n".join(problems)


def test_every_env_is_used(code_rules: list[RuleInfo]) -> None:
    used = {env_path(r) for r in code_rules if r.conda_env}
    assert set(env_files()) == used, "unused or missing environment files"


def _sys_path_insert(stmt: ast.stmt) -> ast.expr | None:
    """The path argument of a top-level `sys.path.insert(0, PATH)`, else None."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    if ast.unparse(call.func) == "sys.path.insert" and len(call.args) == 2:
        index = call.args[0]
        if isinstance(index, ast.Constant) and index.value == 0:
            return call.args[1]
    return None


def _imported_tops(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Import):
        return {a.name.split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ImportFrom):
        return {(stmt.module or "").split(".")[0]}
    return set()


def check_script_preamble(script: Path) -> list[str]:
    """The script's first statements put REPO/src first on sys.path, before any non-stdlib import."""
    body = ast.parse(script.read_text(), filename=str(script)).body
    rel = script.relative_to(REPO)
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            continue  # docstring
        arg = _sys_path_insert(stmt)
        if arg is not None:
            scope = {"snakemake": SimpleNamespace(scriptdir=str(script.parent))}
            target = Path(eval(compile(ast.Expression(arg), str(script), "eval"), scope))  # noqa: S307
            if target.resolve() != SRC.resolve():
                return [f"{rel}: sys.path.insert(0, ...) adds {target}, not {SRC}"]
            return []
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            outside = _imported_tops(stmt) - set(sys.stdlib_module_names)
            if outside:
                return [f"{rel}:{stmt.lineno}: imports {sorted(outside)} before putting src/ on sys.path"]
            continue
        if isinstance(stmt, ast.Assign) and ast.unparse(stmt.value) in (
            'globals()["snakemake"]',
            "globals()['snakemake']",
        ):
            continue
        return [f"{rel}:{stmt.lineno}: `{ast.unparse(stmt)[:60]}` comes before putting src/ on sys.path"]
    return [f"{rel}: never puts src/ on sys.path"]


def test_scripts_make_the_package_importable(code_rules: list[RuleInfo]) -> None:
    assert (SRC / PACKAGE / "__init__.py").is_file()
    problems = [p for r in code_rules if r.script for p in check_script_preamble(r.script)]
    assert not problems, "\n".join(problems)


def test_envs_provide_every_imported_distribution(code_rules: list[RuleInfo]) -> None:
    problems = []
    for rule in code_rules:
        if rule.script and rule.script.suffix == ".py" and rule.conda_env:
            problems += [f"rule {rule.name}: {p}" for p in missing_distributions(rule.script, env_path(rule))]
    assert not problems, "\n".join(problems)


def test_imported_distributions_are_declared_in_pyproject(code_rules: list[RuleInfo]) -> None:
    """What the rule scripts and the package import is a declared dependency, not a transitive accident."""
    scripts = [r.script for r in code_rules if r.script and r.script.suffix == ".py"]
    imports: dict[str, set[str]] = {}
    for path in [*scripts, *sorted((SRC / PACKAGE).glob("*.py"))]:
        for module, importers in third_party_imports(path).items():
            imports.setdefault(module, set()).update(importers)
    project = project_requirements()
    undeclared = [
        f"module {module!r} (imported by {sorted(importers)}): add {'/'.join(sorted(dists)) or '?'} to pyproject.toml"
        for module, importers in sorted(imports.items())
        if not ((dists := distributions_for(module)) & project.keys())
    ]
    assert not undeclared, "\n".join(undeclared)


@pytest.mark.parametrize("path", env_files(), ids=lambda p: p.name)
def test_env_header_and_channels(path: Path) -> None:
    first = path.read_text().splitlines()[0]
    assert first.startswith("#") and len(first) > 10, f"{path.name}: start with a comment saying what it is for"
    env = parse_env(path)
    assert not env.problems, env.problems
    assert env.channels[:1] == ["conda-forge"] and "defaults" not in env.channels, env.channels


@pytest.mark.parametrize("path", env_files(), ids=lambda p: p.name)
def test_pins_are_exact_and_agree_with_pyproject(path: Path) -> None:
    env = parse_env(path)
    project = project_requirements()
    pulled_in = requirement_closure(set(env.pins) & project.keys())
    requires_python = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    problems = []
    for pin in env.pins.values():
        exact = {"pip": ("==",), "conda": ("=", "==")}[pin.source]
        if pin.operator not in exact or not pin.version or any(c in pin.version for c in "*,|"):
            problems.append(f"{pin.raw!r} is not an exact pin ({' or '.join(exact)} VERSION)")
            continue
        if pin.name == "python":
            if not Requirement(f"python{requires_python}").specifier.contains(pin.version):
                problems.append(f"{pin.raw!r} outside requires-python {requires_python}")
        elif pin.name not in TOOLING:
            if pin.name not in project:
                if pin.name not in pulled_in:
                    problems.append(
                        f"{pin.raw!r}: {pin.name} is neither in pyproject.toml [project].dependencies "
                        "nor required by a project dependency pinned here"
                    )
            elif not project[pin.name].specifier.contains(pin.version, prereleases=True):
                problems.append(f"{pin.raw!r} does not satisfy pyproject.toml's {project[pin.name]}")
    assert env.pins.get("python"), f"{path.name}: pin python"
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", env_files(), ids=lambda p: p.name)
def test_pins_equal_the_tested_versions(path: Path) -> None:
    """The tests run against this interpreter's packages; the environments pin exactly those."""
    env = parse_env(path)
    problems = []
    for pin in env.pins.values():
        if pin.name == "python":
            here = f"{sys.version_info.major}.{sys.version_info.minor}"
            if pin.version != here and not (pin.version or "").startswith(f"{here}."):
                problems.append(f"{pin.raw!r} but the tests run on Python {sys.version.split()[0]}")
            continue
        if pin.name in TOOLING:
            continue
        try:
            installed = Version(md.version(pin.name))
        except md.PackageNotFoundError:
            continue
        if Version(pin.version or "0") != Version(installed.public):
            problems.append(f"{pin.raw!r} but {installed} is installed (and tested)")
    if problems and not os.environ.get("RANKSCALE_REQUIRE_PINNED"):
        # a plain `pip install -e .` may resolve newer releases; .ci/run installs the pins and enforces this
        pytest.skip(f"{path.name}: installed versions differ from the pins: " + "; ".join(problems))
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", env_files(), ids=lambda p: p.name)
def test_pins_are_mutually_consistent(path: Path) -> None:
    """Each pinned distribution's own requirements (with the extras the code needs) accept the other pins."""
    env = parse_env(path)
    problems = []
    for pin in env.pins.values():
        extras = ("", *EXTRA_REQUIREMENTS.get(pin.name, ()))
        for req in installed_requirements(pin.name):
            other = env.pins.get(canonicalize_name(req.name))
            applies = req.marker is None or any(
                req.marker.evaluate({**default_environment(), "extra": extra}) for extra in extras
            )
            if other and other.version and applies and not req.specifier.contains(other.version, prereleases=True):
                problems.append(f"{pin.raw!r} requires {req}, but {other.raw!r} is pinned")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


# --- the checker itself: it must find what is missing, so the tests above cannot pass vacuously


def test_checker_reports_a_missing_distribution(tmp_path: Path) -> None:
    summarize = REPO / "workflow/scripts/summarize.py"
    env = yaml.safe_load((ENVS / "analysis.yaml").read_text())
    assert missing_distributions(summarize, ENVS / "analysis.yaml") == []

    def drop(specs: list, name: str) -> list:
        out = []
        for spec in specs:
            if isinstance(spec, dict):
                out.append({k: drop(v, name) for k, v in spec.items()})
            elif canonicalize_name(re.split(r"[=<>!~ ]", spec)[0]) != name:
                out.append(spec)
        return out

    env["dependencies"] = drop(env["dependencies"], "scipy")
    lacking = tmp_path / "no-scipy.yaml"
    lacking.write_text(yaml.safe_dump(env))
    problems = missing_distributions(summarize, lacking)
    assert any("lacks scipy" in p and "rankscale/lognormal.py" in p for p in problems), problems


def test_checker_follows_lazy_imports_and_skips_type_checking(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / PACKAGE).mkdir(parents=True)
    (src / PACKAGE / "__init__.py").write_text("")
    (src / PACKAGE / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\nelse:\n    import numpy\n"
        "def f():\n    from . import b\n"
    )
    (src / PACKAGE / "b.py").write_text("def g():\n    import yaml.constructor\n")
    script = tmp_path / "script.py"
    script.write_text(f"import json\nfrom {PACKAGE}.a import f\n")
    assert third_party_imports(script, src) == {"numpy": {"src/rankscale/a.py"}, "yaml": {"src/rankscale/b.py"}}
    env = tmp_path / "env.yaml"
    env.write_text("channels: [conda-forge]\ndependencies:\n  - python=3.11\n  - numpy=2.4.6\n")
    assert missing_distributions(script, env, src) == [
        "env.yaml lacks pyyaml for module 'yaml' (imported by ['src/rankscale/b.py'])"
    ]


def test_checker_reads_conda_names_and_pulls_in_project_dependencies(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("import matplotlib.pyplot\n")
    env = tmp_path / "env.yaml"
    env.write_text("channels: [conda-forge]\ndependencies:\n  - python=3.11\n  - matplotlib-base=3.11.2\n")
    # matplotlib-base is matplotlib; matplotlib requires numpy, a project dependency, so pin it
    assert missing_distributions(script, env, tmp_path) == [
        "env.yaml lacks an explicit pin of numpy (a project dependency it pulls in)"
    ]
    env.write_text(env.read_text() + "  - pip\n  - pip:\n      - numpy==2.4.6\n")
    assert missing_distributions(script, env, tmp_path) == []
