"""Shared fixtures: a copy of the workflow in a temporary directory, run for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "workflow", "config", "src", "envs", "profiles")


def copy_workflow(dest: Path) -> Path:
    """Copy what a clone holds of the workflow (no results) into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def snakemake(workdir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the real Snakemake CLI (this interpreter's) in `workdir`."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke configuration run end to end once per test session."""
    workdir = copy_workflow(tmp_path_factory.mktemp("smoke"))
    result = snakemake(workdir, "--cores", "2", "--configfile", "config/smoke.yaml")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return workdir
