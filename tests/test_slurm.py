"""profiles/slurm: what it plans, and the smoke workflow run through a real SLURM cluster with it.

tests/slurm_cluster.py starts MUNGE, slurmctld and slurmd on this machine (root, one node, two
stand-in GPUs). Every job is submitted by snakemake-executor-plugin-slurm with sbatch, and the
tables must come out byte-identical to the local smoke run's. Without the SLURM binaries, root or
the plugin these tests are skipped, unless RANKSCALE_REQUIRE_SLURM is set (.ci/run sets it).
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import copy_workflow, planned_jobs, snakemake
from tests.slurm_cluster import SlurmCluster, local_cluster, missing_binaries

TABLES = ("metrics", "powerlaw_fits", "lognormal_fits", "emergence")


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("RANKSCALE_REQUIRE_SLURM"):
        pytest.fail(f"RANKSCALE_REQUIRE_SLURM is set but {reason}")
    pytest.skip(reason)


def _require_plugin() -> None:
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        _skip_or_fail("snakemake-executor-plugin-slurm is not installed (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    _require_plugin()
    if missing := missing_binaries():
        _skip_or_fail(f"SLURM/MUNGE programs not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        _skip_or_fail("a local SLURM cluster needs root")
    with local_cluster(gpus=2) as cluster:
        yield cluster


def planned_resources(text: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, resources) of every job in `snakemake -n` output."""
    jobs, rule = [], None
    for line in text.splitlines():
        if match := re.fullmatch(r"(?:local)?rule (\w+):", line.strip()):
            rule = match.group(1)
        elif rule and line.strip().startswith("resources:"):
            pairs = line.split(":", 1)[1].strip().split(", ")
            jobs.append((rule, dict(pair.split("=", 1) for pair in pairs)))
            rule = None
    return jobs


def test_profile_plans_model_resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """profiles/slurm passes each model's gpus/mem_mb/runtime through and sets partitions from the environment."""
    _require_plugin()
    workdir = copy_workflow(tmp_path / "plan")
    (workdir / "res.yaml").write_text("extraction:\n  gpus: 2\n  mem_mb: 12345\n  runtime: 77\n")
    args = ("--workflow-profile", "profiles/slurm", "--configfile", "config/smoke.yaml", "res.yaml", "-n")
    for name in ("RANKSCALE_SLURM_PARTITION", "RANKSCALE_SLURM_GPU_PARTITION", "RANKSCALE_SLURM_ACCOUNT"):
        monkeypatch.delenv(name, raising=False)

    result = snakemake(workdir, *args)
    assert result.returncode == 0, result.stderr[-5000:]
    jobs = [(rule, res) for rule, res in planned_resources(result.stdout + result.stderr) if rule != "all"]
    assert {rule for rule, _ in jobs} >= {"extract", "ladder_train", "table"}
    for _, res in jobs:  # no partition set: the plugin takes the cluster's default one
        assert "slurm_partition" not in res and "slurm_account" not in res, res

    monkeypatch.setenv("RANKSCALE_SLURM_PARTITION", "cpu-part")
    monkeypatch.setenv("RANKSCALE_SLURM_GPU_PARTITION", "gpu-part")
    monkeypatch.setenv("RANKSCALE_SLURM_ACCOUNT", "proj")
    result = snakemake(workdir, *args)
    assert result.returncode == 0, result.stderr[-5000:]
    jobs = [(rule, res) for rule, res in planned_resources(result.stdout + result.stderr) if rule != "all"]
    assert {rule for rule, _ in jobs} >= {"extract", "ladder_train", "table"}
    for rule, res in jobs:
        assert res["slurm_account"] == "proj", res
        if rule == "extract":
            assert (res["gpu"], res["mem_mb"], res["runtime"], res["slurm_partition"]) == (
                "2",
                "12345",
                "77",
                "gpu-part",
            )
        else:
            assert "gpu" not in res and (res["mem_mb"], res["runtime"], res["slurm_partition"]) == (
                "4000",
                "60",
                "cpu-part",
            ), (rule, res)

    # given as --profile it plans too (profiles/default is then loaded as well; see the profile's header)
    result = snakemake(workdir, "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml", "-n")
    assert result.returncode == 0, result.stderr[-5000:]


@pytest.mark.slow
def test_smoke_workflow_through_slurm(
    slurm: SlurmCluster, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    smoke_run: Path = request.getfixturevalue("smoke_run")  # only once the cluster is up (or skipped)
    workdir = copy_workflow(tmp_path / "slurm")
    # every model asks for one GPU and sets its memory and time limit, as config/paper.yaml does;
    # none of these changes a rank array (they are runtime settings), so the tables must not change
    (workdir / "gpu.yaml").write_text("extraction:\n  gpus: 1\n  mem_mb: 2000\n  runtime: 20\n")
    configs = ("--configfile", "config/smoke.yaml", "gpu.yaml")
    planned = Counter(key.split("[")[0] for key in planned_jobs(workdir, *configs).elements())
    planned.pop("all")  # a target rule without code runs in the main process

    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    monkeypatch.setenv("PATH", f"{slurm.bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RANKSCALE_SLURM_PARTITION", slurm.partition)
    monkeypatch.setenv("RANKSCALE_SLURM_GPU_PARTITION", slurm.gpu_partition)
    monkeypatch.delenv("RANKSCALE_SLURM_ACCOUNT", raising=False)  # no accounting here, so no accounts
    for name in [k for k in os.environ if k.startswith(("SLURM_JOB", "SBATCH_"))]:
        monkeypatch.delenv(name)
    result = snakemake(
        workdir,
        "--workflow-profile",
        "profiles/slurm",
        *configs,
        # no slurmdbd here, so job status comes from squeue (the cluster keeps finished jobs an hour)
        "--slurm-status-command",
        "squeue",
        "--slurm-init-seconds-before-status-checks",
        "1",
        timeout=1200,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:] + "\n" + slurm.logs()

    # every job was submitted with sbatch, and SLURM ran each one to completion on this node
    submitted = dict(re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", output))
    assert len(submitted) == sum(planned.values()), output[-6000:]
    jobs = {job["JobId"]: job for job in slurm.jobs()}
    completed = {job["JobId"]: job for job in slurm.completed_jobs()}
    ran = Counter()
    for slurm_id in submitted.values():
        job = jobs[slurm_id]
        assert job["JobState"] == "COMPLETED" and completed[slurm_id]["JobState"] == "COMPLETED", job
        assert job["WorkDir"] == str(workdir) and job["NodeList"] == slurm.node, job
        rule = job["Comment"].removeprefix("rule_").split("_wildcards_")[0]
        ran[rule] += 1
        # extract (gpu=1) asked for a GPU on the GPU partition; gpu=0 jobs for none, on the default one
        if rule == "extract":
            assert job.get("TresPerJob") == "gres:gpu:1" and job["JOB_GRES"] == "gpu:1", job
            assert job["Partition"] == slurm.gpu_partition, job
            assert job["MinMemoryNode"] == "2000M" and job["TimeLimit"] == "00:20:00", job
        else:
            assert "TresPerJob" not in job and job["JOB_GRES"] == "(null)", job
            assert job["Partition"] == slurm.partition, job
            assert job["MinMemoryNode"] == "4000M" and job["TimeLimit"] == "01:00:00", job
    assert ran == planned

    # same code, same CPU, one thread per job, seeded training: the tables are the same bytes
    for name in TABLES:
        ours = (workdir / "results/tables" / f"{name}.csv").read_bytes()
        assert ours == (smoke_run / "results/tables" / f"{name}.csv").read_bytes(), name
