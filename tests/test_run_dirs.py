"""Configurations never overwrite each other: each writes its tables under results/<run>/, every intermediate
is keyed by what it means (rankscale.layout), and switching back to a configuration recomputes nothing."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from rankscale.canon import short_hash, text_key
from rankscale.config import ConfigError
from rankscale.layout import DEFAULT_RUN, run_name
from rankscale.plan import build_plan, layout
from rankscale.tables import TABLES
from tests.conftest import REPO, copy_run, file_states, files, output_jobs, planned_jobs, snakemake

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
DEFAULT = REPO / "config/config.yaml"


def test_run_is_named_by_the_configuration_or_its_file() -> None:
    assert run_name({}, [DEFAULT], DEFAULT) == DEFAULT_RUN
    assert run_name({}, [], DEFAULT) == DEFAULT_RUN
    # an override laid over the default (Snakemake lists the default after it) is a study of its own
    assert run_name({}, [REPO / "config/seeds.yaml", DEFAULT], DEFAULT) == "seeds"
    assert run_name({"run": "mine"}, [REPO / "config/seeds.yaml"], DEFAULT) == "mine"
    with pytest.raises(ConfigError, match="run: 'ranks' is a directory of intermediate files"):
        run_name({"run": "ranks"}, [], DEFAULT)
    with pytest.raises(ConfigError, match=r"config file's name \(.*summary.yaml\).*set `run:`"):
        run_name({}, [Path("summary.yaml")], DEFAULT)


def test_command_line_overrides_get_a_run_of_their_own() -> None:
    """`--config` overrides are another configuration: the name + the overrides' digest, unless they name the run."""
    law = {"analysis": {"law_form": "offset_power_law"}}
    name = run_name({}, [DEFAULT], DEFAULT, law)
    assert name == f"{DEFAULT_RUN}-{short_hash(law)}" and name != DEFAULT_RUN
    assert run_name({}, [DEFAULT], DEFAULT, {"analysis": {"law_form": "offset_power_law"}}) == name  # same digest
    assert run_name({}, [DEFAULT], DEFAULT, {"analysis": {"law_form": "power_law"}}) != name
    assert run_name({}, [REPO / "config/seeds.yaml"], DEFAULT, law) == f"seeds-{short_hash(law)}"
    assert run_name({"run": "mine"}, [DEFAULT], DEFAULT, {"run": "mine", **law}) == "mine"  # the user named it
    assert run_name({}, [DEFAULT], DEFAULT, {}) == DEFAULT_RUN


def plan_files(config: dict):
    from rankscale.config import validate

    config = validate(copy.deepcopy(config))
    plans = build_plan(config, check_paths=False)
    return layout(config, plans, [], DEFAULT)


def test_keys_follow_meaning_not_names() -> None:
    smoke = copy.deepcopy(SMOKE) | {"models": [{"name": "hub", "family": "h", "hub_id": "org/m", "revision": "abc"}]}
    base = plan_files(smoke)
    reordered = copy.deepcopy(smoke)
    reordered["datasets"] = dict(reversed(list(smoke["datasets"].items())))
    assert base == plan_files(reordered)  # the same definitions: the same files
    fewer = copy.deepcopy(smoke)
    fewer["datasets"]["humaneval"]["max_documents"] = 20
    other = plan_files(fewer)
    tok = base.tokenizers["smoke-a"]
    assert other.corpus("humaneval") != base.corpus("humaneval") and other.corpus("pydoc") == base.corpus("pydoc")
    assert other.model_tokens("smoke-a", "humaneval") != base.tokens(tok, "humaneval")
    assert other.ranks("smoke-a", "humaneval") != base.ranks("smoke-a", "humaneval")
    assert other.summary("smoke-a", "humaneval") != base.summary("smoke-a", "humaneval")
    assert other.ranks("hub", "pydoc") == base.ranks("hub", "pydoc")  # a hub model's pydoc array stays shared
    assert other.ranks("smoke-a", "pydoc") != base.ranks("smoke-a", "pydoc")  # the ladder saw other text
    # another window length: the same corpus and tokens, another rank array and summary
    longer = copy.deepcopy(smoke)
    longer["extraction"]["max_length"] = 32
    windows = plan_files(longer)
    assert windows.tokens(tok, "pydoc") == base.tokens(tok, "pydoc")
    assert windows.ranks("smoke-a", "pydoc") != base.ranks("smoke-a", "pydoc")
    # other summary settings: the same rank arrays, other summaries
    draws = copy.deepcopy(smoke)
    draws.setdefault("analysis", {})["bootstrap"] = {"replicates": 17}
    summaries = plan_files(draws)
    assert summaries.ranks("smoke-a", "pydoc") == base.ranks("smoke-a", "pydoc")
    assert summaries.summary("smoke-a", "pydoc") != base.summary("smoke-a", "pydoc")
    # a ladder trained longer: the same ladder directory and tokenizer, other weights, so other rank arrays
    longer_training = copy.deepcopy(smoke)
    longer_training["ladder"]["train"]["tokens"] *= 2
    trained = plan_files(longer_training)
    assert trained.tokens(tok, "pydoc") == base.tokens(tok, "pydoc")
    assert trained.ranks("smoke-a", "pydoc") != base.ranks("smoke-a", "pydoc")
    assert trained.ranks("hub", "pydoc") == base.ranks("hub", "pydoc")
    # the ladder's tokenizer is keyed by its ladder (the evaluated datasets are part of that key)
    assert tok.startswith("ladder-") and other.tokenizers["smoke-a"] != tok


