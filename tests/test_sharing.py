"""Adding a model, and sharing rank arrays through DVC: real Snakemake, DVC, git and sshd runs.

One scenario in order, on the smoke configuration: a researcher's repository (tmp/a/researcher) records
a remote directory both clones reach (`share.py remote`), tracks a finished run and pushes it; adds a
model; a colleague whose clone has another parent (tmp/b/c/colleague) pulls, plans no training or
extraction and makes the same tables byte for byte; a clone pointed at an empty or missing remote is
told so; the same round trip over SSH to a real sshd.
"""

from __future__ import annotations

import copy
import getpass
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from rankscale.plan import ladder_dir
from tests.conftest import (
    REPO,
    copy_run,
    file_states,
    files,
    job_key,
    output_jobs,
    planned_jobs,
    snakemake,
    stop_process,
    trajectory_jobs,
)

pytestmark = pytest.mark.slow

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
CONFIG = ("--configfile", "config/smoke.yaml")
DATASETS = list(SMOKE["datasets"])
MODELS = [s["name"] for s in SMOKE["ladder"]["sizes"]]
LADDER = ladder_dir(SMOKE)
LADDER_TOK = files(REPO, "config/smoke.yaml").tokenizers[MODELS[0]]  # `ladder-<key>`: the ladder's tokenizer
NEW = {"name": "smoke-d", "layers": 2, "d_model": 48, "heads": 4}
PROJECT_FILES = (".gitignore", ".dvcignore", ".dvc/config", ".dvc/.gitignore")
# Everything upstream of the tables that a rerun must leave alone.
UPSTREAM = ("results/ranks/**/*", "results/tokens/**/*", "results/corpus/*", "resources/ladder/**/*")
TABLES = ("metrics", "powerlaw_fits", "lognormal_fits", "emergence")
# what the reruns below make: the tables these tests read (a run before --configfile, which takes every word after it)
TABLE_TARGETS = tuple(f"results/smoke/tables/{name}.csv" for name in TABLES)
ENV = {**os.environ, "DVC_NO_ANALYTICS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def sh(cwd: Path, *cmd: str | Path, timeout: float = 300) -> str:
    """Run a command; fail the test with its output if it fails."""
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{cmd}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


def dvc(cwd: Path, *args: str | Path) -> str:
    return sh(cwd, sys.executable, "-m", "dvc", *args)


def share(cwd: Path, *args: str | Path) -> str:
    return sh(cwd, sys.executable, "workflow/share.py", *args)


def git(cwd: Path, *args: str | Path) -> str:
    return sh(cwd, "git", *args)


def extraction_or_training(jobs: Counter[str]) -> list[str]:
    return sorted(j for j in jobs if j.split("[")[0] in ("extract", "ladder_train"))


def analysis_jobs(models: list[str]) -> Counter[str]:
    """What a run with every rank array present must do: summaries, tables, figures, and the token kinds of the
    ladder's tokenizer (cheap, from the tokenizer the clone has: not shared)."""
    jobs = Counter(job_key("summarize", model=m, dataset=d) for m in models for d in DATASETS)
    return (
        jobs + output_jobs() + trajectory_jobs(["ladder"], DATASETS) + Counter([job_key("token_kinds", tok=LADDER_TOK)])
    )


def remote_objects(remote: Path) -> set[str]:
    """Object ids (md5, '.dir' for directory manifests) stored in a DVC 3 remote."""
    return {p.parent.name + p.name for p in (remote / "files/md5").glob("*/*")}


def stage_objects(repo: Path, stage: dict) -> set[str]:
    """Every object one dvc.lock stage's outputs consist of: manifests and their files."""
    objects = set()
    for out in stage["outs"]:
        objects.add(out["md5"])
        if out["md5"].endswith(".dir"):
            manifest = repo / ".dvc/cache/files/md5" / out["md5"][:2] / out["md5"][2:]
            objects.update(entry["md5"] for entry in json.loads(manifest.read_text()))
    return objects


def lock_stages(repo: Path) -> dict:
    return yaml.safe_load((repo / "dvc.lock").read_text())["stages"]


def backdate(root: Path, patterns: tuple[str, ...], seconds: float = 3600) -> None:
    """Make pulled outputs older than the checkout, as a `git checkout` after `dvc pull` does."""
    past = time.time() - seconds
    for pattern in patterns:
        for path in root.glob(pattern):
            os.utime(path, (past, past), follow_symlinks=False)


@pytest.fixture(scope="module")
def project(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The researcher: the finished smoke run as a git + DVC repository, its remote recorded, tracked and pushed."""
    base = tmp_path_factory.mktemp("share")
    repo = copy_run(smoke_run, base / "a/researcher")
    remote = base / "remote"  # neither clone's neighbour: reached only because it is recorded as one place
    for name in PROJECT_FILES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, repo / name)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "rankscale tests")
    git(repo, "config", "user.email", "tests@rankscale.invalid")
    git(repo, "config", "commit.gpgsign", "false")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "smoke workflow")
    before = file_states(repo, *UPSTREAM)
    share(repo, "remote", remote)
    share(repo, "track", *CONFIG)
    git(repo, "add", "dvc.yaml", "dvc.lock", ".dvc/config")
    git(repo, "commit", "-q", "-m", "track smoke run")
    pushed = share(repo, "push", *CONFIG)
    return SimpleNamespace(repo=repo, remote=remote, pushed=pushed, before=before, after=file_states(repo, *UPSTREAM))


@pytest.fixture(scope="module")
def grown(project: SimpleNamespace) -> SimpleNamespace:
    """The researcher appends one ladder size to the config, reruns, tracks and pushes."""
    repo = project.repo
    config = copy.deepcopy(SMOKE)
    config["ladder"]["sizes"].append(NEW)
    (repo / "config/smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    plan = planned_jobs(repo, *CONFIG)
    before, lock_before, remote_before = file_states(repo, *UPSTREAM), lock_stages(repo), remote_objects(project.remote)
    result = snakemake(repo, "--cores", "2", *TABLE_TARGETS, *CONFIG)  # the plan above checks every job
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    after = file_states(repo, *UPSTREAM)
    share(repo, "track", *CONFIG)
    share(repo, "push", *CONFIG)
    git(repo, "add", "config/smoke.yaml", "dvc.yaml", "dvc.lock")
    git(repo, "commit", "-q", "-m", "add smoke-d")
    return SimpleNamespace(
        plan=plan,
        before=before,
        after=after,
        lock_before=lock_before,
        lock_after=lock_stages(repo),
        pushed=remote_objects(project.remote) - remote_before,
        remote_before=remote_before,
    )


def test_tracking_leaves_the_workspace_alone(project):
    """`track` commits to DVC's cache without relinking: same bytes and mtimes, nothing to rerun."""
    assert project.after == project.before
    assert planned_jobs(project.repo, *CONFIG) == Counter()
    shared = {"corpus", "ladder", f"tokens-{LADDER_TOK}"}
    assert set(lock_stages(project.repo)) == shared | {f"model-{m}" for m in MODELS}
    assert not git(project.repo, "status", "--porcelain"), "track must not leave files for git"


def test_push_says_where_it_went(project):
    assert project.pushed.splitlines()[0] == f"remote 'shared': {project.remote} (set in .dvc/config)"
    assert remote_objects(project.remote) >= {s["outs"][0]["md5"] for s in lock_stages(project.repo).values()}


def test_adding_a_model_plans_only_that_model(grown):
    expected = Counter([job_key("ladder_train", model="smoke-d")])
    expected.update(job_key("extract", model="smoke-d", dataset=d) for d in DATASETS)
    expected.update(job_key("summarize", model="smoke-d", dataset=d) for d in DATASETS)
    expected.update(trajectory_jobs(["ladder"], DATASETS))  # its family's, and no other
    expected.update(output_jobs())
    assert grown.plan == expected


def test_adding_a_model_leaves_other_rank_arrays_untouched(grown, project):
    assert grown.before, "nothing was snapshotted"
    changed = sorted(path for path, state in grown.before.items() if grown.after.get(path) != state)
    assert changed == []
    new = [path for path in grown.after if path not in grown.before]
    grown_files = files(project.repo, "config/smoke.yaml")  # the config with smoke-d
    assert {grown_files.ranks("smoke-d", d, ext) for d in DATASETS for ext in ("npz", "json")} <= set(new)
    own = ("results/ranks/smoke-d/", f"{LADDER}/models/smoke-d/", f"{LADDER}/states/smoke-d/")
    assert [path for path in new if not path.startswith(own)] == []
    metrics = pd.read_csv(project.repo / "results/smoke/tables/metrics.csv")
    assert set(metrics["model"]) == {*MODELS, "smoke-d"}


def test_adding_a_model_adds_and_pushes_only_its_data(grown, project):
    added = set(grown.lock_after) - set(grown.lock_before)
    assert added == {"model-smoke-d"}
    assert {k: grown.lock_after[k] for k in grown.lock_before} == grown.lock_before
    own = stage_objects(project.repo, grown.lock_after["model-smoke-d"])
    assert grown.pushed == own - grown.remote_before
    ranks_dir = next(o for o in grown.lock_after["model-smoke-d"]["outs"] if o["path"] == "results/ranks/smoke-d")
    assert ranks_dir["md5"] in grown.pushed and ranks_dir["nfiles"] == 2 * len(DATASETS)


@pytest.fixture(scope="module")
def colleague(grown, project: SimpleNamespace) -> SimpleNamespace:
    """A fresh clone under another parent than the researcher's: `share.py pull` from the remote .dvc/config
    records, then the tables. Before them, a copy of the clone as a plain `dvc pull` and a later checkout leave
    it (no Snakemake metadata, code newer than data, token files written last) shows what `restore` is for."""
    clone = project.repo.parents[1] / "b/c/colleague"
    clone.parent.mkdir(parents=True)
    git(project.repo.parents[1], "clone", "-q", project.repo, clone)
    pulled = share(clone, "pull", *CONFIG)
    plan = planned_jobs(clone, *CONFIG)
    unrestored = copy_run(clone, project.repo.parents[1] / "b/unrestored")
    shutil.rmtree(unrestored / ".snakemake")
    backdate(unrestored, UPSTREAM)
    backdate(unrestored, ("results/tokens/**/*",), seconds=60)  # DVC happened to write the token files last
    without_restore = planned_jobs(unrestored, *CONFIG)
    share(unrestored, "restore", *CONFIG)
    restored = planned_jobs(unrestored, *CONFIG)
    result = snakemake(clone, "--cores", "2", *TABLE_TARGETS, *CONFIG)  # the plan above checks every job
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return SimpleNamespace(clone=clone, pulled=pulled, plan=plan, without_restore=without_restore, restored=restored)


def test_fresh_clone_elsewhere_pulls_from_the_recorded_remote(colleague, project):
    assert colleague.pulled.splitlines()[0] == f"remote 'shared': {project.remote} (set in .dvc/config)"
    assert f"{len(MODELS + ['smoke-d']) * len(DATASETS)} rank arrays verified" in colleague.pulled


def test_fresh_clone_without_restore_would_recompute(colleague):
    """The hazard restore exists for: DVC writes pulled files in no set order, and a token file newer
    than the arrays scored from it reruns every extraction."""
    planned = extraction_or_training(colleague.without_restore)
    assert {job_key("extract", model=m, dataset=d) for m in [*MODELS, "smoke-d"] for d in DATASETS} <= set(planned)


def test_fresh_clone_plans_no_training_or_extraction(colleague):
    assert colleague.plan == analysis_jobs([*MODELS, "smoke-d"])
    assert colleague.restored == colleague.plan  # `restore` after a plain `dvc pull`, files in the worst order


def test_fresh_clone_reproduces_tables_byte_for_byte(colleague, project):
    for name in TABLES:
        ours = (colleague.clone / f"results/smoke/tables/{name}.csv").read_bytes()
        assert ours == (project.repo / f"results/smoke/tables/{name}.csv").read_bytes(), name


def test_restore_recomputes_arrays_the_config_does_not_describe(colleague, tmp_path):
    """A pulled array whose sidecar disagrees with the config is not blessed by restore."""
    clone = copy_run(colleague.clone, tmp_path / "clone")
    config = copy.deepcopy(SMOKE)
    config["ladder"]["sizes"].append(NEW)
    config["extraction"]["ties"] = "gt"  # every array was computed with `ge`
    (clone / "config/other.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    # the `ge` arrays, found where the `gt` configuration's arrays go (keyed paths differ, so put them there)
    pulled, other = files(clone, "config/smoke.yaml"), files(clone, "config/other.yaml")
    for m in [*MODELS, "smoke-d"]:
        for d in DATASETS:
            assert other.ranks(m, d) != pulled.ranks(m, d)
            for ext in ("npz", "json"):
                shutil.copy2(clone / pulled.ranks(m, d, ext), clone / other.ranks(m, d, ext))
    result = subprocess.run(
        [sys.executable, "workflow/share.py", "restore", "--configfile", "config/other.yaml"],
        cwd=clone, env=ENV, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = result.stdout
    assert "0 rank arrays verified" in out and "ties: array has 'ge', config says 'gt'" in out
    assert result.returncode == 1 and "no pulled rank array matches a model of this configuration" in result.stderr
    plan = planned_jobs(clone, "--configfile", "config/other.yaml")
    expected = [job_key("extract", model=m, dataset=d) for m in [*MODELS, "smoke-d"] for d in DATASETS]
    assert extraction_or_training(plan) == sorted(expected)


@pytest.mark.parametrize(("kind", "said"), [("empty", "is empty"), ("missing", "does not exist")])
def test_pull_from_a_remote_without_the_arrays_says_where_and_what_to_run(project, tmp_path, kind, said):
    """A clone pointed at the wrong place: one line names it, one says what it holds and the command that fixes
    it, one is DVC's own; no traceback, nothing pulled."""
    clone = tmp_path / "elsewhere/clone"
    clone.parent.mkdir()
    git(clone.parent, "clone", "-q", project.repo, clone)
    place = tmp_path / "remote"
    if kind == "empty":
        place.mkdir()
    dvc(clone, "remote", "modify", "--local", "shared", "url", place)
    result = subprocess.run(
        [sys.executable, "workflow/share.py", "pull", *CONFIG], cwd=clone, env=ENV, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == f"remote 'shared': {place} (set in .dvc/config.local, this clone only)\n"
    error, dvc_said = result.stderr.splitlines()
    assert error.startswith(f"error: `dvc pull` failed: remote 'shared' at {place} {said}. Point this clone at ")
    assert "`python workflow/share.py remote DIR_OR_URL`" in error
    assert "`python workflow/share.py push --configfile config/smoke.yaml`" in error
    assert dvc_said.startswith("DVC: ERROR: failed to pull data from the cloud")
    assert not list(clone.glob("results/ranks/**/*.npz")) and place.exists() == (kind == "empty")


# --- the same round trip over SSH, to a real sshd on the loopback interface ---


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_sshd() -> str:
    """Debian's sshd; installed with apt when missing and allowed (.ci/run installs it up front)."""
    sshd = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
    if sshd is None and os.geteuid() == 0 and shutil.which("apt-get"):
        apt = {**ENV, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "openssh-server"], env=apt, capture_output=True, timeout=300)
        sshd = "/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None
    if sshd is None:
        if os.environ.get("RANKSCALE_REQUIRE_SSH"):
            pytest.fail("sshd not found: apt-get install openssh-server")
        pytest.skip("sshd not found (apt-get install openssh-server)")
    return sshd


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """sshd on 127.0.0.1 with throwaway host and client keys; stopped at teardown."""
    binary = find_sshd()
    home = tmp_path_factory.mktemp("sshd")
    for key in ("host_key", "client_key"):
        sh(home, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", home / key)
    (home / "authorized_keys").write_text((home / "client_key.pub").read_text())
    port = free_port()
    (home / "sshd_config").write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {home / 'host_key'}",
                f"PidFile {home / 'sshd.pid'}",
                f"AuthorizedKeysFile {home / 'authorized_keys'}",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "StrictModes no",
                "UsePAM no",
                "Subsystem sftp internal-sftp",
            ]
        )
        + "\n"
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
    proc = subprocess.Popen(
        [binary, "-D", "-e", "-f", str(home / "sshd_config")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    output = proc.stdout.read().decode(errors="replace") if proc.poll() is not None else ""
                    pytest.fail(f"sshd did not start on 127.0.0.1:{port}: {output}")
                time.sleep(0.1)
        yield SimpleNamespace(port=port, keyfile=home / "client_key", user=getpass.getuser())
    finally:
        stop_process(proc)


def add_ssh_remote(repo: Path, server: SimpleNamespace, path: Path) -> None:
    """The recipe of docs/sharing.md: URL in the shared config, user and key only in .dvc/config.local."""
    dvc(repo, "remote", "add", "-f", "ssh", f"ssh://127.0.0.1:{server.port}{path}")
    dvc(repo, "remote", "modify", "--local", "ssh", "user", server.user)
    dvc(repo, "remote", "modify", "--local", "ssh", "keyfile", server.keyfile)


def test_ssh_remote_round_trip(grown, project, sshd, tmp_path):
    remote = tmp_path / "ssh-remote"
    add_ssh_remote(project.repo, sshd, remote)
    assert str(sshd.keyfile) not in (project.repo / ".dvc/config").read_text()
    share(project.repo, "push", "-r", "ssh", *CONFIG)
    assert remote_objects(remote) == remote_objects(project.remote), "push over SSH sent a different set of objects"

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", project.repo, clone)
    add_ssh_remote(clone, sshd, remote)
    pulled = share(clone, "pull", "-r", "ssh", *CONFIG)
    assert pulled.splitlines()[0] == f"remote 'ssh': ssh://127.0.0.1:{sshd.port}{remote} (set in .dvc/config)"
    assert planned_jobs(clone, *CONFIG) == analysis_jobs([*MODELS, "smoke-d"])
    pulled = file_states(clone, "results/ranks/**/*", f"{LADDER}/models/**/*")
    ours = file_states(project.repo, "results/ranks/**/*", f"{LADDER}/models/**/*")
    assert len(pulled) == len(ours) > 0
    assert {p: h for p, (h, _) in pulled.items()} == {p: h for p, (h, _) in ours.items()}
