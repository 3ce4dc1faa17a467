"""Careless or hostile input: refused before any job with the key, file and value named,
or handled correctly; never a wrong number that looks valid, a write outside results/, finished
work deleted by a late check, or outputs a colleague cannot read. Everything runs real Snakemake."""

from __future__ import annotations

import copy
import gzip
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from rankscale.atomic import atomic_dir, atomic_path
from rankscale.plan import ladder_dir, text_key
from tests.conftest import REPO, copy_run, copy_workflow, file_states, files, planned_jobs, snakemake
from tests.plan_check import refused
from tests.test_errors import _local_model, _models, _set, tiny_model_dir

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
LADDER = ladder_dir(SMOKE)
EVERYTHING = ("results/**/*", "resources/**/*")


def _file_dataset(name: str, content: bytes, **spec: object) -> Callable[[dict, Path], None]:
    """Dataset `mine` reading a local file of these bytes."""

    def mutate(config: dict, tmp: Path) -> None:
        (tmp / name).write_bytes(content)
        config["datasets"]["mine"] = {"source": "local", "path": str(tmp / name), **spec}

    return mutate


def _lines(*records: object) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _positions(n: int, **entry: object) -> Callable[[dict, Path], None]:
    """A local model whose config.json says it has `n` positions."""

    def mutate(config: dict, tmp: Path) -> None:
        _local_model(**entry)(config, tmp)
        cfg = json.loads((tmp / "model/config.json").read_text())
        cfg["max_position_embeddings"] = n
        (tmp / "model/config.json").write_text(json.dumps(cfg))

    return mutate


def _unset_max_length_with_positions(n: int) -> Callable[[dict, Path], None]:
    """A configuration that leaves extraction.max_length to the schema (1024) and a local model of `n` positions,
    whose own positions cap the ladder's below the default too: the ladder is removed."""

    def mutate(config: dict, tmp: Path) -> None:
        config["extraction"].pop("max_length")
        config.pop("ladder")
        _positions(n)(config, tmp)

    return mutate


def _broken_model_config(config: dict, tmp: Path) -> None:
    _local_model()(config, tmp)
    (tmp / "model/config.json").write_text('{"model_type": "gpt_neox",\n  "hidden_size": 16,,\n}')


def _k_above_local_vocabulary(config: dict, tmp: Path) -> None:
    _local_model()(config, tmp)  # 64 tokens in its config.json
    config["figures"]["rbp_k"] = [10, 50, 100]


def _stride_against_window(config: dict, tmp: Path) -> None:
    config["extraction"]["stride"] = 40  # fine for the 64-token default window, not for pydoc's 32
    config["datasets"]["pydoc"]["windows"] = {"max_length": 32}


def _train_tokens(tokens: int, seq_len: int) -> Callable[[dict, Path], None]:
    """The ladder tokenizer's count of the training text, as a finished ladder_tokenizer job leaves it."""

    def mutate(config: dict, tmp: Path) -> None:
        config["ladder"]["train"]["seq_len"] = seq_len
        (tmp / "train_tokens.json").write_text(json.dumps({"tokens": tokens}))

    return mutate


