"""A study of local files travels: two clones under different parents, their data files at different absolute
paths, one DVC remote recorded by the researcher (`share.py remote`). The colleague's pull verifies every rank array and plans no corpus, tokenization or extraction,
because a local dataset, a `path:` model and its tokenizer are keyed by content, not by where they live."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rankscale.corpus import Document
from tests.conftest import REPO, copy_workflow, files, planned_jobs, snakemake

pytestmark = pytest.mark.slow

ENV_KEYS = {"DVC_NO_ANALYTICS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
PROJECT_FILES = (".gitignore", ".dvcignore", ".dvc/config", ".dvc/.gitignore")
TEXTS = [
    "Ranks of the correct next token scale with model size, and the law is a power law in S.",
    "def add(a, b):\n    return a + b\n",
    "The quick brown fox jumps over the lazy dog, again and again, for the tokenizer's sake.",
]


def sh(cwd: Path, *cmd: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    import os

    result = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env={**os.environ, **ENV_KEYS}, capture_output=True, text=True, timeout=600
    )
    assert not check or result.returncode == 0, f"{cmd}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def make_data(root: Path) -> dict[str, Path]:
    """A JSON-lines corpus and two tiny GPT-NeoX models of different sizes that share one tokenizer (each saved
    with its own copy, as save_pretrained leaves them)."""
    import torch
    from transformers import AutoTokenizer, GPTNeoXConfig, GPTNeoXForCausalLM

    from rankscale.ladder import train_tokenizer

    root.mkdir(parents=True)
    docs = [Document(str(i), f"{TEXTS[i % 3]} Document {i}.") for i in range(12)]
    (root / "notes.jsonl").write_text("".join(json.dumps({"text": d.text}) + "\n" for d in docs))
    train_tokenizer(docs, 200, root / "tok")
    tok = AutoTokenizer.from_pretrained(str(root / "tok"))
    out = {"notes": root / "notes.jsonl"}
    for i, hidden in enumerate((16, 32)):
        torch.manual_seed(i)
        config = GPTNeoXConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=2 * hidden, max_position_embeddings=64)  # fmt: skip
        model_dir = root / f"model-{hidden}"
        GPTNeoXForCausalLM(config).save_pretrained(str(model_dir))
        tok.save_pretrained(str(model_dir))
        out[f"tiny-{hidden}"] = model_dir
    return out


def study(data: dict[str, Path]) -> dict:
    return {
        "datasets": {"notes": {"source": "local", "path": str(data["notes"])}},
        "models": [{"name": name, "family": "tiny", "path": str(data[name])} for name in ("tiny-16", "tiny-32")],
        "extraction": {"max_length": 32, "device": "cpu"},
    }


def test_a_study_moved_elsewhere_pulls_and_plans_no_extraction(tmp_path: Path) -> None:
    researcher = copy_workflow(tmp_path / "a/researcher")
    for name in PROJECT_FILES:
        (researcher / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, researcher / name)
    # as in a real clone, dvc.yaml tracks the default configuration's stages, whose data this remote never holds:
    # the colleague's pull must fetch only the study's outputs, not fail on the ladder's
    shutil.copy2(REPO / "dvc.yaml", researcher / "dvc.yaml")
    data = make_data(tmp_path / "machine-a" / "data")
    (researcher / "config/study.yaml").write_text(yaml.safe_dump(study(data), sort_keys=False))
    ours = files(researcher, "config/study.yaml")
    assert ours.tokenizers["tiny-16"] == ours.tokenizers["tiny-32"]  # one tokenizer by content, tokenized once
    assert ours.tokenizers["tiny-16"].startswith("local-")
    targets = [ours.ranks(m, "notes") for m in ("tiny-16", "tiny-32")]
    result = snakemake(researcher, *targets, "--cores", "2", "--configfile", "config/study.yaml")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    git = ("git", "-c", "user.name=t", "-c", "user.email=t@rankscale.invalid", "-c", "commit.gpgsign=false")
    sh(researcher, "git", "init", "-q", "-b", "main")
    sh(researcher, *git, "add", "-A")
    sh(researcher, *git, "commit", "-q", "-m", "study")
    sh(researcher, sys.executable, "workflow/share.py", "remote", tmp_path / "remote")
    sh(researcher, sys.executable, "workflow/share.py", "track", "--configfile", "config/study.yaml")
    sh(researcher, *git, "add", "dvc.yaml", "dvc.lock", ".dvc/config")
    sh(researcher, *git, "commit", "-q", "-m", "track")
    sh(researcher, sys.executable, "workflow/share.py", "push", "--configfile", "config/study.yaml")

    # the colleague: a clone under another parent, the same files under other absolute paths and folder names
    colleague = tmp_path / "b/c/colleague"
    colleague.parent.mkdir(parents=True)
    sh(tmp_path, "git", "clone", "-q", researcher, colleague)
    elsewhere = tmp_path / "machine-b" / "shared" / "copy"
    shutil.copytree(tmp_path / "machine-a" / "data", elsewhere)
    moved = {"notes": elsewhere / "notes.jsonl", "tiny-16": elsewhere / "model-16", "tiny-32": elsewhere / "model-32"}
    (colleague / "config/study.yaml").write_text(yaml.safe_dump(study(moved), sort_keys=False))
    theirs = files(colleague, "config/study.yaml")
    assert (theirs.corpus_keys, theirs.token_keys, theirs.rank_keys) == (ours.corpus_keys, ours.token_keys,
                                                                        ours.rank_keys)  # fmt: skip

    without = sh(colleague, sys.executable, "workflow/share.py", "pull", check=False)  # no --configfile
    assert without.returncode == 1 and "--configfile config/study.yaml" in without.stderr, without.stderr
    pulled = sh(colleague, sys.executable, "workflow/share.py", "pull", "--configfile", "config/study.yaml")
    assert "2 rank arrays verified" in pulled.stdout, pulled.stdout
    jobs = planned_jobs(colleague, "--configfile", "config/study.yaml")
    upstream = sorted(job for job in jobs if job.split("[")[0] in ("corpus", "tokenize", "extract", "download"))
    assert upstream == [], upstream
    assert any(job.startswith("summarize[") for job in jobs)  # what is not shared is still made

    # the files themselves are what counts: a changed corpus line is a new corpus, so new arrays
    (elsewhere / "notes.jsonl").write_text((elsewhere / "notes.jsonl").read_text() + '{"text": "one more"}\n')
    changed = files(colleague, "config/study.yaml")
    assert changed.corpus_keys["notes"] != ours.corpus_keys["notes"]
    assert changed.rank_keys != ours.rank_keys
