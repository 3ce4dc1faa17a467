"""Hub models are fetched by a local rule before any extraction, which then runs offline from the cache.

No test here reaches the network: the Hub is a Hugging Face cache laid out as `snapshot_download` leaves
it (models--<org>--<name>/refs/<branch>, snapshots/<commit>/...), filled with a model this test suite
trained, so the download rule and the extraction run their real huggingface_hub and transformers code.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from rankscale.downloads import DownloadError, HubDownload, check_cached, fetch
from rankscale.plan import ladder_dir
from tests.conftest import REPO, copy_run, files
from tests.hub_fixtures import HUB_COMMIT as COMMIT
from tests.hub_fixtures import cache_repo

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
LADDER = ladder_dir(SMOKE)


@pytest.fixture
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_fetch_records_the_commit_a_branch_resolved_to_and_the_job_finds_it(offline_cache: Path, tmp_path: Path):
    model = tmp_path / "model"
    model.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "pytorch_model.bin"):
        (model / name).write_text(name)
    cache_repo(offline_cache, "org/tiny", [model])
    download = HubDownload("org/tiny", "main", tokenizer_only=False, trust_remote_code=False, allow_pickle=False)
    assert download.key == "org--tiny@main" and download.record == "resources/downloads/org--tiny@main.json"
    record = fetch(download, "model 'tiny'")
    # the branch read once, here: every extraction loads this commit
    assert record["commit"] == COMMIT and record["repo"] == "org/tiny" and record["revision"] == "main"
    assert set(record["files"]) >= {"config.json", "model.safetensors", "tokenizer.json"}
    assert check_cached(record, "model 'tiny'") == COMMIT
    # pickled weights only for entries that allow them
    assert "*.bin" not in download.patterns() and "*.bin" in HubDownload("o/m", "main", False, False, True).patterns()
    assert "*.py" in HubDownload("o/m", "main", False, True, False).patterns()


def test_a_revision_without_loadable_weights_is_refused_at_download(offline_cache: Path, tmp_path: Path) -> None:
    """Only pickled weights and no `allow_pickle`: refused on the login node, not later on a GPU node."""
    model = tmp_path / "old"
    model.mkdir()
    for name in ("config.json", "pytorch_model.bin", "tokenizer.json"):
        (model / name).write_text(name)
    cache_repo(offline_cache, "org/old", [model])
    safe = HubDownload("org/old", "main", tokenizer_only=False, trust_remote_code=False, allow_pickle=False)
    with pytest.raises(
        DownloadError, match=r"no config.json or no weights loadable here \(\*.safetensors;.*allow_pickle"
    ):
        fetch(safe, "model 'old'")
    pickled = HubDownload("org/old", "main", tokenizer_only=False, trust_remote_code=False, allow_pickle=True)
    assert "pytorch_model.bin" in fetch(pickled, "model 'old'")["files"]


def test_a_missing_download_or_cache_names_the_model_and_what_to_do(offline_cache: Path) -> None:
    download = HubDownload("org/absent", "v1", tokenizer_only=False, trust_remote_code=False, allow_pickle=False)
    with pytest.raises(DownloadError, match=r"model 'x': could not download hub repository 'org/absent' at revision "
                       r"'v1' \(HF_HUB_OFFLINE is set, and it is not in the cache\).*`path:`"):  # fmt: skip
        fetch(download, "model 'x'")
    record = {**download.params(), "commit": COMMIT, "files": ["config.json"], "cache": "/elsewhere", "host": "login1"}
    with pytest.raises(DownloadError) as missing:
        check_cached(record, "model 'x'")
    message = str(missing.value)
    assert message.startswith(f"model 'x': hub repository 'org/absent' at commit {COMMIT} is not in the Hugging Face")
    assert str(offline_cache) in message and "/elsewhere on login1" in message and "HF_HOME" in message


def hub_copy_config(work: Path) -> str:
    """The smoke configuration plus `hub-b`: the hub model org/tiny, which is smoke-b's weights and tokenizer."""
    config = copy.deepcopy(SMOKE)
    config["models"] = [{"name": "hub-b", "family": "hub", "hub_id": "org/tiny"}]
    (work / "config/hub.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return "config/hub.yaml"


def run(work: Path, *targets: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *targets, "--cores", "2", "--configfile", hub_copy_config(work)],
        cwd=work, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


@pytest.mark.slow
def test_a_hub_model_is_downloaded_once_then_scored_offline_from_the_cache(smoke_run: Path, tmp_path: Path) -> None:
    work = copy_run(smoke_run, tmp_path / "w")
    cache = tmp_path / "hub"
    cache_repo(cache, "org/tiny", [work / LADDER / "models/smoke-b", work / LADDER / "tokenizer"])
    hub, smoke = files(work, hub_copy_config(work)), files(work, "config/smoke.yaml")
    targets = [hub.ranks("hub-b", d) for d in SMOKE["datasets"]]
    result = run(work, *targets, cache=cache)
    assert result.returncode == 0, result.stderr[-5000:]
    assert result.stderr.count("rule download:") == 1  # one repository at one revision: fetched once
    record = json.loads((work / "resources/downloads/org--tiny@main.json").read_text())
    assert record["commit"] == COMMIT and record["cache"] == str(cache)
    for dataset in SMOKE["datasets"]:
        meta = json.loads((work / hub.ranks("hub-b", dataset, "json")).read_text())
        assert meta["resolved_revision"] == COMMIT and meta["revision"] == "main"
        # the same weights and tokenizer as smoke-b, through the same code on this machine: the same ranks
        ours, theirs = np.load(work / hub.ranks("hub-b", dataset)), np.load(work / smoke.ranks("smoke-b", dataset))
        assert np.array_equal(ours["rank"], theirs["rank"]) and np.array_equal(ours["logprob"], theirs["logprob"])

    # the cache gone (e.g. on a compute node that does not share it): the job stops at once, naming the model
    shutil.rmtree(cache)
    stem = hub.rank_keys[("hub-b", "humaneval")]
    for path in (work / "results/ranks/hub-b").glob(f"{stem}.*"):
        path.unlink()
    result = run(work, targets[0], cache=cache)
    assert result.returncode != 0
    assert "rule download:" not in result.stderr  # the record stands: no job downloads again on its own
    log = (work / f"logs/extract/hub-b/{stem}.log").read_text()
    assert f"model 'hub-b': hub repository 'org/tiny' at commit {COMMIT} is not in the Hugging Face cache" in log
    assert not (work / targets[0]).exists() and targets[0] == f"results/ranks/hub-b/{stem}.npz"
