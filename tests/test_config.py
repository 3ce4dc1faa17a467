"""Validation fills in the schema's defaults, params are canonical, datasets are checked per source, and
a rank array's identity is one type that reads the sidecars written before it existed (that defaults
live once, in the schema: tests/test_defaults.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rankscale.check import Checked, check, main
from rankscale.config import ConfigError, dataset_spec, validate
from rankscale.formats import RANK_FORMAT
from rankscale.identity import RankIdentity
from rankscale.plan import build_plan, ladder_dir
from rankscale.plan.errors import error_lines
from rankscale.plan.overrides import parse_overrides
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())


def test_validation_fills_every_default_and_normalises_numbers() -> None:
    config = validate({"datasets": {"d": {"source": "packaged", "name": "humaneval"}}, "models": None})
    assert config["models"] == []
    assert config["extraction"]["batch_size"] == 1 and config["extraction"]["ties"] == "ge"
    assert config["figures"] == {
        "rbp_k": [10, 50, 100],
        "large_k": [1000, 20000, 30000],
        "snr_threshold": 2,
        "emergence_extrapolate": 0,
    }
    assert config["analysis"]["bootstrap"] == {"replicates": 1000, "seed": 0, "level": 0.95, "refits": 100}
    assert config["datasets"]["d"]["split_heldout"] == "all" and config["datasets"]["d"]["seed"] is None
    assert config["tokenization"] == {"add_special_tokens": True}  # each document starts as in training
    as_floats = validate(
        {"datasets": {"d": {"source": "packaged", "name": "humaneval"}}, "extraction": {"max_length": 64.0}}
    )
    assert as_floats["extraction"]["max_length"] == 64 and isinstance(as_floats["extraction"]["max_length"], int)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"source": "local", "path": "x.jsonl", "streaming": True},
            "datasets.d: unknown key ('streaming' was unexpected); another kind of entry",
        ),
        ({"source": "hub", "path": "org/data", "split_paragraphs": True}, "('split_paragraphs' was unexpected)"),
        ({"source": "hub", "path": "org/data", "split_heldout": "train"}, "('split_heldout' was unexpected)"),
        ({"source": "packaged", "name": "humaneval", "text_fields": ["x"]}, "('text_fields' was unexpected)"),
        ({"source": "local"}, "datasets.d: 'path' is a required property"),
        ({"source": "packaged"}, "datasets.d: 'name' is a required property"),
        (
            {"source": "hub", "path": "org/data", "shuffle_buffer": 0},
            "datasets.d.shuffle_buffer: 0 is less than the minimum of 1",
        ),
    ],
)
def test_dataset_keys_are_checked_per_source(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        dataset_spec(spec, "datasets.d")
    assert message in str(err.value)


def test_one_bad_extraction_value_gives_one_line() -> None:
    """A bad value under `extraction` names that key only, not every other key as 'unexpected'."""
    config = copy.deepcopy(DEFAULT)
    config["extraction"]["dtype"] = "float64"
    with pytest.raises(ConfigError) as err:
        validate(config)
    lines = str(err.value).splitlines()
    assert lines == ["extraction.dtype: 'float64' is not one of ['float32', 'bfloat16', 'float16']; write one of these"]


def test_identity_reads_a_sidecar_written_before_it_existed() -> None:
    """Sidecars of earlier versions hold the same identity but for a format bump, which is said by name."""
    old = json.loads((REPO / "tests/data/sidecar_before_identity.json").read_text())
    identity = build_plan(DEFAULT)["ladder-l4-d256"].identity("humaneval")
    # the ladder has since moved to resources/ladder/<key>/ (one per configuration): a new location
    ladder = ladder_dir(DEFAULT)
    old.update(location=f"{ladder}/models/ladder-l4-d256", tokenizer=f"{ladder}/tokenizer")
    # the one difference is the rank format's bump (2: documents begin with their tokenizer's start tokens),
    # which recomputes the array by design
    assert identity.diff(RankIdentity.from_sidecar(old)) == [f"rank_format: array has 1, config says {RANK_FORMAT.version}"]
    assert all(old[key] == value for key, value in identity.sidecar().items() if key != "rank_format")
    # the params Snakemake compares: the same content as before (and the format), keys now sorted
    assert identity.params() == {
        "dtype": "float32",
        "location": f"{ladder}/models/ladder-l4-d256",
        "max_length": 128,
        "max_windows_per_doc": None,
        "rank_format": RANK_FORMAT.version,
        "revision": None,
        "stride": None,
        "ties": "ge",
        "tokenizer": f"{ladder}/tokenizer",
    }
    assert list(identity.params()) == sorted(identity.params())


def test_identity_diff_names_each_difference() -> None:
    identity = build_plan(DEFAULT)["ladder-l4-d256"].identity("humaneval")
    other = RankIdentity.from_params(
        {**identity.params(), "dtype": "bfloat16", "head_dtype": "float32", "max_length": 64.0}
    )
    assert identity.diff(other) == [
        "dtype: array has 'bfloat16', config says 'float32'",
        "head_dtype: array has 'float32', config says None",
        "max_length: array has 64.0, config says 128",
    ]
    assert identity.diff(RankIdentity.from_params({**identity.params(), "max_length": 128.0})) == []


def test_the_schema_defines_exactly_the_dataset_sources_of_the_code() -> None:
    """config.py reads the source names from the schema (`$defs/<name>_dataset`); the code's registry is SOURCES."""
    from rankscale.config import load_schema
    from rankscale.sources import SOURCES

    assert load_schema()["$defs"]["dataset"]["properties"]["source"]["enum"] == sorted(SOURCES)


