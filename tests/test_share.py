"""What DVC tracks and when a pulled rank array counts as current (no DVC or Snakemake runs here)."""

from __future__ import annotations

import copy
import re
import shutil

import pytest
import yaml

from rankscale.config import validate
from rankscale.dvc_stages import Stage, merge, read_stages, stage_configs
from rankscale.formats import RANK_FORMAT
from rankscale.layout import Layout
from rankscale.plan import build_plan, ladder_dir, layout
from rankscale.share import ShareError, dvc_stages, load_config, sidecar_mismatches, write_dvc_yaml
from rankscale.share_cli import main
from tests.conftest import REPO

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
LADDER = ladder_dir(SMOKE)
LADDER_TOK = f"ladder-{LADDER.rsplit('/', 1)[-1]}"  # the ladder tokenizer's key (rankscale.plan.keys)


def smoke_with(models: list[dict]) -> dict:
    config = copy.deepcopy(SMOKE)
    config["models"] = models
    return config


def stages_of(config: dict, config_files: list[str]) -> tuple[list, Layout]:
    """dvc_stages of `config` on humaneval, and the file layout they were built from."""
    config = validate(copy.deepcopy(config))
    plans = build_plan(config, check_paths=False, validated=True)
    files = layout(config, plans, config_files)
    return dvc_stages(plans, ["humaneval"], config_files, files), files


@pytest.mark.filterwarnings("ignore:family 'h' has only")
def test_one_stage_per_model_plus_shared_inputs():
    config = smoke_with([{"name": "hub-1.4b", "family": "h", "hub_id": "org/m-1.4b", "revision": "abc"}])
    built, files = stages_of(config, ["config/x.yaml"])
    stages = {s.name: s for s in built}
    assert LADDER_TOK == files.tokenizers["smoke-a"] and LADDER_TOK.startswith("ladder-")
    assert list(stages) == [
        "corpus",
        "ladder",
        f"tokens-{LADDER_TOK}",
        "tokens-org--m-1_4b_abc",
        "model-smoke-a",
        "model-smoke-b",
        "model-smoke-c",
        "model-hub-1_4b",
    ]
    assert stages["model-smoke-a"].outs == ("results/ranks/smoke-a", f"{LADDER}/models/smoke-a")
    assert stages["ladder"].outs == (  # what a fresh clone's training jobs read: nothing of it is rebuilt
        f"{LADDER}/train_corpus.jsonl",
        f"{LADDER}/train_tokens.json",
        f"{LADDER}/tokenizer",
        f"{LADDER}/train_tokens.npz",
    )
    assert stages["model-hub-1_4b"].outs == ("results/ranks/hub-1.4b",)  # weights stay on the hub
    assert "results/tokens/org--m-1.4b@abc" in stages["model-hub-1_4b"].deps
    assert stages["corpus"].outs == (files.corpus("humaneval"), files.corpus("humaneval", "json"))
    assert stages[f"tokens-{LADDER_TOK}"].outs == (f"results/tokens/{LADDER_TOK}",)
    assert f"{LADDER}/tokenizer" in stages[f"tokens-{LADDER_TOK}"].deps
    assert f"{LADDER}/tokenizer" not in stages["tokens-org--m-1_4b_abc"].deps
    ranks = files.ranks("smoke-a", "humaneval")
    assert re.fullmatch(r"results/ranks/smoke-a/humaneval-[0-9a-f]{12}\.npz", ranks), ranks
    assert stages["model-smoke-a"].cmd == f"snakemake --cores all {ranks} --configfile config/x.yaml"


def test_stage_names_that_collide_are_refused():
    config = smoke_with([{"name": n, "family": "h", "hub_id": "org/m"} for n in ("m.1", "m_1")])
    with pytest.raises(ShareError, match="m_1"):
        stages_of(config, [])


def test_dvc_yaml_outputs_persist(tmp_path):
    stages, _ = stages_of(SMOKE, [])
    write_dvc_yaml(tmp_path / "dvc.yaml", stages)
    written = yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]
    assert written["model-smoke-b"]["outs"] == [
        {"results/ranks/smoke-b": {"persist": True}},
        {f"{LADDER}/models/smoke-b": {"persist": True}},
    ]


