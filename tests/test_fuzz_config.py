"""Fuzzed configurations: each is refused before any job, one line a problem naming the file and the key, or accepted
and planned. Never a traceback.

Hypothesis mutates every shipped configuration (config/*.yaml): wrong types, unknown and misspelled keys, boundary
values (0, negative, huge, NaN, empty lists), duplicate and clashing names, names that are paths, unicode, missing
and unreadable files, broken YAML. Each generated file goes through the workflow's own configuration stage
(rankscale.plan.prepare, what the Snakefile runs before any job) and every setting the rules compute from it; a
sample also through `snakemake -n` for real. The campaign (RANKSCALE_FUZZ_EXAMPLES, 200 by default; 2000 for the
recorded campaign, benchmarks/RESULTS.md) is slow-marked, with a fixed seed and an example database outside the
checkout (RANKSCALE_FUZZ_DB, else the user's cache directory), so a failure found once is replayed first there.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from tests.conftest import REPO, copy_workflow, snakemake
from tests.plan_check import plan_everything

DEFAULT = REPO / "config/config.yaml"
SHIPPED = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((REPO / "config").glob("*.yaml"))}
EXAMPLES = int(os.environ.get("RANKSCALE_FUZZ_EXAMPLES", "200"))
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
DATABASE = DirectoryBasedExampleDatabase(os.environ.get("RANKSCALE_FUZZ_DB") or str(CACHE / "rankscale/hypothesis"))

NASTY_TEXT = ["", " ", "../escape", "/abs/elsewhere", "a/b", "résumé-名前", "a\nb", "nul\x00byte", "-", "..",
              "results", "ranks", "x" * 300, "${HOME}", "*", "{model}"]  # fmt: skip
NASTY_NUMBERS = [0, -1, 1, 2, 2**31, 2**63, -(2**63), 10**30, 0.5, -0.0, 1e308, float("nan"), float("inf")]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(NASTY_NUMBERS),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(NASTY_TEXT),
    st.text(max_size=8),
    st.just([]),
    st.just({}),
    st.lists(st.one_of(st.integers(-3, 100), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.just(str(REPO / "config")),  # a directory where a file is expected
    st.just("/nonexistent/file.jsonl"),
)


@dataclass(frozen=True)
class Mutation:
    kind: str
    path: tuple[Any, ...]  # the key path it touched (list indices as integers)
    detail: str = ""

    def keys(self) -> set[str]:
        """The names a message about this mutation may use to point at it."""
        names = {str(p) for p in self.path if isinstance(p, str)}
        return names | ({self.detail} if self.detail else set())


def key_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every mapping key and list item of a configuration, by path."""
    out: list[tuple[Any, ...]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in items:
        out.append((*prefix, key))
        out.extend(key_paths(value, (*prefix, key)))
    return out


def parent_of(config: Any, path: tuple[Any, ...]) -> Any:
    node = config
    for part in path[:-1]:
        node = node[part]
    return node


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any, list[Mutation]]:
    """A shipped configuration with one to three mutations."""
    name = draw(st.sampled_from(sorted(SHIPPED)))
    config = copy.deepcopy(SHIPPED[name])
    mutations: list[Mutation] = []
    for _ in range(draw(st.integers(1, 3))):
        paths = key_paths(config)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, last = parent_of(config, path), path[-1]
        kind = draw(st.sampled_from(["set", "set", "delete", "unknown", "misspell", "duplicate", "rename"]))
        if kind == "set":
            parent[last] = draw(VALUES)
        elif kind == "delete":
            del parent[last]
        elif kind == "unknown" and isinstance(parent, dict):
            key = draw(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_é", min_size=1, max_size=10))
            if key in parent:
                continue
            parent[key] = draw(VALUES)
            path = (*path[:-1], key)
        elif kind == "misspell" and isinstance(parent, dict) and isinstance(last, str) and len(last) > 1:
            i = draw(st.integers(0, len(last) - 1))
            typo = last[:i] + last[i + 1 :]
            if typo in parent:
                continue
            parent[typo] = parent.pop(last)
            path = (*path[:-1], typo)
        elif kind == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))  # a second entry of the same name
        elif kind == "rename" and isinstance(parent, dict) and isinstance(parent[last], dict) and "name" in parent[last]:
            parent[last]["name"] = draw(st.sampled_from(NASTY_TEXT))
            path = (*path, "name")
        else:
            continue
        mutations.append(Mutation(kind, path))
    return name, config, mutations


