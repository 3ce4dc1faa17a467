"""Bad input, faults and provenance: clear errors before any job, nothing lost, nothing wrong accepted."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from rankscale.atomic import sha256_file
from rankscale.corpus import Document
from rankscale.plan import ladder_dir
from rankscale.tokens import tokenize_documents
from tests.conftest import REPO, copy_workflow, files, snakemake
from tests.plan_check import refused

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
LADDER = ladder_dir(SMOKE)  # the smoke configuration's ladder directory


def tiny_model_dir(path: Path, vocab_size: int = 64, pickle: bool = False, remote_code: bool = False) -> Path:
    """A tiny randomly initialised GPT-NeoX checkpoint written by save_pretrained."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    config = GPTNeoXConfig(
        vocab_size=vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    model = GPTNeoXForCausalLM(config)
    model.save_pretrained(str(path))
    if pickle:  # transformers 5 always writes safetensors: make the legacy layout by hand
        import torch

        torch.save(model.state_dict(), path / "pytorch_model.bin")
        (path / "model.safetensors").unlink()
    if remote_code:
        cfg = json.loads((path / "config.json").read_text())
        cfg["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
        (path / "config.json").write_text(json.dumps(cfg))
    return path


def _set(path: str, value: object) -> Callable[[dict, Path], None]:
    """A mutation setting a dotted key (list indices as integers) of the config."""

    def mutate(config: dict, _: Path) -> None:
        *parents, last = path.split(".")
        node = config
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return mutate


def _models(*entries: dict) -> Callable[[dict, Path], None]:
    def mutate(config: dict, _: Path) -> None:
        config["models"] = [dict(e) for e in entries]

    return mutate


def _local_dataset(lines: list[str], **spec: object) -> Callable[[dict, Path], None]:
    def mutate(config: dict, tmp: Path) -> None:
        path = tmp / "data.jsonl"
        path.write_text("".join(line + "\n" for line in lines))
        config["datasets"]["mine"] = {"source": "local", "path": str(path), **spec}

    return mutate


def _local_model(**flags: object) -> Callable[[dict, Path], None]:
    def mutate(config: dict, tmp: Path) -> None:
        model = tiny_model_dir(
            tmp / "model", pickle=bool(flags.pop("pickle", False)), remote_code=bool(flags.pop("remote", False))
        )
        config["models"] = [{"name": "mine", "family": "mine", "path": str(model), **flags}]

    return mutate


CONFIG_ERRORS = {
    "unknown top-level key": (_set("extraktion", {}), ["(top level)", "'extraktion' was unexpected"]),
    "unknown extraction key": (_set("extraction.batchsize", 4), ["extraction", "'batchsize' was unexpected"]),
    "unknown model key": (
        _models({"name": "m", "family": "f", "hub_id": "a/b", "revison": "v1"}),
        ["models[0]", "'revison' was unexpected"],
    ),
    "missing model path": (
        _models({"name": "m", "family": "f", "path": "/no/such/model"}),
        ["models[0].path", "'/no/such/model', which does not exist"],
    ),
    "duplicate model name": (
        _models({"name": "smoke-b", "family": "f", "hub_id": "a/b"}),
        ["models[0].name", "duplicate model name 'smoke-b'"],
    ),
    "model without family": (
        _models({"name": "m", "hub_id": "a/b"}),
        ["models[0]", "'family' is a required property"],
    ),
    "model without source": (_models({"name": "m", "family": "f"}), ["models[0]", "'m' needs `hub_id`"]),
    "bad model name": (
        _models({"name": "a/b", "family": "f", "hub_id": "a/b"}),
        ["models[0].name", "'a/b' does not match"],
    ),
    "k below 1": (_set("analysis.k_include", [0, 10]), ["analysis.k_include[0]", "0 is less than the minimum of 1"]),
    "non-positive window length": (
        _set("extraction.max_length", 0),
        ["extraction.max_length", "0 is less than the minimum of 2"],
    ),
    "negative per-model window": (
        _models({"name": "m", "family": "f", "hub_id": "a/b", "max_length": -5}),
        ["models[0].max_length", "-5 is less than the minimum of 2"],
    ),
    "stride not below window": (
        _set("extraction.stride", 64),
        ["extraction.stride", "64 must be in 1..max_length-1 = 63"],
    ),
    "unknown dataset source": (
        _set("datasets.humaneval", {"source": "ftp", "path": "x"}),
        ["datasets.humaneval.source", "'ftp' is not one of"],
    ),
    "unknown packaged corpus": (
        _set("datasets.humaneval", {"source": "packaged", "name": "wikipedia"}),
        ["datasets.humaneval.name", "unknown packaged corpus 'wikipedia'"],
    ),
    "empty corpus file": (_local_dataset([]), ["datasets.mine.path", "is empty"]),
    "corpus with no records": (_local_dataset(["", "  "]), ["datasets.mine.path", "holds no records"]),
    "missing dataset field": (
        _local_dataset(['{"id": 1, "text": "hello world"}'], text_fields=["body"]),
        ["datasets.mine.text_fields", "text field 'body' not found", "available: ['id', 'text']"],
    ),
    "missing nested dataset field": (
        _local_dataset(['{"context": {"title": ["a"], "sentences": [["b"]]}}'], text_fields=["context.paragraphs"]),
        ["text field 'context.paragraphs' not found", "at 'paragraphs'", "['sentences', 'title']"],
    ),
    "remote code without opt-in": (_local_model(remote=True), ["models[0].trust_remote_code", "ships its own code"]),
    "pickle checkpoint without opt-in": (
        _local_model(pickle=True),
        ["models[0].allow_pickle", "only pickle checkpoints"],
    ),
    "bad dtype": (_set("extraction.dtype", "float64"), ["extraction.dtype", "'float64' is not one of"]),
    "bad rank convention": (_set("extraction.ties", "geq"), ["extraction.ties", "'geq' is not one of"]),
    "heads not dividing d_model": (
        _set("ladder.sizes.1.heads", 3),
        ["ladder.sizes[1].heads", "3 heads do not divide d_model = 32"],
    ),
    "no datasets": (_set("datasets", {}), ["datasets", "should be non-empty"]),
}


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("errors"))


