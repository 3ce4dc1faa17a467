"""The expensive outputs' format versions are decisions: a change to the code behind training or extraction
fails here until its format version is bumped (it changes what the outputs hold) or the new digest is pinned
(it does not). Formatting, comments and docstrings do not count (rankscale.fingerprint)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankscale import formats
from rankscale.fingerprint import SCRIPTS, SRC, FormatVersion, code_digest, module_closure

FORMATS = {name: value for name, value in vars(formats).items() if isinstance(value, FormatVersion)}
FORMATS |= {f"SOURCE_FORMATS[{key!r}]": value for key, value in formats.SOURCE_FORMATS.items()}
EXPENSIVE = {"CORPUS_FORMAT", "RANK_FORMAT", "TRAIN_FORMAT"}


def test_both_expensive_outputs_have_a_format() -> None:
    assert EXPENSIVE <= set(FORMATS)


def test_every_source_module_is_pinned_on_its_own() -> None:
    """The corpus and training formats leave the sources out: each module of rankscale/sources but their list
    (__init__) and the interface (base) has a pin, which covers the interface too; every registered source's."""
    from rankscale.sources import SOURCES

    modules = {p.relative_to(SRC / "rankscale").as_posix() for p in (SRC / "rankscale/sources").glob("*.py")}
    pinned = set(formats.SOURCE_FORMATS)
    missing = sorted(modules - {"sources/__init__.py", "sources/base.py"} - pinned)
    hint = {m: formats.FormatVersion.source(Path(m).stem, 1, "").current() for m in missing}
    assert not missing, f"pin each source's code in src/rankscale/formats.py: SOURCE_FORMATS.register(...) {hint}"
    assert pinned <= modules
    assert {"sources/" + s.documents.__module__.rsplit(".", 1)[1] + ".py" for s in SOURCES.values()} <= pinned
    for name in ("CORPUS_FORMAT", "TRAIN_FORMAT"):
        covered = {p.relative_to(SRC / "rankscale").as_posix() for p in FORMATS[name].files() if p.is_relative_to(SRC)}
        assert "documents.py" in covered and not {m for m in covered if m.startswith("sources/")}, (name, covered)
    for pin in formats.SOURCE_FORMATS.values():
        files = {p.relative_to(SRC / "rankscale").as_posix() for p in pin.files()}
        assert files == {pin.modules[0], "sources/base.py"}, files


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_code_behind_each_format_is_pinned(name: str) -> None:
    fmt = FORMATS[name]
    current = fmt.current()
    assert current == fmt.code, (
        f"the code behind {name} ({', '.join(str(p) for p in fmt.files())}) changed: digest {current}, pinned "
        f"{fmt.code}. If the change alters what these outputs hold, bump {name}.version in src/rankscale/formats.py; "
        f"either way, pin code={current!r} there."
    )


def test_the_digest_ignores_formatting_and_sees_code(tmp_path) -> None:
    script = tmp_path / "job.py"
    script.write_text("from rankscale import statistics\n\ndef f(x):\n    '''Doc.'''\n    return x + 1\n")
    digest = code_digest(script)
    script.write_text(
        "# comment\nfrom rankscale import statistics\ndef f( x ):\n    '''Other doc.'''\n    return x+1\n"
    )
    assert code_digest(script) == digest
    script.write_text("from rankscale import statistics\n\ndef f(x):\n    return x + 2\n")
    assert code_digest(script) != digest
    assert any(path.name == "statistics.py" for path in module_closure(script))


def test_the_rank_format_covers_only_what_extraction_runs() -> None:
    """A change to a table, figure, fit or report module never asks for RANK_FORMAT's pin to move."""
    files = formats.RANK_FORMAT.files()
    names = {path.relative_to(SRC / "rankscale").as_posix() for path in files if path.is_relative_to(SRC)}
    assert {SCRIPTS / f"{name}.py" for name in formats.RANK_FORMAT.scripts} <= set(files)
    assert "extract.py" in names and "head.py" in names
    # a constant or an error type is not reason enough to cover a module: the token kinds, the configuration and the
    # code digests are not what extraction runs (the content digests, which check a local model's weights, are)
    assert not {"token_kinds.py", "config.py", "fingerprint.py", "formats.py"} & names, sorted(names)
    assert "content_digest.py" in names
    analysis = {n for n in names if n.split("/")[0] in ("tables", "plots", "report", "laws", "summary", "trajectories")}
    assert not analysis, f"the rank arrays' format covers analysis code: {sorted(analysis)}"


def test_type_only_imports_are_not_code(tmp_path) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rankscale.tables import base\n"
        "import typing\nif typing.TYPE_CHECKING:\n    from rankscale import plots\nfrom rankscale import canon\n"
    )
    found = {path.name for path in module_closure(script)}
    assert "canon.py" in found and "base.py" not in found
    assert "plots" not in {p.parent.name for p in module_closure(script)}