PLAN_ERRORS = {
    # names that are path components: results/ranks/../humaneval-<key>.npz, rmtree(resources/ladder/..)
    "model named ..": (_models({"name": "..", "family": "f", "hub_id": "a/b"}), ["models[0].name", "'..' does not"]),
    "model named .": (_models({"name": ".", "family": "f", "hub_id": "a/b"}), ["models[0].name", "'.' does not"]),
    "ladder size named ..": (_set("ladder.sizes.0.name", ".."), ["ladder.sizes[0].name", "'..' does not match"]),
    "dataset with a leading dot": (
        lambda config, _: config["datasets"].update({".hidden": {"source": "packaged", "name": "humaneval"}}),
        ["datasets: '.hidden' does not match", "not starting with '.'"],
    ),
    # windows a model cannot hold, caught before Snakemake deletes the outputs a job would replace
    "dataset window beyond the ladder's positions": (
        _set("datasets.pydoc.windows", {"max_length": 4096}),
        ["datasets.pydoc.windows.max_length: 4096 exceeds the 64 positions of ladder model 'smoke-a'", "seq_len"],
    ),
    "ladder seq_len below the window": (
        _set("ladder.train.seq_len", 32),
        ["extraction.max_length: 64 exceeds the 32 positions of ladder model 'smoke-a' (ladder.train.seq_len)"],
    ),
    "ladder seq_len beyond its training text": (
        _train_tokens(1000, 5000),
        ["ladder.train.seq_len: 5000 exceeds the 1000 tokens of the ladder's training text", "train_tokens.json"],
    ),
    "window beyond a local model's positions": (
        _local_model(max_length=4096),
        [
            "models[0].max_length: 4096 exceeds the 2048 positions of local model 'mine'",
            "max_position_embeddings); write `max_length: 2048` (or less) at models[0].max_length",
        ],
    ),
    "default window beyond a local model's positions": (
        _positions(32),
        ["extraction.max_length: 64 exceeds the 32 positions of local model 'mine'", "model/config.json"],
    ),
    "the schema's default window beyond a local model's positions": (
        _unset_max_length_with_positions(128),
        ["extraction.max_length: 1024 (the default, where a configuration does not set it) exceeds the 128 positions"],
    ),
    "local config.json is not JSON": (
        _broken_model_config,
        ["models[0].path", "model/config.json:2:21: not valid JSON (Expecting property name"],
    ),
    # each stride error names the key the value was written at
    "extraction stride": (_set("extraction.stride", 64), ["extraction.stride: 64 must be in 1..max_length-1 = 63"]),
    "model stride": (_local_model(stride=64), ["models[0].stride: 64 must be in 1..max_length-1 = 63"]),
    "dataset window stride": (
        _set("datasets.pydoc.windows", {"stride": 64}),
        ["datasets.pydoc.windows.stride: 64 must be in 1..max_length-1 = 63", "extraction.max_length"],
    ),
    "default stride against a dataset window": (
        _stride_against_window,
        ["extraction.stride: 40 must be in 1..max_length-1 = 31 (max_length 32 from datasets.pydoc.windows.max_length"],
    ),
    # local files: format, encoding, compression, records
    "unknown file suffix": (_file_dataset("data.csv", b"a,b\n"), ["datasets.mine.format", "'.csv'", "format: jsonl"]),
    "text file not UTF-8": (
        _file_dataset("data.txt", b"hello\nw\xe9rld\n"),
        ["datasets.mine", "data.txt:2: not UTF-8 (byte 0xe9 at byte offset 7"],
    ),
    "jsonl line not UTF-8": (
        _file_dataset("data.jsonl", b'{"text": "caf\xe9"}\n'),
        ["datasets.mine", "data.jsonl:1: not UTF-8 (byte 0xe9 at byte offset 13"],
    ),
    "a late line not UTF-8 (the whole file is checked before any job)": (
        _file_dataset("data.jsonl", b'{"text": "one"}\n' * 3 + b'{"text": "t\xffo"}\n'),
        ["datasets.mine", "data.jsonl:4: not UTF-8 (byte 0xff at byte offset 59"],
    ),
    "corrupt gzip": (
        _file_dataset("data.jsonl.gz", b"\x1f\x8b\x08\x00not really gzip"),
        ["datasets.mine.path", "data.jsonl.gz is not a readable gzip file"],
    ),
    "jsonl line that is a list": (
        _file_dataset("data.jsonl", _lines(["a", "b"])),
        ["datasets.mine", "data.jsonl:1): the record is an array, not an object"],
    ),
    "null text": (
        _file_dataset("data.jsonl", _lines({"text": None})),
        ["data.jsonl:1): text field 'text' holds null", "skip_invalid_records"],
    ),
    "number text": (_file_dataset("data.jsonl", _lines({"text": 42})), ["data.jsonl:1): text field 'text' holds a"]),
    "dict text": (
        _file_dataset("data.JSONL", _lines({"text": {"nested": "x"}})),
        ["data.JSONL:1): text field 'text' holds an object"],
    ),
    "bool in a text list": (
        _file_dataset("data.jsonl", _lines({"text": ["a", True]})),
        ["text field 'text' holds a boolean inside its list"],
    ),
    # every line of a local file, not only the first, before any job (it used to fail the corpus job)
    "a late line that is not JSON": (
        _file_dataset("data.jsonl", _lines({"text": "one"}, {"text": "two"}, {"text": "three"}) + b'{"text": "x"\n'),
        ["datasets.mine", "data.jsonl:4 is not valid JSON (Expecting ',' delimiter, column 13); fix or remove that line"],
    ),
    "a late record without text": (
        _file_dataset("data.jsonl", _lines({"text": "one"}, {"text": "two"}, {"text": None})),
        ["datasets.mine (", "data.jsonl:3): text field 'text' holds null", "skip_invalid_records: true"],
    ),
    # unknown keys: did you mean
    "misspelt top-level key": (_set("extraktion", {}), ["(top level): unknown key ('extraktion' was unexpected); "
                                                        "did you mean 'extraction'?"]),  # fmt: skip
    "misspelt model key": (
        _models({"name": "m", "family": "f", "hub_id": "a/b", "revison": "v1"}),
        ["models[0]: unknown key ('revison' was unexpected); did you mean 'revision'?"],
    ),
    # what passed silently: a k no rank can reach, a wrong published size
    "law_k above the ladder's vocabulary": (
        _set("analysis.law_k", [1, 10, 5000]),
        ["analysis.law_k: k = [5000] exceeds |V| = 512 of model 'smoke-a' (ladder.tokenizer.vocab_size)",
         "keep every k at most 512"],  # fmt: skip
    ),
    "rbp_k above a local model's vocabulary": (
        _k_above_local_vocabulary,
        ["figures.rbp_k: k = [100] exceeds |V| = 64 of model 'mine'", "model/config.json: vocab_size)"],
    ),
    "wrong S on a path: model": (
        _local_model(S=12345),
        ["models[0].S: model 'mine' says S = 12345, but its config.json describes 2256 non-embedding parameters; "
         "write `S: 2256` or remove `S:`"],  # fmt: skip
    ),
}