# `rankscale check` and `--config` overrides: what Snakemake's command line reads, checked by the workflow's own stage
SMOKE_FILE = REPO / "config/smoke.yaml"


def checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: list[Path], overrides: list[str]) -> Checked:
    """`rankscale check FILES --config OVERRIDES`, in-process, from the clone's root as snakemake runs."""
    monkeypatch.chdir(REPO)
    return check(files, overrides, REPO / "config/config.yaml")


def with_analysis(path: Path, **settings: Any) -> Path:
    """The smoke configuration with these `analysis:` settings, written to `path`."""
    config = yaml.safe_load(SMOKE_FILE.read_text())
    config["analysis"].update(settings)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def one_line(result: Checked) -> str:
    assert len(result.errors) == 1 and not result.summary, result
    assert "Traceback" not in result.errors[0] and result.errors[0].startswith("config error in "), result
    return result.errors[0]


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ('extraction={"max_length": 64}', {"extraction": {"max_length": 64}}),  # Snakemake's text: '64'
        ("extraction={max_length: 64, dtype: bfloat16}", {"extraction": {"max_length": 64, "dtype": "bfloat16"}}),
        ("analysis={law_k: [1, 10], bootstrap: {level: 0.9}}", {"analysis": {"law_k": [1, 10], "bootstrap": {"level": 0.9}}}),
        ('models=[{name: m, revision: "0123"}]', {"models": [{"name": "m", "revision": "0123"}]}),  # quoted: text
        ("run=0123", {"run": 123}),  # a top-level value is typed as Snakemake types it
        ("run=my-study", {"run": "my-study"}),
    ],
)
def test_override_values_are_read_as_yaml(argument: str, value: dict[str, Any]) -> None:
    assert parse_overrides([argument]) == value


def test_a_numeric_override_inside_a_section_is_an_integer(tmp_path, monkeypatch) -> None:
    """`--config 'extraction={"max_length": 64}'` used to be refused as `'64' is not of type 'integer'`."""
    result = checked(tmp_path, monkeypatch, [SMOKE_FILE], ['extraction={"max_length": 32}'])
    assert not result.errors and "  results:  results/smoke-" in "\n".join(result.summary), result


def test_a_dotted_override_is_refused_in_one_line_with_the_form_that_works(tmp_path, monkeypatch) -> None:
    """Snakemake's command line stops at `--config extraction.max_length=64` with a traceback (top-level keys only)."""
    line = one_line(checked(tmp_path, monkeypatch, [], ["extraction.max_length=64"]))
    assert line.startswith("config error in --config: extraction.max_length: "), line
    assert "write --config 'extraction={max_length: 64}'" in line, line


