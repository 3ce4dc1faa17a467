"""Planning loads no plotting or statistics library: `snakemake -n`, `rankscale check` and workflow/share.py read
the tables' and figures' declarations (rankscale.tables.entries, rankscale.plots.entries), and only the job that
makes a table or figure imports its code. A fresh interpreter imports every package module the Snakefile and its
rules import at the top, checks the default configuration the way `rankscale check` does (every rule's settings,
every table's and figure's), and must not have matplotlib, scipy or pandas in `sys.modules`; a figure job's imports
pull in its own topic module and no other."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.conftest import REPO

HEAVY = ("matplotlib", "scipy", "pandas")

PLANNING = """
import importlib, json, re, sys
from pathlib import Path

repo = Path(sys.argv[1])
modules = []
for smk in [repo / "workflow/Snakefile", *sorted((repo / "workflow/rules").glob("*.smk"))]:
    modules += re.findall(r"^from (rankscale[\\w.]*) import", smk.read_text(), re.M)
    modules += [f"rankscale.{m}" for m in re.findall(r"^from rankscale import (\\w+)", smk.read_text(), re.M)]
for name in [*modules, "rankscale.share_cli"]:
    importlib.import_module(name)
from rankscale.check import check, DEFAULT_CONFIG

checked = check([], [], DEFAULT_CONFIG)
print(json.dumps({"errors": checked.errors, "modules": sorted(modules),
                  "heavy": [m for m in HEAVY if m in sys.modules]}))
""".replace("HEAVY", repr(HEAVY))

FIGURE_JOB = """
import json, sys
from rankscale.plots import FIGURES
from rankscale.plots.common import FigureData
from rankscale.tables.base import Replicates, read_table

before = set(sys.modules)
FIGURES[sys.argv[1]].plotter()
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith("rankscale.plots."))))
"""


def run(script: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-c", script, *args], cwd=REPO, capture_output=True, text=True,
                            env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_planning_imports_no_matplotlib_scipy_or_pandas() -> None:
    found = json.loads(run(PLANNING, str(REPO)))
    assert found["errors"] == []
    # the probe sees the rules' imports (a regex that matched nothing would make this test pass vacuously)
    assert {"rankscale.plan", "rankscale.plots", "rankscale.tables", "rankscale.fingerprint"} <= set(found["modules"])
    assert found["heavy"] == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The same probe with one heavy module imported as the rules' imports were before: it must say so."""
    heavy = PLANNING.replace('"rankscale.share_cli"]', '"rankscale.share_cli", "rankscale.tables.metrics"]')
    assert set(json.loads(run(heavy, str(REPO)))["heavy"]) >= {"pandas", "scipy"}


def test_a_figure_job_imports_its_own_topic_module_alone() -> None:
    loaded = json.loads(run(FIGURE_JOB, "fig3_rbp1"))
    topics = {m for m in loaded if re.fullmatch(r"rankscale\.plots\.\w+", m)} - {
        "rankscale.plots.common", "rankscale.plots.law_lines", "rankscale.plots.declaration", "rankscale.plots.entries"
    }  # fmt: skip
    assert topics == {"rankscale.plots.laws"}


def test_an_entry_naming_a_missing_function_is_refused_at_planning() -> None:
    """A table's or figure's digest (tests/test_entry_digests.py) reads its implementation's module: a declaration
    naming a function the module lacks fails planning, not the job."""
    import pytest

    from rankscale.fingerprint import entry_digest

    with pytest.raises(ValueError, match="defines no top-level function 'fig_nothing'"):
        entry_digest(REPO / "workflow/scripts/figure.py", "rankscale.plots.laws:fig_nothing")
