"""Where a clone's DVC remote is, and what it holds (rankscale.remote): real git and DVC, no Snakemake run.

The remote is recorded once as one absolute place, so clones anywhere reach it; push and pull refuse, with the
command to run, until one is set; a remote's contents are read through DVC to say why a pull found nothing.
tests/test_sharing.py pushes and pulls real rank arrays between clones with different parents.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rankscale.remote import Location, contents, lock_objects
from tests.conftest import REPO

PROJECT_FILES = (".gitignore", ".dvcignore", ".dvc/config", ".dvc/.gitignore")
ENV = {**os.environ, "DVC_NO_ANALYTICS": "1"}
OLD_CONFIG = """[core]
    analytics = false
    check_update = false
    remote = shared
['remote "shared"']
    url = ../../rankscale-dvc-remote
"""
GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@rankscale.invalid", "-c", "commit.gpgsign=false")


def sh(cwd: Path, *cmd: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    assert not check or result.returncode == 0, f"{cmd}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def share(cwd: Path, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """workflow/share.py as a user runs it, in the clone `cwd`."""
    return sh(cwd, sys.executable, REPO / "workflow/share.py", *args, check=check)


def project(path: Path) -> Path:
    """A git repository with rankscale's DVC project files, committed, as a fresh clone has them."""
    path.mkdir(parents=True)
    for name in PROJECT_FILES:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, path / name)
    sh(path, "git", "init", "-q", "-b", "main")
    sh(path, *GIT, "add", "-A")
    sh(path, *GIT, "commit", "-q", "-m", "project")
    return path


def test_a_recorded_remote_is_one_place_for_clones_with_other_parents(tmp_path):
    """Recorded relative to where the command runs, written absolute: a clone elsewhere reaches the same place
    (the remote that shipped before was `../../rankscale-dvc-remote`: the parent of each clone)."""
    researcher = project(tmp_path / "a/researcher")
    recorded = share(researcher, "remote", "../../remote").stdout
    remote = tmp_path / "remote"
    assert f"remote 'shared': {remote} (set in .dvc/config)" in recorded and "now commit .dvc/config" in recorded
    assert f"url = {remote}" in (researcher / ".dvc/config").read_text() and remote.is_dir()
    sh(researcher, *GIT, "commit", "-q", "-am", "remote")
    colleague = tmp_path / "b/c/colleague"
    colleague.parent.mkdir(parents=True)
    sh(tmp_path, "git", "clone", "-q", researcher, colleague)
    assert share(colleague, "remote").stdout.strip() == f"remote 'shared': {remote} (set in .dvc/config)"


def test_a_local_remote_overrides_for_one_clone_only(tmp_path):
    repo = project(tmp_path / "repo")
    share(repo, "remote", tmp_path / "team")
    shown = share(repo, "remote", "--local", tmp_path / "mine").stdout
    assert f"remote 'shared': {tmp_path / 'mine'} (set in .dvc/config.local, this clone only)" in shown
    assert "now commit" not in shown
    assert str(tmp_path / "mine") not in (repo / ".dvc/config").read_text()


def test_a_relative_remote_is_named_as_one_each_clone_resolves_elsewhere(tmp_path):
    """The .dvc/config of earlier versions (DVC resolves its path against each clone's .dvc/): flagged where used."""
    repo = project(tmp_path / "repo")
    (repo / ".dvc/config").write_text(OLD_CONFIG)
    shown = share(repo, "remote").stdout
    assert f"remote 'shared': {tmp_path / 'rankscale-dvc-remote'} (set in .dvc/config)" in shown
    assert "written as '../../rankscale-dvc-remote', which every clone resolves to a place of its own" in shown


@pytest.mark.parametrize("verb", ["push", "pull"])
def test_push_and_pull_refuse_until_a_remote_is_set(tmp_path, verb):
    repo = project(tmp_path / "repo")
    (repo / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    result = share(repo, verb, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("error: no DVC remote is set for this clone: run `python workflow/share.py remote")
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
    named = share(repo, verb, "-r", "elsewhere", check=False)
    assert named.returncode == 1 and "no DVC remote named 'elsewhere' in this clone (remotes: none)" in named.stderr


def test_a_remote_whose_parent_is_missing_is_refused(tmp_path):
    repo = project(tmp_path / "repo")
    result = share(repo, "remote", tmp_path / "projcet/rankscale", check=False)
    assert result.returncode == 1
    assert f"its parent directory {tmp_path / 'projcet'} does not exist" in result.stderr
    assert "url" not in (repo / ".dvc/config").read_text()


def test_what_a_remote_holds_is_read_through_dvc(tmp_path):
    """missing, empty, another study's objects, part of ours (a file inside a directory never arrived), all of
    ours: each told apart on real DVC remotes, a directory's files counted from its listing on the remote."""
    repo = project(tmp_path / "repo")
    dvc = (sys.executable, "-m", "dvc")
    (repo / "d").mkdir()
    for name in ("a.txt", "c.txt", "d/x.txt", "d/y.txt"):
        (repo / name).write_text(f"{name}\n")
    sh(repo, *dvc, "stage", "add", "-q", "-n", "ours", "-o", "a.txt", "-o", "d", "true")
    sh(repo, *dvc, "stage", "add", "-q", "-n", "theirs", "-o", "c.txt", "true")
    sh(repo, *dvc, "commit", "-q", "-f")
    places = {kind: tmp_path / "remotes" / kind for kind in ("missing", "empty", "other", "partial", "complete")}
    for kind, path in places.items():
        sh(repo, *dvc, "remote", "add", kind, path)
    places["empty"].mkdir(parents=True)
    sh(repo, *dvc, "push", "-q", "-r", "other", "c.txt")
    for kind in ("partial", "complete"):
        sh(repo, *dvc, "push", "-q", "-r", kind, "a.txt", "d")
    y = hashlib.md5(b"d/y.txt\n").hexdigest()
    (places["partial"] / "files/md5" / y[:2] / y[2:]).unlink()  # a push cut short
    needed = lock_objects(repo, ["a.txt", "d"])
    assert len(needed) == 2 and set(needed.values()) == {"md5"}
    found = {kind: contents(repo, Location(kind, str(path), ".dvc/config", str(path)), needed)
             for kind, path in places.items()}  # fmt: skip
    assert {kind: c.kind for kind, c in found.items()} == {kind: kind for kind in places}
    assert found["missing"].text == f"remote 'missing' at {places['missing']} does not exist"
    assert found["empty"].text == f"remote 'empty' at {places['empty']} is empty"
    objects = "objects that make up this configuration's outputs in dvc.lock"
    assert found["other"].text.endswith(f"holds other data: none of the 2 {objects}")
    assert found["partial"].text.endswith(f"holds only 3 of the 4 {objects}: the rest were never pushed")
    assert found["complete"].text.endswith(f"holds all 4 {objects}")
