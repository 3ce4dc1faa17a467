"""dvc.yaml holds the stages of every configuration tracked in a clone: `track` replaces its own, never another's.

A stage belongs to the configuration its `cmd` names (`--configfile ...`; none: the default). An output that
another configuration's stage already tracks (a corpus, a tokenizer's token files, a model both list) stays
that stage's: two stages may not hold one output in DVC, and keys by meaning make the two files the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml


class ShareError(RuntimeError):
    """Tracking or restoring cannot go on; the message says which file and what to do."""


@dataclass(frozen=True)
class Stage:
    """One dvc.yaml stage: outputs DVC versions, the upstream outputs they were made from."""

    name: str
    cmd: str
    outs: tuple[str, ...]
    deps: tuple[str, ...] = ()

    def as_dvc(self) -> dict[str, Any]:
        """The stage as dvc.yaml holds it; `persist` keeps `dvc repro` from deleting outputs first."""
        entry: dict[str, Any] = {"cmd": self.cmd}
        if self.deps:
            entry["deps"] = list(self.deps)
        entry["outs"] = [{out: {"persist": True}} for out in self.outs]
        return entry


@dataclass(frozen=True)
class Merged:
    """dvc.yaml's stages after `track`: every stage as written, this configuration's stage names, and the other
    configurations' stages holding outputs this one shares (recorded again, so their directories hold both)."""

    stages: dict[str, dict[str, Any]]
    ours: list[str]
    shared: list[str]


def stage_configs(cmd: str) -> list[str]:
    """The config files a stage's Snakemake call names (`--configfile` comes last: rankscale.share.snakemake_cmd)."""
    _, found, rest = cmd.partition(" --configfile ")
    return rest.split() if found else []


def outs_of(entry: Mapping[str, Any]) -> list[str]:
    return [next(iter(out)) if isinstance(out, Mapping) else str(out) for out in entry.get("outs", [])]


def read_stages(path: Path) -> dict[str, dict[str, Any]]:
    """The stages of an existing dvc.yaml (none if there is none)."""
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    return dict(data.get("stages") or {})


def _inside(a: str, b: str) -> bool:
    return Path(a) != Path(b) and (Path(b) in Path(a).parents or Path(a) in Path(b).parents)


def merge(existing: Mapping[str, dict[str, Any]], ours: Sequence[Stage], config_files: Sequence[str], run: str,
          root: Path) -> Merged:  # fmt: skip
    """This configuration's stages in place of its earlier ones, every other configuration's kept as written.

    Our names are prefixed with the run's (`<run>-corpus`) where another configuration has the name; an output
    another stage holds is left to it, and that stage is recorded again (so a directory holds both configurations'
    files), which needs all its outputs here; an output inside another's, or holding one, is refused."""
    kept = {name: entry for name, entry in existing.items() if stage_configs(str(entry.get("cmd", ""))) != list(config_files)}
    owner = {out: name for name, entry in kept.items() for out in outs_of(entry)}
    stages: dict[str, dict[str, Any]] = dict(kept)
    names, shared = [], set()
    for stage in ours:
        outs = []
        for out in stage.outs:
            if out in owner:
                entry = kept[owner[out]]
                if not all((root / o).exists() for o in outs_of(entry)):  # DVC records a stage whole, or not at all
                    configs = " ".join(stage_configs(str(entry["cmd"]))) or "none: the default"
                    raise ShareError(
                        f"{out} is an output of stage {owner[out]!r} of another configuration (--configfile {configs}), "
                        f"whose other outputs are not here, so it cannot be recorded with this one's: make them with "
                        f"that stage's command (`{entry['cmd']}`), or remove that configuration's stages from dvc.yaml "
                        "if it is not shared"
                    )
                shared.add(owner[out])
                continue
            clash = next((o for o in owner if _inside(o, out)), None)
            if clash:
                raise ShareError(f"{out} overlaps {clash}, which stage {owner[clash]!r} of another configuration tracks")
            outs.append(out)
        if not outs:
            continue
        name = stage.name if stage.name not in kept else re.sub(r"[^A-Za-z0-9_-]", "_", f"{run}-{stage.name}")
        stages[name] = replace(stage, name=name, outs=tuple(outs)).as_dvc()
        names.append(name)
    return Merged(stages=stages, ours=names, shared=sorted(shared))
