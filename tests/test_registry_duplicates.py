"""Every registry refuses a second entry of a name, naming both, and refuses item assignment: a recipe's
`METRICS["ce"] = ...` must not replace a built-in in silence (issue 61)."""

from __future__ import annotations

import dataclasses

import pytest

from rankscale.laws import FORMS
from rankscale.metrics import METRICS
from rankscale.plots import FIGURES
from rankscale.registry import Registry, resolve
from rankscale.sources import SOURCES
from rankscale.strata import STRATA
from rankscale.tables import TABLES


@pytest.mark.parametrize(
    ("registry", "name"),
    [
        (METRICS, "ce"),
        (FORMS, "power_law"),
        (SOURCES, "hub"),
        (STRATA, "frequency"),
        (TABLES, "metrics"),
        (FIGURES, "fig3_rbp1"),
    ],  # fmt: skip
)
def test_a_duplicate_name_is_refused_naming_both(registry: Registry, name: str) -> None:
    built_in = registry[name]
    other = dataclasses.replace(built_in) if dataclasses.is_dataclass(built_in) else built_in
    with pytest.raises(ValueError, match=f"two {registry.kind}s are registered as '{name}'") as refused:
        registry.register(other)
    assert str(refused.value).count(repr(built_in)) == 2  # both entries named (here equal, as a copy is)
    assert registry[name] is built_in and list(registry).count(name) == 1
    with pytest.raises(TypeError):
        registry[name] = other  # type: ignore[index]


def test_added_is_gone_after_its_block_and_an_unknown_name_lists_the_known() -> None:
    entry = dataclasses.replace(METRICS["ce"], name="ce_copy")
    with METRICS.added(entry):
        assert METRICS["ce_copy"] is entry
    assert "ce_copy" not in METRICS
    with pytest.raises(KeyError, match="no metric 'nope'; registered: rbp, "):
        METRICS["nope"]


def test_resolve_imports_what_an_entry_names() -> None:
    assert resolve(TABLES["metrics"].build).__name__ == "build_metrics"
    with pytest.raises(ValueError, match="not a 'module:function'"):
        resolve("rankscale.tables.metrics")
