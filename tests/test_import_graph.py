"""The package's import graph has no circles and no back arrows.

A circle between modules breaks at import time in the order nobody tested; a back arrow between two parts of the
package (tables/ importing report/ while report/ reads tables/) makes the two one part, so neither can be read,
tested or digested (`rankscale.fingerprint`) without the other. Every import counts, lazy and TYPE_CHECKING ones
included: each is a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Set
from pathlib import Path

from tests.conftest import REPO

SRC = REPO / "src"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(name: str, path: Path, modules: Set[str]) -> set[str]:
    """The package modules `path` (module `name`) imports: `from a import b` counts `a.b` where that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join([*base, node.module] if node.module else base)
            found.update(f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in (SRC / "rankscale").rglob("*.py")}
    return {name: imported(name, path, set(paths)) for name, path in paths.items()}


def part(module: str) -> str:
    """The part of the package a module belongs to: its subpackage (`tables`), or itself for a top-level module."""
    return module.split(".")[1] if module.count(".") else module


def part_graph(graph: Mapping[str, Set[str]]) -> dict[str, set[str]]:
    parts: dict[str, set[str]] = {}
    for module, deps in graph.items():
        parts.setdefault(part(module), set()).update(part(d) for d in deps if part(d) != part(module))
    return parts


def circles(graph: Mapping[str, Set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def back_arrows(graph: Mapping[str, Set[str]]) -> list[tuple[str, str]]:
    """Every arrow between two parts of the package that lie on one circle of parts."""
    parts = part_graph(graph)
    tangled = circles(parts)
    return sorted((a, b) for c in tangled for a in c for b in parts.get(a, ()) if b in c)


def test_no_module_imports_itself_round_a_circle() -> None:
    assert circles(import_graph()) == []


def test_no_part_of_the_package_imports_one_that_imports_it() -> None:
    graph = import_graph()
    arrows = back_arrows(graph)
    detail = [(m, d) for m, deps in graph.items() for d in deps if (part(m), part(d)) in arrows]
    assert arrows == [], f"parts that import each other: {arrows}; through {sorted(detail)}"


def test_plot_topics_share_one_floor() -> None:
    """A topic module (plots/laws.py) imports the shared helpers (plots/common.py, and plots/law_lines.py to draw
    a family's law), never another topic: a helper used by several figures lives on the floor they share. A topic's
    declarations (plots/entries/laws.py) import the declaration types alone, never a topic module."""
    graph = import_graph()
    shared = {"rankscale.plots", "rankscale.plots.common", "rankscale.plots.law_lines", "rankscale.plots.declaration"}
    topics = {m: {d for d in deps if d.startswith("rankscale.plots.")} for m, deps in graph.items()}
    assert {m: deps - shared for m, deps in topics.items() if m.startswith("rankscale.plots.") and deps - shared} == {}


def test_the_checks_see_a_back_arrow_and_a_circle() -> None:
    """Synthetic graphs with a known answer: the report reads a table, the table names a report section."""
    graph = {
        "rankscale.report.pages": {"rankscale.tables.base"},
        "rankscale.tables.laws": {"rankscale.report.sections", "rankscale.sections"},
        "rankscale.tables.base": set(),
        "rankscale.report.sections": set(),
        "rankscale.sections": set(),
    }
    assert circles(graph) == []
    assert back_arrows(graph) == [("report", "tables"), ("tables", "report")]
    graph["rankscale.tables.laws"] = {"rankscale.sections"}
    assert back_arrows(graph) == []
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_the_graph_follows_every_kind_of_import() -> None:
    """Relative, `from package import module`, lazy (inside a function) and TYPE_CHECKING imports all count."""
    graph = import_graph()
    assert "rankscale.sections" in graph["rankscale.tables.entries.laws"]
    assert "rankscale.tables.base" in graph["rankscale.report.pages"]
    assert "rankscale.plan.types" in graph["rankscale.downloads"]  # a TYPE_CHECKING import