@pytest.mark.slow
def test_a_second_configuration_keeps_the_first_ones_tables_and_files(smoke_run: Path, tmp_path: Path) -> None:
    """After the smoke run, a study that defines `humaneval` with fewer documents and scores
    two local models; then the smoke configuration again has nothing to do, and both sets of tables stand."""
    work = copy_run(smoke_run, tmp_path / "w")
    smoke = files(work, "config/smoke.yaml")
    home = next(p for p in (work / "resources/ladder").iterdir() if (p / "tokenizer").is_dir())
    study = {
        "datasets": {"humaneval": {"source": "packaged", "name": "humaneval", "max_documents": 20}},
        "models": [
            {"name": name, "family": "mine", "path": str(home / "models" / size), "tokenizer": str(home / "tokenizer")}
            for name, size in (("mine-a", "smoke-a"), ("mine-b", "smoke-b"))
        ],
        "extraction": SMOKE["extraction"],
        "analysis": SMOKE["analysis"],
        "figures": SMOKE["figures"],
    }
    (work / "config/study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    kept = ("results/smoke/**/*", "results/corpus/*", "results/tokens/**/*", "results/ranks/**/*",
            "results/summary/**/*", "resources/ladder/**/*")  # fmt: skip
    before = file_states(work, *kept)
    # the study's tables (what this test reads and plans again), not its figures: targets before --configfile
    tables = [files(work, "config/study.yaml").table(name) for name in TABLES]
    result = snakemake(work, "--cores", "2", *tables, "--configfile", "config/study.yaml")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    after = file_states(work, *kept)
    assert {path: after.get(path) for path in before} == before  # nothing of the smoke run was touched
    mine = files(work, "config/study.yaml")
    assert mine.run == "study" and (work / "results/study/tables/metrics.csv").is_file()
    assert mine.corpus("humaneval") != smoke.corpus("humaneval")
    docs = [(work / f.corpus("humaneval")).read_text().count("\n") for f in (smoke, mine)]
    assert docs == [40, 20]
    meta = json.loads((work / mine.ranks("mine-a", "humaneval", "json")).read_text())
    assert meta["model"] == "mine-a" and meta["tokenizer_key"] == text_key(str(home / "tokenizer"))
    assert planned_jobs(work, "--configfile", "config/smoke.yaml") == Counter()  # the smoke run is still complete
    assert planned_jobs(work, *tables, "--configfile", "config/study.yaml") == Counter()