def test_partial_config_files_override_the_default(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config/config.yaml").write_text(yaml.safe_dump(SMOKE))
    (tmp_path / "extra.yaml").write_text(yaml.safe_dump({"extraction": {"ties": "gt"}}))
    assert load_config([], tmp_path) == SMOKE
    config = load_config(["extra.yaml"], tmp_path)
    assert config["extraction"]["ties"] == "gt" and config["datasets"] == SMOKE["datasets"]


def test_config_files_merge_like_snakemake(tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(SMOKE))
    (tmp_path / "b.yaml").write_text(
        yaml.safe_dump({"ladder": {"sizes": [{"name": "x"}]}, "extraction": {"ties": "gt"}})
    )
    config = load_config(["a.yaml", "b.yaml"], tmp_path)
    assert config["ladder"]["sizes"] == [{"name": "x"}]  # lists are replaced
    assert config["ladder"]["train"] == SMOKE["ladder"]["train"]  # dicts are merged
    assert (
        config["extraction"]["ties"] == "gt" and config["extraction"]["max_length"] == SMOKE["extraction"]["max_length"]
    )


def sidecar(**changes: object) -> dict:
    meta = {
        "model": "smoke-a",
        "dataset": "humaneval",
        "location": f"{LADDER}/models/smoke-a",
        "revision": None,
        "tokenizer": f"{LADDER}/tokenizer",
        "dtype": "float32",
        "ties": "ge",
        "windows": {"max_length": 64, "stride": None, "max_windows_per_doc": None},
        "rank_format": RANK_FORMAT.version,  # an array of the current format (older ones are recomputed)
        "tokens_sha256": "t1",
    }
    meta.update(changes)
    return meta


@pytest.mark.parametrize(
    ("meta", "tokens", "problem"),
    [
        (sidecar(), {"sha256": "t1"}, None),
        (sidecar(dtype="bfloat16"), {"sha256": "t1"}, "dtype: array has 'bfloat16', config says 'float32'"),
        (sidecar(rank_format=1), {"sha256": "t1"}, f"rank_format: array has 1, config says {RANK_FORMAT.version}"),
        (sidecar(windows={"max_length": 32}), {"sha256": "t1"}, "max_length: array has 32, config says 64"),
        (sidecar(location="elsewhere"), {"sha256": "t1"}, "location: array has 'elsewhere'"),
        (sidecar(), {"sha256": "t2"}, "token file: array has 't1', current is 't2'"),
        # the same check as the aggregation's: the token file's tokenizer and corpus too
        (sidecar(tokenizer_sha256="a"), {"sha256": "t1", "tokenizer_sha256": "b"}, "tokenizer: array has 'a'"),
        (sidecar(corpus_sha256="a"), {"sha256": "t1", "corpus_sha256": "b"}, "corpus: array has 'a', current is 'b'"),
        (sidecar(), None, "token file is missing"),
        (sidecar(model="smoke-b"), {"sha256": "t1"}, "model: array has 'smoke-b', its path says 'smoke-a'"),
        (sidecar(dataset="pydoc"), {"sha256": "t1"}, "dataset: array has 'pydoc', its path says 'humaneval'"),
    ],
)
def test_pulled_arrays_must_match_the_config(meta, tokens, problem):
    plan = build_plan(SMOKE, check_paths=False)["smoke-a"]
    problems = sidecar_mismatches(meta, plan, "humaneval", tokens)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def _stage(name: str, cmd: str, *outs: str) -> Stage:
    return Stage(name, cmd, outs)


def test_track_keeps_every_other_configurations_stages(tmp_path):
    """The default's committed stages survive tracking another configuration; names it shares get the run's prefix;
    an output the default already tracks stays the default's; re-tracking replaces only this configuration's."""
    (tmp_path / "results/corpus").mkdir(parents=True)
    for name in ("h.jsonl", "p.jsonl", "mine.jsonl"):
        (tmp_path / "results/corpus" / name).write_text("{}\n")
    default = {
        "corpus": _stage("corpus", "snakemake --cores all results/corpus/h.jsonl", "results/corpus/h.jsonl",
                         "results/corpus/p.jsonl").as_dvc(),  # fmt: skip
        "model-a": _stage("model-a", "snakemake --cores all results/ranks/a/h.npz", "results/ranks/a").as_dvc(),
    }
    ours = [
        _stage("corpus", "snakemake --cores all x --configfile config/my.yaml", "results/corpus/h.jsonl",
               "results/corpus/mine.jsonl"),  # fmt: skip
        _stage("model-b", "snakemake --cores all y --configfile config/my.yaml", "results/ranks/b"),
    ]
    merged = merge(default, ours, ["config/my.yaml"], "my", tmp_path)
    assert {k: merged.stages[k] for k in default} == default  # never overwritten
    assert merged.ours == ["my-corpus", "model-b"]
    assert merged.stages["my-corpus"]["outs"] == [{"results/corpus/mine.jsonl": {"persist": True}}]
    assert merged.shared == ["corpus"]  # recorded again: its files are all here
    write_dvc_yaml(tmp_path / "dvc.yaml", merged.stages)
    again = merge(read_stages(tmp_path / "dvc.yaml"), ours[:1], ["config/my.yaml"], "my", tmp_path)
    assert list(again.stages) == ["corpus", "model-a", "my-corpus"]  # model-b left this configuration: its stage goes
    assert stage_configs(again.stages["my-corpus"]["cmd"]) == ["config/my.yaml"]
    assert stage_configs(again.stages["corpus"]["cmd"]) == []


def test_track_refuses_an_output_another_configuration_tracks_without_its_files(tmp_path):
    (tmp_path / "results/tokens/t").mkdir(parents=True)
    other = {"tokens-t": _stage("tokens-t", "snakemake a", "results/tokens/t", "results/corpus/gone.jsonl").as_dvc()}
    ours = [_stage("tokens-t", "snakemake b --configfile c.yaml", "results/tokens/t")]
    with pytest.raises(ShareError, match="results/tokens/t is an output of stage 'tokens-t' of another configuration"):
        merge(other, ours, ["c.yaml"], "c", tmp_path)


def test_restore_that_verifies_nothing_fails_and_says_which_configfile(tmp_path, monkeypatch, capsys):
    """`pull` without the --configfile the arrays were tracked with verified 0 arrays and exited 0."""
    shutil.copytree(REPO / "config", tmp_path / "config")
    write_dvc_yaml(tmp_path / "dvc.yaml", [_stage("model-x", "snakemake x --configfile config/smoke.yaml", "r/x")])
    monkeypatch.chdir(tmp_path)
    assert main(["restore"]) == 1
    err = capsys.readouterr().err
    assert "no pulled rank array matches a model of this configuration (--configfile: none" in err
    assert "dvc.yaml tracks `--configfile config/smoke.yaml`" in err
