"""Configuration checks: schema and plan errors name the key and value before any job runs."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from rankscale.config import validate
from rankscale.plan import ConfigError, build_plan, check_written, ladder_dir, slug
from tests.conftest import REPO, copy_workflow, snakemake


@pytest.fixture
def smoke_config() -> dict:
    return yaml.safe_load((REPO / "config/smoke.yaml").read_text())


def test_the_ladder_directory_is_computed_in_one_place() -> None:
    """`ladder_dir` hashes the ladder's corpus and every evaluated dataset: the plan computes it once (build_plan)
    and hands it on (its checks, the layout), so no second spelling of the key can drift from the first."""
    calls = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / "src/rankscale").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "ladder_dir(" in line and "def ladder_dir(" not in line and not line.lstrip().startswith("#")
    ]
    assert len(calls) == 1 and calls[0].startswith("src/rankscale/plan/models.py:"), calls


def test_ladder_and_external_models_resolve(smoke_config, tmp_path):
    config = copy.deepcopy(smoke_config)
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    (tmp_path / "ckpt" / "model.safetensors").write_bytes(b"")
    config["models"] = [
        {"name": "local-one", "family": "mine", "path": str(tmp_path / "ckpt"), "dtype": "bfloat16", "batch_size": 3},
        {"name": "hub-one", "family": "mine", "hub_id": "EleutherAI/pythia-70m", "revision": "step1000"},
    ]
    plans = build_plan(config)
    assert list(plans) == ["smoke-a", "smoke-b", "smoke-c", "local-one", "hub-one"]
    assert plans["smoke-a"].tokenizer_key == f"ladder-{Path(ladder_dir(config)).name}" and plans["smoke-a"].source.local
    # the ladder's directory, computed once by build_plan, is the one its models load from and the layout reads
    assert plans.ladder.dir == ladder_dir(config) and plans["smoke-a"].source.location == plans.ladder.model("smoke-a")
    assert plans["local-one"].identity("d").dtype == "bfloat16" and plans["local-one"].runtime.batch_size == 3
    assert plans["hub-one"].identity("d").dtype == "float32"  # the global default
    assert plans["hub-one"].tokenizer_key == slug("EleutherAI/pythia-70m@step1000") == "EleutherAI--pythia-70m@step1000"
    # runtime settings are not part of what a rank array depends on
    assert "batch_size" not in plans["local-one"].identity("d").params()


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ([{"name": "smoke-a", "family": "x", "hub_id": "a/b"}], "duplicate model name 'smoke-a'"),
        ([{"name": "m", "family": "x", "path": "/no/such/dir"}], "'/no/such/dir', which does not exist"),
        ([{"name": "m", "family": "x"}], "needs `hub_id`"),
        ([{"name": "m", "family": "", "hub_id": "a/b"}], "models\\[0\\].family: '' should be non-empty"),
    ],
)
def test_plan_errors_name_key_and_value(smoke_config, models, message):
    config = copy.deepcopy(smoke_config)
    config["models"] = models
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("`", "`")):
        build_plan(config)


def test_single_model_family_warns(smoke_config):
    config = copy.deepcopy(smoke_config)
    config["models"] = [{"name": "lonely", "family": "solo", "hub_id": "a/b"}]
    with pytest.warns(UserWarning, match="family 'solo' has only"):
        build_plan(config)


def test_schema_rejects_unknown_key_before_any_job(tmp_path, smoke_config):
    workdir = copy_workflow(tmp_path / "wf")
    config = copy.deepcopy(smoke_config)
    config["extraction"]["batchsize"] = 4
    (workdir / "config/bad.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, "-n", "--cores", "1", "--configfile", "config/bad.yaml")
    assert result.returncode != 0
    assert "batchsize" in result.stdout + result.stderr
    assert not (workdir / "results").exists()


def test_pinned_model_revision_does_not_reach_a_shared_tokenizer(smoke_config):
    config = copy.deepcopy(smoke_config)
    commit = "a" * 40
    config["models"] = [
        {"name": "q-small", "family": "q", "hub_id": "Qwen/Qwen2.5-0.5B", "revision": commit},
        {
            "name": "q-big",
            "family": "q",
            "hub_id": "Qwen/Qwen2.5-7B",
            "revision": commit,
            "tokenizer": "Qwen/Qwen2.5-0.5B",
        },
        {
            "name": "q-pin",
            "family": "q",
            "hub_id": "Qwen/Qwen2.5-3B",
            "tokenizer": "Qwen/Qwen2.5-0.5B",
            "tokenizer_revision": "b" * 40,
        },
    ]
    plans = build_plan(config, check_paths=False)
    # a model's own tokenizer follows the model's commit; a borrowed one is read at its own revision
    assert plans["q-small"].source.tokenizer_ref == commit
    assert plans["q-big"].source.tokenizer_ref == "main"
    assert plans["q-pin"].source.tokenizer_ref == "b" * 40
    assert plans["q-big"].tokenizer_key == "Qwen--Qwen2.5-0.5B"
    assert plans["q-pin"].tokenizer_key == f"Qwen--Qwen2.5-0.5B@{'b' * 40}"
    assert plans["q-small"].tokenizer_key == f"Qwen--Qwen2.5-0.5B@{commit}"


def test_dataset_windows_override_the_models(smoke_config):
    config = copy.deepcopy(smoke_config)
    config["datasets"]["pydoc"]["windows"] = {"max_length": 32, "max_windows_per_doc": 1}
    plans = build_plan(config)
    assert plans["smoke-a"].windows_for("pydoc") == {"max_length": 32, "stride": None, "max_windows_per_doc": 1}
    assert plans["smoke-a"].windows_for("humaneval")["max_length"] == 64  # other datasets keep the model's


def test_a_token_cap_per_tokenizer_is_refused_with_the_byte_cap_to_write(smoke_config):
    """max_scored_tokens kept documents per tokenizer: two families scored different documents."""
    config = copy.deepcopy(smoke_config)
    config["datasets"]["pydoc"]["max_scored_tokens"] = 6000
    with pytest.raises(ConfigError, match=r"datasets\.pydoc\.max_scored_tokens: removed.*`max_bytes: 24000`"):
        build_plan(config)


def test_tokenizer_keys_never_collide(smoke_config):
    """'ckpt v1' and 'ckpt-v1' (or '/x/m' and 'x/m') slug alike; each gets its own tokenizer key,
    while keys without such characters stay plain slugs (existing token files keep their paths)."""
    config = copy.deepcopy(smoke_config)
    paths = ["ckpt v1", "ckpt-v1", "/x/m", "x/m"]
    config["models"] = [{"name": f"m{i}", "family": "f", "path": p} for i, p in enumerate(paths)]
    config["models"].append({"name": "hub", "family": "f", "hub_id": "EleutherAI/pythia-14m"})
    plans = build_plan(config, check_paths=False)
    keys = [plans[f"m{i}"].tokenizer_key for i in range(len(paths))]
    assert len(set(keys)) == len(keys), keys
    assert keys[1] == "ckpt-v1" and keys[0].startswith("ckpt-v1-")
    assert plans["hub"].tokenizer_key == "EleutherAI--pythia-14m@main" and plans["smoke-a"].tokenizer_key.startswith("ladder-")
    assert build_plan(config, check_paths=False)["m3"].tokenizer_key == keys[3]  # deterministic


def test_a_table_setting_is_read_from_where_its_field_says() -> None:
    """Every `TableSettings` field names where it sits under `analysis:`: a new setting is that field (plus its
    schema default and its line in docs/configuration.md), and each table's params hold the ones it declares."""
    from dataclasses import fields

    from rankscale.config import validate
    from rankscale.plan import table_settings
    from rankscale.tables import TABLES, TableSettings

    config = validate(yaml.safe_load((REPO / "config/config.yaml").read_text()))
    analysis, bootstrap = config["analysis"], config["analysis"]["bootstrap"]
    where = {f.name: f.metadata["analysis"] for f in fields(TableSettings)}
    assert where == {"level": "bootstrap.level", "law_k": "law_k", "law_form": "law_form", "forms": "forms",
                     "refits": "bootstrap.refits", "seed": "bootstrap.seed"}  # fmt: skip
    expected = {"level": bootstrap["level"], "law_k": analysis["law_k"], "law_form": analysis["law_form"],
                "forms": analysis["forms"], "refits": bootstrap["refits"], "seed": bootstrap["seed"]}  # fmt: skip
    for name, table in TABLES.items():
        assert table_settings(config, name) == {s: expected[s] for s in table.settings}, name