def dry_run(workdir: Path, config: dict, name: str = "case.yaml") -> subprocess.CompletedProcess[str]:
    (workdir / "config" / name).write_text(yaml.safe_dump(config, sort_keys=False))  # ladder.corpus order matters
    return snakemake(workdir, "-n", "--cores", "1", "--configfile", f"config/{name}")


@pytest.mark.parametrize("case", sorted(CONFIG_ERRORS))
def test_config_error_names_key_and_value(case: str, workflow_copy: Path, tmp_path: Path) -> None:
    """Through the configuration stage in-process (tests/plan_check.py); test_hardening proves on real `snakemake
    -n` runs that the workflow prints these same lines."""
    mutate, expected = CONFIG_ERRORS[case]
    config = copy.deepcopy(SMOKE)
    mutate(config, tmp_path)
    output = refused(workflow_copy, config)
    assert output is not None, f"{case}: accepted"
    for text in expected:
        assert text in output, f"{text!r} not in:\n{output}"
    assert not (workflow_copy / "results").exists(), "no job may start on a bad configuration"


def test_opted_in_local_model_is_accepted(workflow_copy: Path, tmp_path: Path) -> None:
    config = copy.deepcopy(SMOKE)
    _local_model(pickle=True, allow_pickle=True, tokenizer=f"{LADDER}/tokenizer")(config, tmp_path)
    config["models"].append({**config["models"][0], "name": "mine2"})
    result = dry_run(workflow_copy, config)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "extract" in result.stdout


def test_single_model_family_warns_and_is_not_fitted(workflow_copy: Path) -> None:
    config = copy.deepcopy(SMOKE)
    config["models"] = [{"name": "lonely", "family": "solo", "hub_id": "org/lonely"}]
    result = dry_run(workflow_copy, config)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "family 'solo' has only ['lonely']: no power-law fit is possible" in result.stdout + result.stderr


def test_short_documents_are_skipped_and_counted() -> None:
    from transformers import AutoTokenizer  # noqa: F401  (the tokenizer below is a real HF tokenizer)

    from rankscale.ladder import train_tokenizer

    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"rankscale-tok-{os.getpid()}"
    tok = train_tokenizer([Document("a", "hello world, this is a test " * 20)], 300, out)
    docs = [Document("1", "hello world"), Document("2", ""), Document("3", "a"), Document("4", "hello world again")]
    corpus, counts = tokenize_documents(docs, tok, add_special_tokens=False)
    assert counts["skipped_short_documents"] == 2 and counts["documents"] == 2
    assert corpus.doc_lengths().min() >= 2
    shutil.rmtree(out, ignore_errors=True)


