"""The smoke workflow run through a real SLURM cluster with profiles/slurm.

tests/slurm_cluster.py starts MUNGE, slurmctld and slurmd on this machine (root, one node, one
stand-in GPU). Every job is submitted by snakemake-executor-plugin-slurm with sbatch, and the
tables must come out byte-identical to the local smoke run's. Without the SLURM binaries or the
plugin the test is skipped, unless RANKSCALE_REQUIRE_SLURM is set (.ci/run sets it).
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

pytestmark = pytest.mark.slow

TABLES = ("metrics", "powerlaw_fits", "lognormal_fits", "emergence")


def _unavailable() -> str | None:
    if missing := missing_binaries():
        return f"SLURM/MUNGE programs not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)"
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is not installed (pip install -e '.[dev]')"
    if os.geteuid() != 0:
        return "a local SLURM cluster needs root"
    return None


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    if reason := _unavailable():
        if os.environ.get("RANKSCALE_REQUIRE_SLURM"):
            pytest.fail(f"RANKSCALE_REQUIRE_SLURM is set but {reason}")
        pytest.skip(reason)
    with local_cluster(gpus=2) as cluster:
        yield cluster


def test_smoke_workflow_through_slurm(
    slurm: SlurmCluster, smoke_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
            assert job.get("TresPerJob") == "gres:gpu:1" and job["Partition"] == slurm.gpu_partition, job
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
