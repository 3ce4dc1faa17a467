"""`rankscale.layout` is the one place a path under results/, resources/ or logs/ is written.

A rule, a rule script, a benchmark or a package module that spells such a path itself would drift from the layout the
others read (two spellings of one file, or a run directory `RESERVED_RUNS` does not know), so every string
literal of theirs is read here, comments and docstrings aside, and one that names such a path fails.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from rankscale.layout import RESERVED_RUNS, Layout, RunFiles
from tests.conftest import REPO

ROOTS = ("results", "resources", "logs")
PATH = re.compile(rf"(?<![\w.-])({'|'.join(ROOTS)})/|^[rbfRBF]*(['\"]{{1,3}})({'|'.join(ROOTS)})\2$")
# (file, literal): the documented exceptions
ALLOWED = {
    # `migrate` moves token files and rank arrays from where earlier versions wrote them: paths no rule makes
    ("src/rankscale/share.py", 'f"results/tokens/{old_tok}/{d}.npz"'),
    ("src/rankscale/share.py", 'f"results/ranks/{name}/{d}.npz"'),
}


def checked_files() -> list[Path]:
    """The rules, the Snakefile, the workflow's scripts, the benchmarks (which read a finished run's files) and
    every package module but the layout itself."""
    files = [*REPO.glob("workflow/rules/*.smk"), REPO / "workflow/Snakefile", *REPO.glob("workflow/**/*.py")]
    files += [*REPO.glob("benchmarks/**/*.py")]
    return sorted(files + [p for p in REPO.glob("src/rankscale/**/*.py") if p.name != "layout.py"])


def path_literals(text: str) -> Iterator[tuple[int, str]]:
    """(line, literal) of every string literal of `text` (Python or Snakemake) that names a path under results/,
    resources/ or logs/; a statement that is a string alone (a docstring) is prose, and so are comments."""
    statement: list[tokenize.TokenInfo] = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
            statement.append(token)
            continue
        kinds = {t.type for t in statement} - {tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT}
        if kinds - {tokenize.STRING}:
            yield from (
                (t.start[0], t.string) for t in statement if t.type == tokenize.STRING and PATH.search(t.string)
            )
        statement = []


def test_no_rule_script_or_module_writes_a_path_of_its_own() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {literal}"
        for path in checked_files()
        for line, literal in path_literals(path.read_text())
        if (str(path.relative_to(REPO)), literal) not in ALLOWED
    ]
    assert not found, "paths written outside rankscale.layout (use a Layout pattern or method):\n" + "\n".join(found)


def test_every_exception_still_exists() -> None:
    """An exception whose literal is gone is removed from the list, so the list stays short and true."""
    for file, literal in ALLOWED:
        assert literal in (REPO / file).read_text(), (file, literal)


def test_the_scan_sees_what_it_must() -> None:
    code = '''"""A docstring may say results/x."""
x = f"results/{run}/tables"  # a comment may say resources/y
rule corpus:
    output:
        "logs/corpus/{corpus}.log",
y = Path("results") / "z"
'''
    assert [line for line, _ in path_literals(code)] == [2, 5, 6]
    assert list(path_literals('z = "my_results/a" + "results"[0]')) == [(1, '"results"')]
    assert {REPO / "benchmarks/summary_checksums.py", REPO / "workflow/scripts/figure.py"} <= set(checked_files())


def test_reserved_runs_are_the_intermediates_directories() -> None:
    """A run is not named like a directory of intermediates: the list is derived from the layout's patterns."""
    assert RESERVED_RUNS == ("corpus", "tokens", "token_kinds", "ranks", "summary", "benchmarks")
    for pattern in (Layout.CORPUS, Layout.TOKENS, Layout.TOKEN_KINDS, Layout.RANKS, Layout.SUMMARY):
        assert pattern.split("/")[1] in RESERVED_RUNS
    for pattern in (Layout.EXTRACT_BENCHMARK, Layout.SUMMARIZE_BENCHMARK, Layout.GGUF_BENCHMARK):
        assert pattern.startswith(f"results/{RESERVED_RUNS[-1]}/")


def test_a_runs_files_are_spelled_once() -> None:
    """The run directory's files (`RunFiles`): the layout's own, and any copy's the landing page and `load` read."""
    files = RunFiles("copy/of/a/run")
    assert (files.table("metrics"), files.manifest, files.landing) == (
        "copy/of/a/run/tables/metrics.csv", "copy/of/a/run/manifest.json", "copy/of/a/run/report/landing.rst"
    )  # fmt: skip
    assert Layout.MANIFEST == f"{Layout.RUN}/manifest.json" and RunFiles(Layout.RUN).table() == "results/{run}/tables/{table}.csv"