def assert_one_line_errors(output: str, file: str = "config/case.yaml") -> None:
    """Every configuration error as one line naming the file, `config error in <file>: <key>: ...`, and no
    traceback or Snakemake wrapping around it."""
    errors = [line for line in output.splitlines() if line.startswith("config error in ")]
    assert errors, output[-3000:]
    assert all(line.startswith(f"config error in {file}") for line in errors), errors
    assert "Traceback" not in output and "WorkflowError" not in output and "common.smk" not in output, output[-3000:]


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("hardening"))


@contextmanager
def _case(case: str, workdir: Path, tmp_path: Path) -> Iterator[dict]:
    """PLAN_ERRORS[case]'s configuration, with the ladder's training-text count it needs in `workdir` meanwhile."""
    mutate, _ = PLAN_ERRORS[case]
    config = copy.deepcopy(SMOKE)
    mutate(config, tmp_path)
    counts = workdir / LADDER / "train_tokens.json"
    if (tmp_path / "train_tokens.json").exists():
        counts.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "train_tokens.json", counts)
    try:
        yield config
    finally:
        counts.unlink(missing_ok=True)


@pytest.mark.parametrize("case", sorted(PLAN_ERRORS))
def test_refused_before_any_job(case: str, workflow_copy: Path, tmp_path: Path) -> None:
    """Through the configuration stage in-process (tests/plan_check.py), as the test below does for real."""
    with _case(case, workflow_copy, tmp_path) as config:
        output = refused(workflow_copy, config)
    assert output is not None, f"{case}: accepted"
    assert_one_line_errors(output)
    for text in PLAN_ERRORS[case][1]:
        assert text in output, f"{text!r} not in:\n{output}"
    assert not (workflow_copy / "results").exists(), "no job may start on a bad configuration"


# the in-process refusals (above, and test_errors' CONFIG_ERRORS) are what the workflow prints: three through
# `snakemake -n` for real, a check of the ladder's files, of a data file's every line and of a model's weights
THROUGH_SNAKEMAKE = ("ladder seq_len beyond its training text", "a late line that is not JSON", "wrong S on a path: model")


