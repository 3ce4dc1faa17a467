"""Where a clone's DVC remote is, and what it holds.

Two clones share rank arrays only if their remote resolves to the same place. DVC resolves a relative
path in `.dvc/config` against each clone's own `.dvc/`, and `~` against each user's home, so a remote
is recorded as an absolute path (or a URL) once, by `share.py remote`, and committed: every clone made
from that commit reaches the same directory. `push` and `pull` print where they went, and a failed pull
says whether that place is missing, empty or holds another study's data, before DVC's own words.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rankscale.dvc_stages import ShareError

REMOTE = "shared"  # the name `share.py remote` gives the default remote
SET_REMOTE = "python workflow/share.py remote DIR_OR_URL"
# DVC's config files, by the name a message gives them, in order of precedence (a later one overrides)
LEVELS = {"system": "DVC's system config", "global": "your DVC global config", "repo": ".dvc/config",
          "local": ".dvc/config.local, this clone only"}  # fmt: skip
NO_REMOTE = (
    "no DVC remote is set for this clone: run `" + SET_REMOTE + "` with a directory every clone can reach "
    "(e.g. /project/shared/rankscale-dvc) or a URL (ssh://host/path, s3://bucket/path), then commit .dvc/config; "
    "docs/sharing.md#remotes"
)


def is_url(target: str) -> bool:
    """A URL with a scheme (ssh://, s3://, ...), which DVC takes as written."""
    return re.match(r"\w+://", target) is not None


def absolute(target: str, root: Path) -> str:
    """The remote as it must be recorded: a URL as given; a path made absolute (`~` expanded, relative to `root`),
    because DVC would resolve a relative path against each clone's `.dvc/`, i.e. somewhere else in every clone."""
    if is_url(target):
        return target
    return os.path.normpath(root / Path(target).expanduser())


@dataclass(frozen=True)
class Location:
    """The remote a command uses: its name, where it resolves to, and which config file says so."""

    name: str
    url: str
    origin: str
    written: str  # as its config file has it

    @property
    def per_clone(self) -> bool:
        """Written relative (to `.dvc/` or a home directory): another clone or user resolves it elsewhere."""
        return not is_url(self.written) and not os.path.isabs(self.written)

    def line(self) -> str:
        """One line naming where data goes to or comes from."""
        text = f"remote '{self.name}': {self.url} (set in {self.origin})"
        if self.per_clone:
            text += (
                f"; written as '{self.written}', which every clone resolves to a place of its own: record one "
                f"place with `{SET_REMOTE}`"
            )
        return text


def _open(root: Path) -> Any:  # -> dvc.repo.Repo
    from dvc.exceptions import NotDvcRepoError
    from dvc.repo import Repo

    try:
        return Repo(str(root))
    except NotDvcRepoError as exc:
        raise ShareError(f"{root} is not a DVC repository (no .dvc/): run the command in a clone of rankscale") from exc


def locate(root: Path, name: str | None = None) -> Location:
    """The remote `dvc push`/`dvc pull` use in `root` (`name`, else the default); refuses when none is set."""
    with _open(root) as repo:
        config = repo.config
        name = name or config["core"].get("remote")
        if not name:
            raise ShareError(NO_REMOTE)
        if name not in config["remote"]:
            known = ", ".join(f"'{n}'" for n in config["remote"]) or "none"
            raise ShareError(f"no DVC remote named '{name}' in this clone (remotes: {known}); {NO_REMOTE}")
        origin, written = "", ""
        for level, label in LEVELS.items():  # the last file that sets the URL is the one DVC uses
            path = config.files.get(level)
            if path and os.path.exists(path):
                url = (config.load_file(path).get("remote", {}).get(name) or {}).get("url")
                if url:
                    origin, written = label, str(url)
        return Location(name, str(config["remote"][name]["url"]), origin, written)


def record(root: Path, target: str, local: bool) -> Location:
    """Make `target` the clone's default remote: in .dvc/config (to commit: every clone then uses it) or, with
    `local`, in .dvc/config.local (this clone only). A local directory is created if its parent exists."""
    url = absolute(target, root)
    if not is_url(url):
        parent = Path(url).parent
        if not parent.is_dir():
            raise ShareError(f"remote {url}: its parent directory {parent} does not exist (a typo?); create it first")
        Path(url).mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "dvc", "remote", "add", "--force", "--default", *(["--local"] if local else []),
           REMOTE, url]  # fmt: skip
    result = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise ShareError(f"`dvc remote add` failed: {dvc_error(result.stderr)}")
    where = locate(root)
    if where.url != url:
        raise ShareError(f"recorded {url} in .dvc/config, but {where.origin} overrides it with {where.url}: "
                         f"`dvc remote remove --local {where.name}` or pass --local")  # fmt: skip
    return where