# ---------------------------------------------------------------- faults on a finished run


def clone_run(src: Path, dest: Path) -> Path:
    """Copy a finished workflow directory, keeping modification times (Snakemake compares them)."""
    shutil.copytree(src, dest, symlinks=True, copy_function=shutil.copy2)
    return dest


def _run(
    workdir: Path, *targets: str, config: str = "config/smoke.yaml", env: dict | None = None, umask: int | None = None
):
    extra = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *targets, "--cores", "2", "--configfile", config],
        cwd=workdir,
        env={**extra, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=None if umask is None else lambda: os.umask(umask),
    )


@pytest.mark.slow
def test_missing_hub_model_gives_one_actionable_message(smoke_run: Path, tmp_path: Path) -> None:
    work = clone_run(smoke_run, tmp_path / "w")
    config = copy.deepcopy(SMOKE)
    config["models"] = [
        {
            "name": "ghost",
            "family": "ladder",
            "hub_id": "no-such-org/no-such-model",
            "tokenizer": f"{LADDER}/tokenizer",
        }
    ]
    (work / "config/ghost.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = _run(work, files(work, "config/ghost.yaml").ranks("ghost", "humaneval"), config="config/ghost.yaml")
    assert result.returncode != 0
    # the download job (a local rule, before any extraction) stops it, naming the model and what to do
    log = (work / "logs/download/no-such-org--no-such-model@main.log").read_text()
    assert "model 'ghost': could not download hub repository 'no-such-org/no-such-model' at revision 'main'" in log
    assert "HF_HUB_OFFLINE" in log and "`path:`" in log
    assert not (work / "logs/extract/ghost").exists()  # no extraction job started
    assert not (work / "results/ranks/ghost").exists() or not any((work / "results/ranks/ghost").iterdir())


@pytest.mark.slow
def test_tokenizer_larger_than_output_layer_is_refused(smoke_run: Path, tmp_path: Path) -> None:
    work = clone_run(smoke_run, tmp_path / "w")
    model = tiny_model_dir(work / "narrow", vocab_size=300)  # the ladder tokenizer has 512 tokens
    config = copy.deepcopy(SMOKE)
    config["models"] = [{"name": "narrow", "family": "ladder", "path": "narrow", "tokenizer": f"{LADDER}/tokenizer"}]
    (work / "config/narrow.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    target = files(work, "config/narrow.yaml").ranks("narrow", "humaneval")
    result = _run(work, target, config="config/narrow.yaml")
    assert result.returncode != 0
    log = (work / "logs/extract/narrow" / f"{Path(target).stem}.log").read_text()
    assert "model 'narrow': output layer has 300 columns but the tokenizer has 512 tokens" in log
    assert not (work / target).exists()
    assert model.exists()


def _edit_sidecar(path: Path, **changes: object) -> None:
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("corruption", "expected"),
    [
        ("truncate", "checksum does not match its sidecar"),
        ("window", "stale rank array (max_length: array has 32, config says 64)"),
        ("tokenizer", "stale rank array (tokenizer: array has '000"),
        ("ties", "stale rank array (ties: array has 'gt', config says 'ge')"),
    ],
)
def test_corrupted_or_stale_rank_arrays_stop_aggregation(
    smoke_run: Path, tmp_path: Path, corruption: str, expected: str
) -> None:
    work = clone_run(smoke_run, tmp_path / "w")
    smoke = files(work, "config/smoke.yaml")
    npz, sidecar = work / smoke.ranks("smoke-b", "pydoc"), work / smoke.ranks("smoke-b", "pydoc", "json")
    if corruption == "truncate":
        npz.write_bytes(npz.read_bytes()[:-1000])
    elif corruption == "window":
        _edit_sidecar(sidecar, windows={"max_length": 32, "stride": None, "max_windows_per_doc": None})
    elif corruption == "tokenizer":
        _edit_sidecar(sidecar, tokenizer_sha256="0" * 64)
    else:
        _edit_sidecar(sidecar, ties="gt")
    tables_before = sha256_file(work / "results/smoke/tables/metrics.csv")
    result = _run(work)
    assert result.returncode != 0
    log = (work / "logs/summarize/smoke-b" / f"{Path(smoke.summary('smoke-b', 'pydoc')).stem}.log").read_text()
    assert expected in log and smoke.ranks("smoke-b", "pydoc") in log
    assert sha256_file(work / "results/smoke/tables/metrics.csv") == tables_before, "old tables must survive"