def test_an_override_error_names_config_and_the_key(tmp_path, monkeypatch) -> None:
    """A typo given with --config is not blamed on the file that sets the same section."""
    notes = with_analysis(tmp_path / "notes.yaml", law_form="power_law")  # the file sets `analysis:` too
    line = one_line(checked(tmp_path, monkeypatch, [notes], ['analysis={"law_from": "offset_power_law"}']))
    assert line == "config error in --config: analysis: unknown key ('law_from' was unexpected); did you mean 'law_form'?"


def test_an_error_in_the_file_still_names_the_file_beside_overrides(tmp_path, monkeypatch) -> None:
    """Overrides of a section claim only the keys they set: a k of the file's, in the same section, is the file's."""
    study = with_analysis(tmp_path / "study.yaml", law_k=[1, 5000])  # |V| = 512
    line = one_line(checked(tmp_path, monkeypatch, [study], ["analysis={law_form: power_law}"]))
    assert line.startswith(f"config error in {study}: analysis.law_k: k = [5000] exceeds |V| = 512"), line


def test_a_yaml_error_names_file_line_and_column(tmp_path, monkeypatch) -> None:
    """Snakemake says `Config file is not valid JSON or YAML`, naming neither file nor line."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("datasets:\n  mine: {source: local, path: a.jsonl\nmodels: []\n")
    line = one_line(checked(tmp_path, monkeypatch, [broken], []))
    assert line.startswith(f"config error in {broken}:3: not valid YAML: ") and "(column " in line, line


def test_an_override_run_says_where_it_writes(tmp_path, monkeypatch) -> None:
    result = checked(tmp_path, monkeypatch, [], ['analysis={"law_form": "offset_power_law"}'])
    assert not result.errors, result
    notes = [n for n in result.notes if "--config" in n]
    assert len(notes) == 1 and notes[0].startswith("rankscale: note: ") and "results/default-987c3f58/" in notes[0]


def test_rankscale_check_prints_what_it_plans(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    assert main(["check", "config/smoke.yaml"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "rankscale: config/smoke.yaml: valid; nothing was run",
        "  models:   3 in 1 family (ladder): smoke-a, smoke-b, smoke-c",
        "  datasets: 2: humaneval, pydoc",
        "  results:  results/smoke/",
    ]
    assert main(["check", "config/smoke.yaml", "--config", "extraction={max_length: 0}"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["config error in --config: extraction.max_length: 0 is less than the minimum of 2; use a value of at least 2"]


def test_the_console_script_is_declared() -> None:
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["rankscale"] == "rankscale.check:main"


@pytest.mark.parametrize(
    ("line", "overrides", "source"),
    [
        ("(top level): unknown key ('extraktion' was unexpected); did you mean 'extraction'?", {"extraktion": 1}, "--config"),
        ("analysis.law_k: k = [5000] exceeds |V| = 512", {"analysis": {"law_form": "power_law"}}, "study.yaml"),
        ("analysis: unknown key ('law_from' was unexpected)", {"analysis": {"law_from": 1}}, "--config"),
        ("ladder.train.seq_len: 4096 exceeds the 100 tokens", {"ladder": {"train": {"tokens": 100}}}, "--config"),
        ("models[0].path: model 'm' points at '/no'", {"models": [{"name": "m", "path": "/no"}]}, "--config"),
        ("extraction.dtype: 'float64' is not one of", {"run": "x"}, "study.yaml"),
    ],
)  # fmt: skip
def test_a_key_the_overrides_set_is_blamed_on_config(tmp_path, line, overrides, source) -> None:
    """The most specific source: the overrides where they set the key (they win over every file), or set its
    section where no file does; else the file that sets the section, as before."""
    study = tmp_path / "study.yaml"
    study.write_text("analysis: {law_k: [1, 5000]}\nextraction: {dtype: float64}\ndatasets: {}\n")
    [shown] = error_lines(ConfigError(line), [study], None, overrides)
    assert shown.startswith(f"config error in {source if source == '--config' else study}: {line}"), shown