def dvc_error(stderr: str) -> str:
    """DVC's own error line (its first `ERROR:`), or its last line: what DVC said, without the wall."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines[-1:] or ["(no output)"])[0][:500].rstrip(":")


def lock_objects(root: Path, targets: Sequence[str]) -> dict[str, str]:
    """The objects (hash: hash name) dvc.lock records for these outputs: what a pull of them needs first."""
    lock = yaml.safe_load((root / "dvc.lock").read_text()) or {}
    wanted = set(targets)
    return {
        str(out["md5"]): str(out.get("hash", "md5-dos2unix"))  # no `hash` field: DVC 2's (legacy) layout
        for entry in (lock.get("stages") or {}).values()
        for out in entry.get("outs") or []
        if out.get("path") in wanted and out.get("md5")
    }


@dataclass(frozen=True)
class Contents:
    """What a remote holds of the objects a pull needs: `kind` is missing, unreadable, empty, other, partial or
    complete (then a failure is not for want of data); `text` says so, naming the remote's location."""

    kind: str
    text: str


def held(remote: Any, needed: Mapping[str, str]) -> tuple[int, int]:
    """(objects the remote holds, objects needed): the outputs' own objects, and the files of each directory whose
    listing the remote holds (a push cut short leaves a listing without all its files)."""
    have = total = 0
    for oid, name in needed.items():
        odb = remote.legacy_odb if name == "md5-dos2unix" else remote.odb
        total += 1
        if not odb.exists(oid):
            continue
        have += 1
        if oid.endswith(".dir"):
            with remote.fs.open(odb.oid_to_path(oid), mode="rb") as listing:
                files = [str(entry["md5"]) for entry in json.load(listing)]
            total += len(files)
            have += sum(odb.exists(md5) for md5 in files)
    return have, total


def contents(root: Path, where: Location, needed: Mapping[str, str]) -> Contents:
    """Look at the remote itself (through DVC's filesystem for its protocol): is it there, and what does it hold?"""
    at = f"remote '{where.name}' at {where.url}"
    with _open(root) as repo:
        remote = repo.cloud.get_remote(where.name)
        try:
            if not remote.fs.exists(remote.path):
                return Contents("missing", f"{at} does not exist")
            if not remote.fs.ls(remote.path, detail=False):
                return Contents("empty", f"{at} is empty")
            have, total = held(remote, needed)
        except Exception as exc:  # an unreachable host, a refused login: say so, whatever the protocol
            return Contents("unreadable", f"{at} cannot be read ({type(exc).__name__}: {exc})")
    objects = "objects that make up this configuration's outputs in dvc.lock"
    if have == 0:
        return Contents("other", f"{at} holds other data: none of the {total} {objects}")
    if have < total:
        return Contents("partial", f"{at} holds only {have} of the {total} {objects}: the rest were never pushed")
    return Contents("complete", f"{at} holds all {total} {objects}")


def pull_failure(root: Path, where: Location, targets: Sequence[str], stderr: str, push_command: str) -> str:
    """Why `dvc pull` failed, and the fix: point the clone at the place the arrays were pushed to, or push them."""
    found = contents(root, where, lock_objects(root, targets))
    if found.kind in ("missing", "empty", "other"):
        fix = (
            f"Point this clone at the directory the arrays were pushed to (`share.py push` prints it): `{SET_REMOTE}` "
            f"(add --local for this clone only); or, if this is the place, run `{push_command}` in the clone that "
            "tracked them"
        )
    elif found.kind == "partial":
        fix = f"Run `{push_command}` in the clone that tracked them (or point this clone elsewhere: `{SET_REMOTE}`)"
    else:
        fix = "DVC says why"
    return f"`dvc pull` failed: {found.text}. {fix}.\nDVC: {dvc_error(stderr)}"


def push_failure(root: Path, where: Location, stderr: str) -> str:
    """Why `dvc push` failed: the remote's state where it cannot be reached, and DVC's error."""
    found = contents(root, where, {})
    state = f"{found.text}. " if found.kind in ("missing", "unreadable") else ""
    return f"`dvc push` to remote '{where.name}' at {where.url} failed: {state}DVC: {dvc_error(stderr)}"
