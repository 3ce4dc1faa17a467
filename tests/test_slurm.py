"""profiles/slurm: what it plans, and the smoke workflow run through a real SLURM cluster with it.

tests/slurm_cluster.py starts MUNGE, slurmctld and slurmd on this machine (root, one node, two
stand-in GPUs). Every job is submitted by snakemake-executor-plugin-slurm with sbatch, and the
tables must come out byte-identical to the local smoke run's. Without the SLURM binaries, root or
the plugin these tests are skipped, unless RANKSCALE_REQUIRE_SLURM is set (.ci/run sets it).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from rankscale.plan import ladder_dir
from tests.conftest import REPO, copy_run, copy_workflow, files, planned_jobs, snakemake
from tests.hub_fixtures import HUB_COMMIT, cache_repo
from tests.slurm_cluster import SlurmCluster, local_cluster, missing_binaries

TABLES = ("metrics", "powerlaw_fits", "lognormal_fits", "emergence")
SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
LADDER = ladder_dir(SMOKE)
RETRAINED = SMOKE["ladder"]["sizes"][0]["name"]  # the smallest size: the cheapest to train and score again


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


LOCAL_RULES = {"all", "download", "corpus", "tokenize", "token_kinds", "ladder_corpus", "summarize", "trajectories", "table",
               "figure"}  # fmt: skip


def planned_by_rule(text: str) -> Counter[str]:
    return Counter(
        m.group(1) for line in text.splitlines() if (m := re.fullmatch(r"(?:local)?rule (\w+):", line.strip()))
    )


def test_the_local_rules_are_the_snakefiles() -> None:
    """LOCAL_RULES is what the rules declare with `localrule: True` (the SLURM run below proves Snakemake keeps those
    jobs local), and no `localrules:` list names rules a `module` import renames (docs/pipelines.md)."""
    sources = [REPO / "workflow/Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]
    text = "\n".join(path.read_text() for path in sources)
    assert set(re.findall(r"^rule (\w+):\n    localrule: True$", text, re.MULTILINE)) == LOCAL_RULES
    assert not re.search(r"^localrules:", text, re.MULTILINE)


@pytest.mark.slow  # two dry runs of 547 and 907 jobs
@pytest.mark.parametrize(("configfile", "extractions"), [("config/polypythia.yaml", 400), ("config/paper.yaml", 200)])
def test_a_cluster_run_submits_the_extractions_and_little_else(tmp_path: Path, configfile: str, extractions: int):
    """Only the heavy jobs go to sbatch: the cheap ones (downloads, corpora, tokens, summaries, tables, figures)
    run on the submitting host: exactly one submission per extraction (PolyPythia 400, the paper grid 200)."""
    _require_plugin()
    workdir = copy_workflow(tmp_path / "plan")
    result = snakemake(workdir, "--workflow-profile", "profiles/slurm", "--configfile", configfile, "-n")
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-5000:]
    planned = planned_by_rule(text)
    remote = Counter({rule: n for rule, n in planned.items() if rule not in LOCAL_RULES})
    assert remote == Counter(extract=extractions), planned  # no ladder, no GGUF file: the extractions alone
    assert planned["summarize"] == extractions and planned["download"] > 0, planned
    print(configfile, f"planned {sum(planned.values())}", dict(planned))  # docs/cluster.md quotes these counts


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
    # the smoke run, less one ladder size, its rank arrays and summaries: SLURM retrains and rescores that size, and
    # every table below must come out the smoke run's bytes (the tokenizer and the other sizes are the smoke run's)
    workdir = copy_run(smoke_run, tmp_path / "slurm")
    for made in (Path(LADDER, "models"), Path("results/ranks"), Path("results/summary")):
        shutil.rmtree(workdir / made / RETRAINED)
    # every model asks for one GPU and sets its memory and time limit, as config/paper.yaml does;
    # none of these changes a rank array (they are runtime settings), so the tables must not change
    (workdir / "gpu.yaml").write_text("extraction:\n  gpus: 1\n  mem_mb: 2000\n  runtime: 20\n")
    configs = ("--configfile", "config/smoke.yaml", "gpu.yaml")
    # the tables compared below with the smoke run's: the cheap rules run locally, as every table and figure would
    tables = [f"results/gpu/tables/{name}.csv" for name in TABLES]
    planned = Counter(key.split("[")[0] for key in planned_jobs(workdir, *tables, *configs).elements())
    assert planned["table"] == len(TABLES) and "figure" not in planned and "all" not in planned, planned

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
        *tables,  # before --configfile, which takes every word after it
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
    assert len(submitted) == sum(n for rule, n in planned.items() if rule not in LOCAL_RULES), output[-6000:]
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
    # only the heavy jobs were submitted; the cheap ones ran on this (the submitting) host
    remote = Counter({rule: n for rule, n in planned.items() if rule not in LOCAL_RULES})
    assert remote == Counter({"extract": len(SMOKE["datasets"]), "ladder_train": 1}), planned
    assert ran == remote

    # same code, same CPU, one thread per job, seeded training: the tables are the same bytes
    ran_files = files(workdir, *configs[1:])  # the run is named by its last config file: results/gpu/
    assert ran_files.out == "results/gpu"
    for name in TABLES:
        ours = (workdir / ran_files.out / "tables" / f"{name}.csv").read_bytes()
        assert ours == (smoke_run / "results/smoke/tables" / f"{name}.csv").read_bytes(), name

    # a hub model: downloaded by the local rule (here: from a warm cache), scored by a SLURM job that runs
    # offline (HF_HUB_OFFLINE=1 in the job) from the cache the compute node shares with this host
    cache = tmp_path / "hub-cache"
    cache_repo(cache, "org/tiny", [workdir / LADDER / "models/smoke-b", workdir / LADDER / "tokenizer"])
    hub = copy.deepcopy(SMOKE)
    hub["models"] = [{"name": "hub-b", "family": "hub", "hub_id": "org/tiny"}]
    (workdir / "hub.yaml").write_text(yaml.safe_dump(hub, sort_keys=False))
    hub_files = files(workdir, "hub.yaml", "gpu.yaml")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    result = snakemake(
        workdir, hub_files.ranks("hub-b", "humaneval"), "--workflow-profile", "profiles/slurm",
        "--configfile", "hub.yaml", "gpu.yaml", "--slurm-status-command", "squeue",
        "--slurm-init-seconds-before-status-checks", "1", timeout=1200,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:] + "\n" + slurm.logs()
    hub_jobs = dict(re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", output)).values()
    rules = [slurm_job(slurm, i)["Comment"].removeprefix("rule_").split("_wildcards_")[0] for i in hub_jobs]
    assert rules == ["extract"] and "localrule download:" in output, output[-6000:]
    meta = json.loads((workdir / hub_files.ranks("hub-b", "humaneval", "json")).read_text())
    assert meta["resolved_revision"] == HUB_COMMIT
    ours = np.load(workdir / hub_files.ranks("hub-b", "humaneval"))
    theirs = np.load(workdir / ran_files.ranks("smoke-b", "humaneval"))
    assert np.array_equal(ours["rank"], theirs["rank"]) and np.array_equal(ours["logprob"], theirs["logprob"])


def slurm_job(slurm: SlurmCluster, slurm_id: str) -> dict[str, str]:
    return {job["JobId"]: job for job in slurm.jobs()}[slurm_id]
