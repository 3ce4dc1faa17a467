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
MOVED = "fedcba9876543210fedcba9876543210fedcba98"  # the commit `main` moved to after a download


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
    summaries = [hub.summary("hub-b", d) for d in SMOKE["datasets"]]  # and hub-b's token table (rule token_kinds)
    result = run(work, *targets, *summaries, cache=cache)
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
        # the token file, the token table and the rank array all record the commit the download pinned
        made = json.loads((work / hub.model_tokens("hub-b", dataset, "npz.json")).read_text())
        assert made["tokenizer_commit"] == COMMIT and meta["tokenizer_commit"] == COMMIT
    (table,) = [t for t in (work / "results/token_kinds").glob("*.npz.json") if "org/tiny" in t.read_text()]
    assert json.loads(table.read_text())["tokenizer_commit"] == COMMIT

    # a study whose token files were written before commits were recorded (as every study before this was): nothing
    # to rerun, and a new extraction from such a file is checked by its tokenizer's content
    tokens_meta = work / hub.model_tokens("hub-b", "humaneval", "npz.json")
    stat = tokens_meta.stat()
    tokens_meta.write_text(json.dumps({k: v for k, v in json.loads(tokens_meta.read_text()).items()
                                       if k != "tokenizer_commit"}))  # fmt: skip
    os.utime(tokens_meta, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    result = run(work, *targets, *summaries, "-n", cache=cache)
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr, result.stderr[-3000:]
    stem = hub.rank_keys[("hub-b", "humaneval")]
    for path in (work / "results/ranks/hub-b").glob(f"{stem}.*"):
        path.unlink()
    result = run(work, targets[0], cache=cache)
    assert result.returncode == 0, result.stderr[-5000:]
    assert "rule tokenize:" not in result.stderr and "rule download:" not in result.stderr
    assert json.loads((work / targets[0].replace(".npz", ".json")).read_text())["tokenizer_commit"] == COMMIT

    # `main` moves on (here: the same files at a new commit) and the download is made again (as the message of a
    # missing cache suggests): the token file made at COMMIT is not the tokenizer the extraction now loads
    cache_repo(cache, "org/tiny", [work / LADDER / "models/smoke-b", work / LADDER / "tokenizer"], commit=MOVED)
    (work / "resources/downloads/org--tiny@main.json").unlink()
    for path in (work / "results/ranks/hub-b").glob(f"{stem}.*"):
        path.unlink()
    tokens_meta.write_text(json.dumps({**json.loads(tokens_meta.read_text()), "tokenizer_commit": COMMIT}))
    os.utime(tokens_meta, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    result = run(work, targets[0], cache=cache)
    assert result.returncode != 0 and "rule download:" in result.stderr
    tokens = hub.model_tokens("hub-b", "humaneval")
    assert (
        f"{tokens}: tokenized with tokenizer 'org/tiny' at commit {COMMIT}, but model 'hub-b' loads it at commit "
        f"{MOVED}, which resources/downloads/org--tiny@main.json pinned when rule download fetched it"
    ) in (work / f"logs/extract/hub-b/{stem}.log").read_text()
    assert not (work / targets[0]).exists()
    # what the message says to do: the token file deleted, it is made again at the pinned commit, and scored
    (work / tokens).unlink()
    tokens_meta.unlink()
    result = run(work, targets[0], cache=cache)
    assert result.returncode == 0, result.stderr[-5000:]
    assert "rule tokenize:" in result.stderr and json.loads(tokens_meta.read_text())["tokenizer_commit"] == MOVED
    ours, theirs = np.load(work / targets[0]), np.load(work / smoke.ranks("smoke-b", "humaneval"))
    assert np.array_equal(ours["rank"], theirs["rank"])

    # the cache gone (e.g. on a compute node that does not share it): the job stops at once, naming the model
    shutil.rmtree(cache)
    for path in (work / "results/ranks/hub-b").glob(f"{stem}.*"):
        path.unlink()
    result = run(work, targets[0], cache=cache)
    assert result.returncode != 0
    assert "rule download:" not in result.stderr  # the record stands: no job downloads again on its own
    log = (work / f"logs/extract/hub-b/{stem}.log").read_text()
    assert f"model 'hub-b': hub repository 'org/tiny' at commit {MOVED} is not in the Hugging Face cache" in log
    assert not (work / targets[0]).exists() and targets[0] == f"results/ranks/hub-b/{stem}.npz"


def word_tokenizer(folder: Path, words: list[str]) -> Path:
    """A real (word-level) tokenizer saved as `save_pretrained` leaves it: ids follow the order of `words`."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["<unk>", *words])}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>").save_pretrained(folder)
    (folder / "config.json").write_text('{"model_type": "gpt2"}')  # what AutoTokenizer reads of a hub repository too
    return folder


def test_tokenization_loads_the_commit_the_download_pinned_and_extraction_refuses_another(
    offline_cache: Path, tmp_path: Path
) -> None:
    """`main` moved from COMMIT (downloaded) to MOVED, which numbers the words the other way round."""
    from rankscale.models import ModelSource
    from rankscale.token_kinds import TokenTable, check_token_table, save_token_table
    from rankscale.tokenizer_pin import check_token_file, extraction_commit, load_pinned, pin_record

    cache_repo(offline_cache, "org/tiny", [word_tokenizer(tmp_path / "a", ["red", "green", "blue"])], commit=COMMIT)
    cache_repo(offline_cache, "org/tiny", [word_tokenizer(tmp_path / "b", ["blue", "green", "red"])], commit=MOVED)
    model = ModelSource("tiny", "org/tiny", "main", tokenizer=None, trust_remote_code=False, allow_pickle=False,
                        tokenizer_revision=None)  # fmt: skip
    record = tmp_path / pin_record(model)
    assert pin_record(model) == "resources/downloads/org--tiny@main.json"  # the model's own download pins it
    local = ModelSource.directory("m", str(tmp_path / "a"))
    assert pin_record(local) is None and load_pinned(local, None, "t")[1] is None  # local: keyed by content

    # not downloaded yet: the branch as it is now; downloaded: the commit the record pins, whatever main says
    tokenizer, commit = load_pinned(model, str(record), "tokenizer 'tiny'")
    assert commit == MOVED and tokenizer("red blue")["input_ids"] == [3, 1]
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({**HubDownload("org/tiny", "main", False, False, False).params(), "commit": COMMIT}))
    tokenizer, commit = load_pinned(model, str(record), "tokenizer 'tiny'")
    assert commit == COMMIT and tokenizer("red blue")["input_ids"] == [1, 3]

    records = [json.loads(record.read_text())]
    assert extraction_commit(model, records) == (COMMIT, pin_record(model))
    tokens = tmp_path / "humaneval-abc.npz"
    check_token_file({"tokenizer_commit": COMMIT}, tokens, COMMIT, str(record), "tiny")  # the same commit: scored
    check_token_file({}, tokens, COMMIT, str(record), "tiny")  # written before commits were recorded: by content
    with pytest.raises(ValueError) as moved:
        check_token_file({"tokenizer": "org/tiny", "tokenizer_commit": MOVED}, tokens, COMMIT, str(record), "tiny")
    assert str(moved.value) == (
        f"{tokens}: tokenized with tokenizer 'org/tiny' at commit {MOVED}, but model 'tiny' loads it at commit "
        f"{COMMIT}, which {record} pinned when rule download fetched it (the branch moved in between): its ranks "
        f"would pair one commit's token ids with another's model. Delete {tokens} and {tokens}.json and rerun "
        "snakemake: tokenization then loads the pinned commit"
    )

    # a token table of the other commit (or, for one without commits, other content) under a rank array: refused
    table = tmp_path / "kinds.npz"
    kinds = TokenTable(np.ones(4, np.uint8), np.ones(4, np.int64))
    save_token_table(kinds, table, "org/tiny", {"tokenizer_sha256": "aa", "tokenizer_commit": MOVED})
    check_token_table(table, {"tokenizer_sha256": "aa"}, "r.npz")  # no commit in an older rank array: content
    for rank_meta, what in (({"tokenizer_commit": COMMIT}, "commit"), ({"tokenizer_sha256": "bb"}, "fingerprint")):
        with pytest.raises(ValueError, match=rf"^{table}: token table of tokenizer 'org/tiny' at .*{what}.* rank array "
                           rf"r.npz was scored with .*Delete {table} and {table}.json and rerun snakemake$"):  # fmt: skip
            check_token_table(table, rank_meta, "r.npz")