@pytest.mark.slow
def test_an_override_never_writes_into_the_runs_directory_and_switching_back_plans_nothing(
    smoke_run: Path, tmp_path: Path
) -> None:
    """The collision a new user met: `--config analysis=...` over a finished run planned its tables into the run's
    own directory. Now it writes results/smoke-<digest>/, and the run without the override has nothing to do."""
    work = copy_run(smoke_run, tmp_path / "w")
    smoke = files(work, "config/smoke.yaml")
    override = {"analysis": {"law_form": "offset_power_law"}}
    args = ("--configfile", "config/smoke.yaml", "--config", "analysis=" + json.dumps(override["analysis"]))
    run = f"smoke-{short_hash(override)}"
    tables = [f"results/{run}/tables/{name}.csv" for name in ("metrics", "powerlaw_fits")]
    before = file_states(work, "results/smoke/**/*")
    result = snakemake(work, "--cores", "2", *tables, *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert file_states(work, "results/smoke/**/*") == before  # the run's own directory untouched
    fits = (work / f"results/{run}/tables/powerlaw_fits.csv").read_text()
    assert fits != (work / smoke.table("powerlaw_fits")).read_text()  # another law form: other fits, elsewhere
    assert planned_jobs(work, "--configfile", "config/smoke.yaml") == Counter()  # switching back: 0 jobs
    assert planned_jobs(work, *tables, *args) == Counter()  # the same overrides: the same directory, complete


@pytest.mark.slow
def test_migrate_moves_arrays_of_the_unkeyed_layout(smoke_run: Path, tmp_path: Path) -> None:
    """Files at the paths of an earlier version are moved to their keyed paths, verified, and not recomputed;
    a token file cut from another corpus is left where it was, and so is the rank array made from it."""
    work = copy_run(smoke_run, tmp_path / "w")
    smoke = files(work, "config/smoke.yaml")
    tok = smoke.tokenizers["smoke-a"]
    datasets = sorted(SMOKE["datasets"])
    models = [s["name"] for s in SMOKE["ladder"]["sizes"]]
    # the layout of an earlier version: unkeyed names, the ladder's tokens under `ladder`, no keyed corpus yet
    legacy = {}
    for d in datasets:
        for suffix in ("npz", "npz.json"):
            legacy[smoke.tokens(tok, d, suffix)] = f"results/tokens/ladder/{d}.{suffix}"
        for m in models:
            for ext in ("npz", "json"):
                legacy[smoke.ranks(m, d, ext)] = f"results/ranks/{m}/{d}.{ext}"
    for new, old in legacy.items():
        (work / old).parent.mkdir(parents=True, exist_ok=True)
        (work / new).rename(work / old)
    for d in datasets:
        for ext in ("jsonl", "json"):
            (work / smoke.corpus(d, ext)).unlink()
    # pydoc's token file claims another corpus: it and the arrays made from it stay
    sidecar = work / "results/tokens/ladder/pydoc.npz.json"
    meta = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps(meta | {"corpus_sha256": "0" * 64}))
    before = file_states(work, "results/ranks/*/humaneval.npz")
    result = snakemake_share(work, "migrate", "--configfile", "config/smoke.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "results/tokens/ladder/pydoc.npz: left in place: cut from another corpus" in result.stdout
    for m in models:
        moved = work / smoke.ranks(m, "humaneval")
        assert moved.is_file() and not (work / f"results/ranks/{m}/humaneval.npz").exists()
        assert before[f"results/ranks/{m}/humaneval.npz"][0] == file_states(work, smoke.ranks(m, "humaneval"))[
            smoke.ranks(m, "humaneval")
        ][0]
        assert (work / f"results/ranks/{m}/pydoc.npz").is_file()  # not moved
    jobs = planned_jobs(work, "--configfile", "config/smoke.yaml")
    rules = Counter(key.split("[")[0] for key in jobs.elements())
    # humaneval's arrays were kept; pydoc's tokens and arrays are made again; summaries, tables, figures follow
    assert rules["extract"] == len(models) and rules["tokenize"] == 1 and rules["corpus"] == 0
    assert rules["ladder_train"] == 0 and rules["summarize"] == 2 * len(models)
    assert rules["table"] == sum(n for key, n in output_jobs().items() if key.startswith("table["))


def snakemake_share(work: Path, *args: str):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "workflow/share.py", *args], cwd=work, capture_output=True, text=True, timeout=900
    )