def check_refusal(text: str, path: Path, mutations: list[Mutation]) -> None:
    lines = text.splitlines()
    assert lines and "Traceback" not in text, text
    assert all(line.startswith("config error in ") for line in lines), text
    assert any(path.name in line or DEFAULT.name in line for line in lines), f"no file named:\n{text}"
    named = set().union(*(m.keys() for m in mutations)) if mutations else set()
    # the problem is named by a key (a mutated one or, for a value that breaks a check elsewhere, the key it reaches)
    assert re.search(r"config error in \S+: \S", text) and (not named or any(k and k in text for k in named)
                                                            or re.search(r": [\w.\[\]]+(: |\[)", text)), text  # fmt: skip


@pytest.mark.slow
@seed(20261128)
@settings(max_examples=EXAMPLES, deadline=None, database=DATABASE, derandomize=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(mutated())
def test_a_fuzzed_configuration_is_refused_with_its_key_or_planned(case: tuple[str, Any, list[Mutation]]) -> None:
    _, config, mutations = case
    path = FUZZ_DIR / "fuzzed.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    outcome = plan_everything(path, DEFAULT)
    COUNTS["refused" if outcome else "planned"] += 1
    if outcome is not None:
        check_refusal(outcome, path, mutations)


FUZZ_DIR = Path(os.environ.get("RANKSCALE_FUZZ_DIR", "/tmp")) / f"rankscale-fuzz-{os.getpid()}"
FUZZ_DIR.mkdir(parents=True, exist_ok=True)
COUNTS = {"refused": 0, "planned": 0}


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Any:
    """Run from the repository (relative paths, as snakemake does); print what the campaign found."""
    cwd = os.getcwd()
    os.chdir(REPO)
    yield
    os.chdir(cwd)
    print(f"\nconfiguration fuzzing: {COUNTS['refused']} refused, {COUNTS['planned']} planned", file=sys.stderr)


BROKEN_YAML = ["datasets: {humaneval: {source: packaged\n", "models:\n\t- name: a\n", "datasets: [1, 2\n", "a: b: c\n",
               "datasets:\n  x: {source: local, path: a}\n  x: {source: local, path: b}\n"]  # fmt: skip


@pytest.mark.parametrize("text", BROKEN_YAML)
def test_broken_yaml_names_its_file_and_line(text: str, tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    from rankscale.config import ConfigError, load_yaml
    from rankscale.plan.errors import error_lines

    with pytest.raises(ConfigError) as caught:
        load_yaml(path)
    lines = error_lines(caught.value, [path], None)
    assert len(lines) == 1 and re.match(r"config error in \S*broken\.yaml:\d+", lines[0]), lines


# a few mutations every kind of fuzzing found worth keeping, through `snakemake -n` for real: one line, no traceback
REAL_CASES = {
    "nul byte in a local path": ("smoke", ("datasets", "pydoc"), {"source": "local", "path": "a\x00b.jsonl"}),
    "a directory as a data file": ("smoke", ("datasets", "pydoc"), {"source": "local", "path": "config"}),
    "NaN batch size": ("smoke", ("extraction", "batch_size"), float("nan")),
    "a model named like a path": ("pretrained", ("models", 0, "name"), "../escape"),
    "huge k": ("smoke", ("analysis", "law_k"), [10**30]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(REAL_CASES))
def test_fuzzed_cases_through_snakemake_end_in_one_line(case: str, tmp_path: Path) -> None:
    name, path, value = REAL_CASES[case]
    config = copy.deepcopy(SHIPPED[name])
    parent_of(config, path)[path[-1]] = value
    work = copy_workflow(tmp_path / "w")
    (work / "config/fuzzed.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    result = snakemake(work, "-n", "--cores", "1", "--configfile", "config/fuzzed.yaml", timeout=300)
    assert isinstance(result, subprocess.CompletedProcess)
    out = result.stdout + result.stderr
    assert "Traceback" not in out, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("config error in ")]
    assert result.returncode != 0 and errors and all("fuzzed.yaml" in e or "config.yaml" in e for e in errors), out[-3000:]