@pytest.mark.parametrize("case", THROUGH_SNAKEMAKE)
def test_the_workflow_prints_the_configuration_stages_lines(case: str, workflow_copy: Path, tmp_path: Path) -> None:
    with _case(case, workflow_copy, tmp_path) as config:
        expected = refused(workflow_copy, config)  # leaves config/case.yaml in place
        result = snakemake(workflow_copy, "-n", "--cores", "1", "--configfile", "config/case.yaml")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and expected, output[-3000:]
    assert_one_line_errors(output)
    assert [line for line in output.splitlines() if line.startswith("config error in ")] == expected.splitlines()
    assert not (workflow_copy / "results").exists()


def test_duplicate_yaml_key_is_refused_with_file_and_line(workflow_copy: Path) -> None:
    text = (REPO / "config/smoke.yaml").read_text().replace("  max_length: 64 ", "  max_length: 32\n  max_length: 64 ")
    (workflow_copy / "config/dup.yaml").write_text(text)
    line = text.splitlines().index("  max_length: 64                 # the smoke models have 64 positions") + 1
    result = snakemake(workflow_copy, "-n", "--cores", "1", "--configfile", "config/dup.yaml")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert f"config/dup.yaml:{line}: duplicate key 'max_length' (first given on line {line - 1})" in output
    assert not (workflow_copy / "results").exists()


def test_several_problems_give_one_line_each_naming_the_users_file(workflow_copy: Path) -> None:
    """A partial file's errors name it (not workflow/schemas/config.schema.yaml, not common.smk), one line each, with the fix."""
    (workflow_copy / "config/partial.yaml").write_text("extraction:\n  dtype: float64\n  batchsize: 4\n")
    result = snakemake(workflow_copy, "-n", "--cores", "1", "--configfile", "config/partial.yaml")
    output = _output(result)
    assert result.returncode == 1
    assert_one_line_errors(output, "config/partial.yaml")
    errors = [line for line in output.splitlines() if line.startswith("config error in ")]
    assert errors == [
        "config error in config/partial.yaml: extraction: unknown key ('batchsize' was unexpected); "
        "did you mean 'batch_size'?",
        "config error in config/partial.yaml: extraction.dtype: 'float64' is not one of "
        "['float32', 'bfloat16', 'float16']; write one of these",
    ]
    assert "schema.yaml" not in output and not (workflow_copy / "results").exists()


def test_a_file_without_datasets_says_what_it_inherits(workflow_copy: Path) -> None:
    """Overriding a few settings of the default run is legitimate: a note, once, naming what comes with it."""
    default = yaml.safe_load((REPO / "config/config.yaml").read_text())
    (workflow_copy / "config/partial.yaml").write_text("extraction:\n  batch_size: 4\n")
    result = snakemake(workflow_copy, "-n", "--cores", "1", "--configfile", "config/partial.yaml")
    assert result.returncode == 0, _output(result)[-3000:]
    notes = [line for line in _output(result).splitlines() if "sets no `datasets:`" in line]
    assert notes == [
        f"rankscale: note: config/partial.yaml sets no `datasets:`, so it extends config/config.yaml and inherits "
        f"its datasets {sorted(default['datasets'])}; a ladder of {len(default['ladder']['sizes'])} sizes trained "
        "here; add `datasets:` to make it a complete configuration of its own"
    ]
    complete = snakemake(workflow_copy, "-n", "--cores", "1", "--configfile", "config/smoke.yaml")
    assert complete.returncode == 0 and "datasets:`" not in _output(complete)


def test_unreadable_yaml_names_file_and_line(workflow_copy: Path) -> None:
    """Where rankscale reads a config file itself (share.py; Snakemake refuses such a file before the workflow
    runs: docs/troubleshooting.md), a YAML syntax error is one line with the file and the line."""
    import sys

    (workflow_copy / "config/broken.yaml").write_text("extraction:\n  dtype: float32\n  batch_size: [4\n")
    result = subprocess.run(
        [sys.executable, "workflow/share.py", "restore", "--configfile", "config/broken.yaml"],
        cwd=workflow_copy, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "config error in config/broken.yaml:4: not valid YAML: expected ',' or ']', but got '<stream end>' "
        "(column 1); fix the syntax at that line"
    ), result.stderr


