"""Configuration errors as the workflow prints them, before any job and without a traceback: one line each,
`config error in <file>: <key>: <what>; <fix>` (docs/troubleshooting.md).

The file is the one the error names (a YAML line), else `--config` where the command line's overrides set the key,
else the last configuration file that sets the key's top-level section, else the default configuration the user's
files extend.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rankscale.config import ConfigError, load_yaml
from rankscale.plan.overrides import SOURCE as OVERRIDES

PREFIX = "config error in"
TOP_KEY = re.compile(r"[^.\[:\s]+")
KEY_PATH = re.compile(r"([A-Za-z0-9_-][\w.-]*(?:\[\d+\][\w.-]*)*): ")  # `datasets.x.text_fields[0]: ...`
UNEXPECTED = re.compile(r"\('([^']+)'(?:, '[^']+')* (?:was|were) unexpected\)")  # an unknown key's name


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


def key_path(line: str) -> list[str | int]:
    """The key path an error line concerns, down to the unknown key it names: `analysis: unknown key ('law_from'
    was unexpected)` -> ['analysis', 'law_from']; `models[0].path: ...` -> ['models', 0, 'path']."""
    match = KEY_PATH.match(line)
    if not match and not line.startswith("(top level): "):
        return []
    found = re.findall(r"([^.\[\]]+)|\[(\d+)\]", match.group(1)) if match else []
    parts: list[str | int] = [int(index) if index else name for name, index in found]
    unexpected = UNEXPECTED.search(line)
    return [*parts, unexpected.group(1)] if unexpected else parts


def holds(data: Any, path: Sequence[str | int]) -> bool:
    """Whether configuration `data` sets the value at `path`: a mapping holds its keys (Snakemake merges mappings),
    anything else holds everything below it (a list or a value replaces what it overrides). A name holding dots (a
    dataset `my.data`) is matched across the parts it was split into."""
    if not path:
        return False
    node, rest = data, list(path)
    while rest:
        if not isinstance(node, Mapping):
            return True
        for n in range(1, len(rest) + 1):
            name = ".".join(str(p) for p in rest[:n]) if n > 1 else rest[0]
            if name in node:
                node, rest = node[name], rest[n:]
                break
        else:
            return False
    return True


def error_lines(
    exc: ValueError, user_files: Sequence[str | Path], default: str | Path | None,
    overrides: Mapping[str, Any] | None = None,
) -> list[str]:  # fmt: skip
    """Every line of a configuration error, each `config error in <file>: <message>`; `--config` for a key the
    command line's `overrides` set (which win over every file)."""
    files = [Path(f) for f in user_files]
    fallback = Path(default) if default is not None else None
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [str(exc)]
    origin = exc.origin if isinstance(exc, ConfigError) else None  # the file and line a ConfigError names
    if origin:
        return [f"{PREFIX} {origin if origin == OVERRIDES else shown(origin)}: {line}" for line in lines]
    return [f"{PREFIX} {source_of(line, files, fallback, overrides or {})}: {line}" for line in lines]


def source_of(line: str, user_files: Sequence[Path], default: Path | None, overrides: Mapping[str, Any]) -> str:
    """`--config` where the overrides set the line's key, or set its section where no file does; else its file."""
    path = key_path(line)
    if overrides and path:
        in_files = [p for p in [*user_files, *([default] if default else [])] if holds(_sections(p), path[:1])]
        if holds(overrides, path) or (holds(overrides, path[:1]) and not in_files):
            return OVERRIDES
    return file_of(line, user_files, default)


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
