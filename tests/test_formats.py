"""The expensive outputs' format versions are decisions: a change to the code behind training or extraction
fails here until its format version is bumped (it changes what the outputs hold) or the new digest is pinned
(it does not). Formatting, comments and docstrings do not count (rankscale.fingerprint)."""

from __future__ import annotations

import pytest

from rankscale import formats
from rankscale.fingerprint import SCRIPTS, SRC, FormatVersion, code_digest, module_closure

FORMATS = {name: value for name, value in vars(formats).items() if isinstance(value, FormatVersion)}


def test_both_expensive_outputs_have_a_format() -> None:
    assert set(FORMATS) == {"CORPUS_FORMAT", "RANK_FORMAT", "TRAIN_FORMAT"}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_code_behind_each_format_is_pinned(name: str) -> None:
    fmt = FORMATS[name]
    current = fmt.current()
    assert current == fmt.code, (
        f"the code behind {name} (workflow/scripts/{{{','.join(fmt.scripts)}}}.py and the package modules they "
        f"import) changed: digest {current}, pinned {fmt.code}. If the change alters what these outputs hold, bump "
        f"{name}.version in src/rankscale/formats.py; either way, pin code={current!r} there."
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
    closure = module_closure(*(SCRIPTS / f"{name}.py" for name in formats.RANK_FORMAT.scripts))
    names = {path.relative_to(SRC / "rankscale").as_posix() for path in closure}
    assert "extract.py" in names and "head.py" in names
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