def test_one_bad_extraction_value_names_only_that_key(workflow_copy: Path) -> None:
    config = copy.deepcopy(SMOKE)
    config["extraction"]["dtype"] = "float64"
    output = refused(workflow_copy, config) or ""
    assert "config error in config/case.yaml: extraction.dtype: 'float64' is not one of" in output
    assert "Unevaluated properties" not in output and "was unexpected" not in output


def _output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


def test_accepted_inputs_plan(workflow_copy: Path, tmp_path: Path) -> None:
    """What is handled rather than refused: upper-case suffixes, declared formats, skipped records,
    and two local paths the old key mixed up ('ckpt v1', 'ckpt-v1') get a tokenizer each."""
    config = copy.deepcopy(SMOKE)
    (tmp_path / "A.JSONL.GZ").write_bytes(gzip.compress(_lines({"text": "hello"}, {"text": "world"})))
    (tmp_path / "notes.data").write_text("plain text")
    config["datasets"]["upper"] = {"source": "local", "path": str(tmp_path / "A.JSONL.GZ")}
    config["datasets"]["declared"] = {"source": "local", "path": str(tmp_path / "notes.data"), "format": "txt"}
    (tmp_path / "nulls.jsonl").write_bytes(_lines({"text": None}, {"text": "fine"}))
    config["datasets"]["nulls"] = {
        "source": "local",
        "path": str(tmp_path / "nulls.jsonl"),
        "skip_invalid_records": True,
    }
    for name in ("ckpt v1", "ckpt-v1"):
        tiny_model_dir(tmp_path / name)
    config["models"] = [
        {"name": "v1-space", "family": "v", "path": str(tmp_path / "ckpt v1")},
        {"name": "v1-dash", "family": "v", "path": str(tmp_path / "ckpt-v1")},
    ]
    (workflow_copy / "config/ok.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = planned_jobs(workflow_copy, "--cores", "1", "--configfile", "config/ok.yaml")
    keys = {job.split("tok=")[1].rstrip("]") for job in jobs if job.startswith("tokenize[") and "dataset=upper" in job}
    ladder = f"ladder-{Path(ladder_dir(config)).name}"
    assert keys == {ladder, text_key(str(tmp_path / "ckpt v1")), text_key(str(tmp_path / "ckpt-v1"))}, jobs
    assert len(keys) == 3
    assert text_key("EleutherAI/pythia-14m") == "EleutherAI--pythia-14m"  # existing keys stay as they were
    assert text_key("Qwen/Qwen2.5-0.5B@main") == "Qwen--Qwen2.5-0.5B@main"
    assert not (workflow_copy / "results").exists()


def test_each_configuration_has_its_own_ladder() -> None:
    """config/smoke.yaml and the default no longer share (and retrain) one ladder directory."""
    default = yaml.safe_load((REPO / "config/config.yaml").read_text())
    assert LADDER != ladder_dir(default)
    assert LADDER.startswith("resources/ladder/") and len(LADDER.rsplit("/", 1)[1]) == 12
    same_text = copy.deepcopy(SMOKE)
    same_text["ladder"]["train"]["tokens"] *= 2  # a model setting: the ladder_train rule's params
    same_text["ladder"]["sizes"].append({"name": "smoke-d", "layers": 1, "d_model": 8, "heads": 2})
    assert ladder_dir(same_text) == LADDER
    other_text = copy.deepcopy(SMOKE)
    other_text["ladder"]["corpus"][1]["max_chars"] = 1000
    other_vocab = copy.deepcopy(SMOKE)
    other_vocab["ladder"]["tokenizer"]["vocab_size"] = 1024
    assert len({LADDER, ladder_dir(other_text), ladder_dir(other_vocab)}) == 3


# ---------------------------------------------------------------- temporaries


def test_temporaries_get_the_umask_and_stale_ones_go(tmp_path: Path) -> None:
    old = os.umask(0o022)
    os.umask(old)
    target = tmp_path / "out.json"
    stale = tmp_path / ".out.json.abcd1234.tmp"
    stale.write_text("from a killed job")
    other = tmp_path / ".out.json.x.abcd1234.tmp"  # not a temporary of out.json
    other.write_text("keep")
    with atomic_path(target) as tmp:
        tmp.write_text("{}")
    assert not stale.exists() and other.exists()
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~old
    (tmp_path / ".model.abcd1234.tmp").mkdir()
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "weights").write_text("w")
    assert not (tmp_path / ".model.abcd1234.tmp").exists()
    assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o777 & ~old


