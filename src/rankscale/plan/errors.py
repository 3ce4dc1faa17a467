"""Configuration errors as the workflow prints them, before any job and without a traceback: one line each,
`config error in <file>: <key>: <what>; <fix>` (docs/troubleshooting.md).

The file is the one the error names (a YAML line), else the last configuration file that sets the key's
top-level section, else the default configuration the user's files extend.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rankscale.config import ConfigError, load_yaml

PREFIX = "config error in"
TOP_KEY = re.compile(r"[^.\[:\s]+")


def shown(path: str | Path) -> str:
    """A path as the user would type it: relative to the working directory where it is under it."""
    text = str(path)
    file, _, line = text.partition(":") if not Path(text).exists() and ":" in text else (text, "", "")
    try:
        file = str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        pass
    return f"{file}:{line}" if line else file


def _sections(path: Path) -> Mapping[str, Any]:
    try:
        data = load_yaml(path)
    except (OSError, ConfigError):
        return {}
    return data if isinstance(data, Mapping) else {}


def file_of(line: str, user_files: Sequence[Path], default: Path | None) -> str:
    """The configuration file an error line's key comes from."""
    match = TOP_KEY.match(line)
    top = match.group(0) if match and not line.startswith("(top level)") else None
    if top is not None:
        for path in reversed(user_files):
            if top in _sections(path):
                return shown(path)
        if default is not None and top in _sections(default):
            return shown(default)
    if user_files:
        return shown(user_files[-1])
    return shown(default) if default is not None else "the configuration"


def error_lines(exc: ValueError, user_files: Sequence[str | Path], default: str | Path | None) -> list[str]:
    """Every line of a configuration error, each `config error in <file>: <message>`."""
    files = [Path(f) for f in user_files]
    fallback = Path(default) if default is not None else None
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [str(exc)]
    origin = exc.origin if isinstance(exc, ConfigError) else None  # the file and line a ConfigError names
    if origin:
        return [f"{PREFIX} {shown(origin)}: {line}" for line in lines]
    return [f"{PREFIX} {file_of(line, files, fallback)}: {line}" for line in lines]


def inherited_note(user_files: Sequence[str | Path], default: str | Path) -> str | None:
    """One line where the user's files set no `datasets:` and so extend the default configuration: what they
    inherit from it (a note, not an error: overriding a few settings of the default run is legitimate)."""
    if not user_files or any("datasets" in _sections(Path(f)) for f in user_files):
        return None
    given = {key for f in user_files for key in _sections(Path(f))}
    base = _sections(Path(default))
    parts = []
    if isinstance(base.get("datasets"), Mapping):
        parts.append(f"datasets {sorted(base['datasets'])}")
    ladder = base.get("ladder")
    if "ladder" not in given and isinstance(ladder, Mapping) and ladder.get("sizes"):
        parts.append(f"a ladder of {len(ladder['sizes'])} sizes trained here")
    models = base.get("models")
    if "models" not in given and models:
        parts.append(f"models {[m.get('name') for m in models if isinstance(m, Mapping)]}")
    names = ", ".join(shown(f) for f in user_files)
    inherited = "; ".join(parts) or "its settings"
    one = len(user_files) == 1
    return (
        f"note: {names} {'sets' if one else 'set'} no `datasets:`, so {'it extends' if one else 'they extend'} "
        f"{shown(default)} and {'inherits' if one else 'inherit'} its {inherited}; add `datasets:` to make "
        f"{'it' if one else 'them'} a complete configuration of {'its' if one else 'their'} own"
    )
