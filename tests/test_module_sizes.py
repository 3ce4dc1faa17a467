"""docs/architecture.md promises no package module over 400 lines: one that grows past it is split by idea."""

from __future__ import annotations

from tests.conftest import REPO

MAX_LINES = 400


def test_no_package_module_is_over_400_lines() -> None:
    sizes = {p.relative_to(REPO): len(p.read_text().splitlines()) for p in (REPO / "src").rglob("*.py")}
    assert {str(p): n for p, n in sizes.items() if n > MAX_LINES} == {}