# ---------------------------------------------------------------- on a finished run


def _run(workdir: Path, config: str, *targets: str, keep_going: bool = False) -> subprocess.CompletedProcess[str]:
    args = [*targets, "--cores", "2", "--configfile", config] + (["--keep-going"] if keep_going else [])
    return snakemake(workdir, *args)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_set("datasets.pydoc.windows", {"max_length": 4096}), "datasets.pydoc.windows.max_length: 4096 exceeds"),
        (_set("ladder.train.seq_len", 10**7), "ladder.train.seq_len: 10000000 exceeds the"),
        (_set("ladder.train.seq_len", 32), "extraction.max_length: 64 exceeds the 32 positions"),
    ],
    ids=["dataset window", "seq_len beyond the text", "seq_len below the window"],
)
def test_late_checks_now_come_before_any_deletion(
    smoke_run: Path, tmp_path: Path, mutate: Callable[[dict, Path], None], expected: str
) -> None:
    """A real run (not -n): these used to fail inside the job, after Snakemake had deleted the rank
    arrays or checkpoints the job would replace."""
    work = copy_run(smoke_run, tmp_path / "w")
    before = file_states(work, *EVERYTHING)
    config = copy.deepcopy(SMOKE)
    mutate(config, tmp_path)
    (work / "config/late.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = _run(work, "config/late.yaml")
    assert result.returncode == 1 and expected in _output(result), _output(result)[-3000:]
    assert file_states(work, *EVERYTHING) == before


@pytest.mark.slow
def test_job_time_refusals_name_model_and_key(smoke_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What only the job can know: the loaded tokenizer and output layer, the worker's devices,
    a hub download; and a rank array copied into another model's place."""
    work = copy_run(smoke_run, tmp_path / "w")
    before = file_states(work, *EVERYTHING)
    tiny_model_dir(work / "wide", vocab_size=4096)  # the ladder tokenizer has 512 tokens
    tokenizer = f"{LADDER}/tokenizer"
    twin = {"family": "twin", "path": f"{LADDER}/models/smoke-a", "tokenizer": tokenizer}
    config = copy.deepcopy(SMOKE)
    config["models"] = [
        {"name": "wide", "family": "w", "path": "wide", "tokenizer": tokenizer},
        {"name": "wide-ok", "family": "w", "path": "wide", "tokenizer": tokenizer, "allow_vocab_gap": True},
        {"name": "gpu", "family": "g", "path": f"{LADDER}/models/smoke-b", "tokenizer": tokenizer, "device": "cuda"},
        {"name": "ghost-a", "family": "h", "hub_id": "no-such-org/no-such-model"},
        {"name": "ghost-b", "family": "h", "hub_id": "no-such-org/no-such-model"},
        {"name": "twin-a", **twin},
        {"name": "twin-b", **twin},
    ]
    (work / "config/job.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    monkeypatch.chdir(work)  # the relative model paths (their weights digests, in the keys) as Snakemake reads them
    job = files(work, "config/job.yaml")
    targets = [job.ranks(m, "humaneval") for m in ("wide", "wide-ok", "gpu", "ghost-a", "twin-a")]
    result = _run(work, "config/job.yaml", *targets, keep_going=True)
    assert result.returncode == 1, _output(result)[-3000:]

    def log(step: str, model: str, path: str) -> str:
        return (work / "logs" / step / model / f"{Path(path).stem}.log").read_text()

    wide = log("extract", "wide", job.ranks("wide", "humaneval"))
    assert "model 'wide': output layer has 4096 columns but the tokenizer only 512 tokens" in wide
    assert "beyond the 128 allowed as padding" in wide and "models[0].allow_vocab_gap: true" in wide
    assert not (work / job.ranks("wide", "humaneval")).exists()
    assert (work / job.ranks("wide-ok", "humaneval", "json")).exists()  # opted in

    gpu = log("extract", "gpu", job.ranks("gpu", "humaneval"))
    import torch

    if not torch.cuda.is_available():
        assert "model 'gpu': models[2].device is 'cuda', but this machine" in gpu and "available: ['cpu'" in gpu
        assert "could not load" not in gpu  # refused before loading anything

    ghost = job.tokenizers["ghost-a"]
    assert ghost == job.tokenizers["ghost-b"] == "no-such-org--no-such-model@main"
    ghost_log = (work / "logs/tokenize" / ghost / f"{job.token_keys[(ghost, 'humaneval')]}.log").read_text()
    assert "tokenizer of models ['ghost-a', 'ghost-b'] (no-such-org/no-such-model@main)" in ghost_log

    # a rank array copied into another model's folder (the same weights: identities agree)
    for ext in ("npz", "json"):
        shutil.copy2(work / job.ranks("twin-a", "humaneval", ext), tmp_path / f"twin.{ext}")
        (work / job.ranks("twin-b", "humaneval", ext)).parent.mkdir(exist_ok=True)
        shutil.copy(tmp_path / f"twin.{ext}", work / job.ranks("twin-b", "humaneval", ext))
    result = _run(work, "config/job.yaml", job.summary("twin-b", "humaneval"))
    assert result.returncode == 1
    twin_log = log("summarize", "twin-b", job.summary("twin-b", "humaneval"))
    assert f"{job.ranks('twin-b', 'humaneval')}: rank array of another model or dataset" in twin_log
    assert "model: array has 'twin-a', its path says 'twin-b'" in twin_log

    after = file_states(work, *EVERYTHING)
    assert {path: after[path] for path in before} == before, "finished outputs must not change"


@pytest.mark.slow
def test_corpus_jobs_read_by_content_and_name_bad_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the first record (which the plan checks, with the whole file's encoding): bad records fail the
    corpus job with file:line, or are skipped and counted where the entry says so; `.JSONL` is JSON lines."""
    from tests.test_corpus import write_records

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    work = copy_workflow(tmp_path / "w")
    data = tmp_path / "data"
    data.mkdir()
    (data / "Upper.JSONL").write_bytes(_lines({"text": "one"}, {"text": "two"}, {"text": "three"}))
    (data / "skip.jsonl").write_bytes(_lines({"text": "one"}, {"text": None}, {"text": 3}, [1], {"text": "four"}))
    hub = data / "hubby"
    (hub / "default").mkdir(parents=True)
    write_records(hub / "default/train.jsonl", [{"text": "fine"}, {"text": None}])
    (hub / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: default/train.jsonl\n---\n"
    )
    config = copy.deepcopy(SMOKE)
    config["datasets"] = {
        "upper": {"source": "local", "path": str(data / "Upper.JSONL")},
        "skip": {"source": "local", "path": str(data / "skip.jsonl"), "skip_invalid_records": True},
        "hub": {"source": "hub", "path": str(hub)},
        "hubskip": {"source": "hub", "path": str(hub), "skip_invalid_records": True},
    }
    # not config/corpus.yaml: its run would be `corpus`, the name of results/corpus/ (rankscale.layout.RESERVED_RUNS)
    (work / "config/corpora.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    corpora = files(work, "config/corpora.yaml")
    targets = [corpora.corpus(d) for d in config["datasets"]]
    result = _run(work, "config/corpora.yaml", *targets, keep_going=True)
    assert result.returncode == 1

    def texts(dataset: str) -> list[str]:
        lines = (work / corpora.corpus(dataset)).read_text().splitlines()
        return [json.loads(line)["text"] for line in lines]

    def sidecar(dataset: str) -> dict:
        return json.loads((work / corpora.corpus(dataset, "json")).read_text())

    assert texts("upper") == ["one", "two", "three"]
    assert texts("skip") == ["one", "four"] and sidecar("skip")["skipped_records"] == 3
    assert texts("hubskip") == ["fine"] and sidecar("hubskip")["skipped_records"] == 1
    assert sidecar("upper")["skipped_records"] == 0
    hub_log = (work / "logs/corpus" / f"{corpora.corpus_keys['hub']}.log").read_text()
    assert "datasets.hub (record 1): text field 'text' holds null" in hub_log
