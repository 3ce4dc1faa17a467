"""What the docs state that the code can contradict: the counts of tables and figures, how to run cffconvert without
breaking the environment, and the citation's release date."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import yaml

import rankscale
from rankscale.plots import FIGURES
from rankscale.tables import TABLES
from tests.conftest import REPO

# every page a reader takes as current; benchmarks/RESULTS.md is a log, each entry's counts those of its commit
DOCS = sorted(p for p in [*REPO.glob("*.md"), *REPO.glob("docs/*.md"), *REPO.glob("*/README.md")]
              if not p.relative_to(REPO).parts[0].startswith("."))  # fmt: skip

CURRENT = re.compile(r"\bnow (\d+) tables and (\d+) figures\b")  # the one way a count is stated as current
# a count of tables or figures near a "now" in the same sentence, however it is put ("now 15 of each")
COUNT = re.compile(r"\b\d+\b[^.;]{0,25}\b(?:tables?|figures?|of each)\b|\b(?:tables?|figures?)\b[^.;]{0,40}\b\d+\b")


def flat(path: Path) -> str:
    """A page's text with every run of whitespace one space, so a statement reads the same across line breaks."""
    return " ".join(path.read_text().split())


def current_counts(text: str) -> tuple[list[tuple[int, int]], list[str]]:
    """The (tables, figures) counts `text` states as current, and the sentences near a "now" that state a count
    some other way, which cannot be checked."""
    stated, loose = [], []
    for now in re.finditer(r"\bnow\b", text):
        if found := CURRENT.match(text, now.start()):
            stated.append((int(found.group(1)), int(found.group(2))))
            continue
        start = max(text.rfind(". ", 0, now.start()) + 2, now.start() - 80)
        end = text.find(". ", now.end())
        near = text[start : now.end() + 80 if end < 0 else min(end, now.end() + 80)]
        if COUNT.search(near):
            loose.append(near)
    return stated, loose


def test_the_docs_count_the_registries_tables_and_figures() -> None:
    """A page that says how many tables and figures a run has now says the registries' numbers, in the form
    "now N tables and M figures" (a count put another way could go stale unseen: docs/sharing.md's "now 15 of
    each" stayed while the registries grew to 25 and 19)."""
    registries = (len(TABLES), len(FIGURES))
    stated, loose = {}, {}
    for path in DOCS:
        name = str(path.relative_to(REPO))
        stated[name], loose[name] = current_counts(flat(path))
    assert not any(loose.values()), f'say a current count as "now N tables and M figures": {loose}'
    wrong = {name: counts for name, counts in stated.items() if any(c != registries for c in counts)}
    assert not wrong, f"the registries hold {registries[0]} tables and {registries[1]} figures: {wrong}"
    assert sum(map(len, stated.values())) >= 3  # docs/sharing.md, configuration.md and paper.md state them


def test_cffconvert_runs_in_an_environment_of_its_own() -> None:
    """cffconvert requires an older jsonschema than rankscale: each command of it the docs show runs from a venv
    of its own (a path to its bin/) or pipx, never from the environment rankscale runs in."""
    commands = [span for path in DOCS for span in re.findall(r"`([^`]*cffconvert[^`]*)`", flat(path))]
    assert commands, "docs/paper.md says how to check CITATION.cff"
    bare = [c for c in commands if re.search(r"(?<![/\w-])(?:pip3? install [^&;]*|^\s*)cffconvert\b", c)]
    assert not bare, f"these would install or run cffconvert in rankscale's environment: {bare}"


def test_the_citation_says_when_its_version_was_released() -> None:
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["version"] == rankscale.__version__
    assert isinstance(cff.get("date-released"), datetime.date), "CFF 1.2's date-released: YYYY-MM-DD"
