"""Each table and figure job carries the digest of its own code (rankscale.fingerprint.entry_digest, TABLE_CODE and
FIGURE_CODE in workflow/rules/common.smk): an edit to one figure's function moves that figure's digest alone, an
edit to a helper moves the figures that call it, an edit to plots/common.py every figure and no table. Each case
edits a copy of the package and computes the digests there as planning does, in a fresh interpreter (the digests
read the package's files from where it is imported); tests/test_rerun.py runs Snakemake on one such edit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import copy_workflow

DIGESTS = """
import json, sys
from pathlib import Path
from rankscale.fingerprint import entry_digests
from rankscale.plots import FIGURES
from rankscale.tables import TABLES

scripts = Path(sys.argv[1]) / "workflow/scripts"
print(json.dumps({
    "tables": entry_digests(scripts / "table.py", {name: t.build for name, t in TABLES.items()}),
    "figures": entry_digests(scripts / "figure.py", {name: f.plot for name, f in FIGURES.items()}),
    "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("matplotlib", "scipy", "pandas")),
}))
"""

LAWS_FIGURES = {"fig3_rbp1", "fig4_rbp_k", "fig5_large_k", "fig6_r2_alpha_vs_k", "fig8a_ce_vs_rbp1",
                "fig14_bits_per_byte"}  # fmt: skip


def digests(work: Path) -> dict[str, dict[str, str]]:
    result = subprocess.run([sys.executable, "-c", DIGESTS, str(work)], cwd=work, capture_output=True, text=True,
                            env={"PYTHONPATH": str(work / "src"), "PATH": "/usr/bin:/bin"}, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    return json.loads(result.stdout)


def moved(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> set[str]:
    return {name for kind in ("tables", "figures") for name, code in after[kind].items() if before[kind][name] != code}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} in {path}"
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def copied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, str]]]:
    work = copy_workflow(tmp_path_factory.mktemp("entry_digests") / "wf")
    return work, digests(work)


@pytest.fixture
def work(copied: tuple[Path, dict], tmp_path: Path) -> Path:
    """A fresh copy of the package for one edit (the module's copy stays as it was)."""
    return copy_workflow(tmp_path / "wf")


def test_every_entry_has_its_own_digest_and_planning_stays_light(copied) -> None:
    _, before = copied
    assert before["modules"] == []  # found from the syntax trees, importing no plotting or statistics library
    codes = [*before["tables"].values(), *before["figures"].values()]
    assert len(set(codes)) == len(codes) == len(before["tables"]) + len(before["figures"])


def test_an_edit_to_one_figure_function_moves_that_figure_alone(copied, work: Path) -> None:
    edit(work / "src/rankscale/plots/laws.py", "def fig_r2_alpha(data: FigureData, settings: FigureSettings, png: Path) -> None:\n",
         "def fig_r2_alpha(data: FigureData, settings: FigureSettings, png: Path) -> None:\n    assert png\n")  # fmt: skip
    assert moved(copied[1], digests(work)) == {"fig6_r2_alpha_vs_k"}


def test_an_edit_to_a_helper_moves_the_figures_that_call_it(copied, work: Path) -> None:
    """law_panel draws the panels of Figs. 3, 4 and 5 (through rbp_rows) and of Fig. 14; Figs. 6 and 8a call it not."""
    laws = work / "src/rankscale/plots/laws.py"
    edit(laws, "def law_panel(ax: Any, data: FigureData, dataset: str, law: str, k: int | None) -> None:\n",
         "def law_panel(ax: Any, data: FigureData, dataset: str, law: str, k: int | None) -> None:\n    assert ax\n")  # fmt: skip
    assert moved(copied[1], digests(work)) == {"fig3_rbp1", "fig4_rbp_k", "fig5_large_k", "fig14_bits_per_byte"}
    # what the topic's module runs on import (a constant, an import) is every one of its figures' code
    laws.write_text(laws.read_text() + "\n\nLIMIT = 3\n")
    assert moved(copied[1], digests(work)) == LAWS_FIGURES


def test_shared_plot_code_moves_every_figure_and_no_table(copied, work: Path) -> None:
    common = work / "src/rankscale/plots/common.py"
    common.write_text(common.read_text() + "\n\nSHARED = 1\n")
    after = digests(work)
    assert moved(copied[1], after) == set(after["figures"])


def test_an_edit_to_a_table_builder_moves_its_table_and_the_tables_that_import_its_module(copied, work: Path) -> None:
    """build_form_comparison is form_comparison's own; tables.laws is imported whole by the claims and strata
    topics (`contrast_row`, `fits_table`), so their tables run all of it."""
    edit(work / "src/rankscale/tables/laws.py", "def build_form_comparison(inputs: TableInputs) -> pd.DataFrame:\n",
         "def build_form_comparison(inputs: TableInputs) -> pd.DataFrame:\n    assert inputs\n")  # fmt: skip
    after = digests(work)
    from rankscale.tables import TABLES

    importers = {name for name, t in TABLES.items() if t.build.split(":")[0] in ("rankscale.tables.claims",
                                                                                 "rankscale.tables.strata")}  # fmt: skip
    assert importers and "powerlaw_fits" not in importers
    assert moved(copied[1], after) == {"form_comparison", *importers}


def test_docstrings_and_comments_move_nothing(copied, work: Path) -> None:
    laws = work / "src/rankscale/plots/laws.py"
    edit(laws, "def fig_r2_alpha(data: FigureData, settings: FigureSettings, png: Path) -> None:\n",
         "# a comment\ndef fig_r2_alpha(data: FigureData, settings: FigureSettings, png: Path) -> None:\n")  # fmt: skip
    assert moved(copied[1], digests(work)) == set()


def test_a_module_is_normalised_as_ast_dump_says() -> None:
    """The code digests join each statement's dump (one dump per statement serves every digest): the text must be
    `ast.dump`'s of the whole module, so the pinned format digests mean what they did."""
    import ast

    from rankscale.fingerprint import SRC, _strip_docstrings, normalised_source

    files = sorted((SRC / "rankscale").rglob("*.py"))
    for path in files:
        tree = _strip_docstrings(ast.parse(path.read_text(encoding="utf-8")))
        assert normalised_source(path) == ast.dump(tree, include_attributes=False), path