def test_a_builder_gets_its_declared_settings_typed_by_name() -> None:
    from rankscale.laws import FORMS
    from rankscale.tables import TableInputs, TableSettings

    settings = TableSettings.from_params({"level": 0.9, "law_form": "power_law", "seed": 3, "law_k": [1, 10]})
    inputs = TableInputs([], settings, {}, None)
    assert inputs.declared() == {"level": 0.9, "form": FORMS["power_law"], "seed": 3, "law_k": [1, 10]}
    assert inputs.form is FORMS["power_law"] and inputs.seed == 3 and isinstance(inputs.level, float)
    with pytest.raises(KeyError, match="reads analysis setting 'refits' but does not declare it"):
        _ = inputs.refits


@pytest.mark.parametrize("key", ["k_include", "emergence_k", "law_k"])
def test_every_k_a_study_writes_is_checked_against_the_vocabulary(smoke_config, key):
    """`k_include` and `emergence_k` as `law_k`: a k above |V| is refused, not left out without a word; the
    schema's default k (20000 and 30000 in k_include, above the smoke ladder's 512) are not the study's."""
    config = validate(copy.deepcopy(smoke_config))
    plans = build_plan(config, validated=True)
    check_written(config, plans, [{"analysis": {"law_form": "power_law"}}])  # k_include's defaults reach 30000
    config["analysis"][key] = [1, 10, 5000]
    with pytest.raises(ConfigError) as err:
        check_written(config, plans, [{"analysis": {key: [1, 10, 5000]}}])
    assert str(err.value).startswith(
        f"analysis.{key}: k = [5000] exceeds |V| = 512 of model 'smoke-a' (ladder.tokenizer.vocab_size): no rank can "
        "reach it, so it would be left out without a word; keep every k at most 512"
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("empty.jsonl", '{"text": ""}\n{"text": " \\n\\t"}\n{"text": "   "}\n',
         "datasets.mine.text_fields: none of the 3 records of '{path}' has text in the fields read (['text']: each "
         "empty or whitespace): the corpus would be empty before any split"),
        ("empty.txt", "\n  \n\t\n\n",
         "datasets.mine.path: file '{path}' holds only whitespace (read as `format: txt`, the whole file as text): "
         "the corpus would be empty before any split"),
    ],
)  # fmt: skip
def test_a_corpus_of_empty_texts_is_refused_at_planning(smoke_config, tmp_path, monkeypatch, name, text, message):
    """Not by the corpus job, whose error blamed "splitting and limits" the study never set."""
    monkeypatch.chdir(tmp_path)  # the checked-files cache (.snakemake/rankscale) of a run in this directory
    path = tmp_path / name
    path.write_text(text)
    config = copy.deepcopy(smoke_config)
    config["datasets"]["mine"] = {"source": "local", "path": str(path)}
    with pytest.raises(ConfigError) as err:
        build_plan(config)
    assert str(err.value).startswith(message.format(path=path)) and "\n" not in str(err.value), str(err.value)


def test_overrides_reach_the_workflow_typed_and_their_errors_name_config(tmp_path):
    """A real dry run: the workflow reads `--config` as `rankscale check` does (a number inside a section is a
    number, not the text Snakemake's command line makes of it), and a typo there is blamed on `--config`."""
    workdir = copy_workflow(tmp_path / "wf")
    overrides = ['extraction={"max_length": 32}', 'analysis={"law_from": "power_law"}']
    result = snakemake(workdir, "-n", "--cores", "1", "--configfile", "config/smoke.yaml", "--config", *overrides)
    out = result.stdout + result.stderr
    errors = [line for line in out.splitlines() if line.startswith("config error in ")]
    assert result.returncode == 1 and "Traceback" not in out, out[-3000:]
    assert errors == ["config error in --config: analysis: unknown key ('law_from' was unexpected); did you mean 'law_form'?"]
