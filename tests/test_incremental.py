"""What reruns when the configuration changes: exactly the models a change concerns, and nothing
upstream of the metrics for analysis, figure and runtime settings (real Snakemake dry runs)."""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from rankscale.plan import ladder_dir, text_key
from tests.conftest import (
    REPO,
    copy_run,
    file_states,
    job_key,
    output_jobs,
    planned_jobs,
    snakemake,
    summary_outputs,
    trajectory_jobs,
)

pytestmark = pytest.mark.slow

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
DATASETS = list(SMOKE["datasets"])
LADDER = [s["name"] for s in SMOKE["ladder"]["sizes"]]
LOCAL = {"name": "local-b", "family": "local", "path": f"{ladder_dir(SMOKE)}/models/smoke-b"}
UPSTREAM = ("results/ranks/**/*", "results/tokens/**/*", "results/corpus/*", "resources/ladder/**/*")


def write_config(workdir: Path, name: str, config: dict, run: str | None = None) -> tuple[str, str]:
    """config/<name>.yaml; its tables and figures under results/<name>/, or under results/<run>/ where given (a
    variant of configuration `run`, planned against the tables and figures that configuration made)."""
    config = config if run is None else {**config, "run": run}
    (workdir / f"config/{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return "--configfile", f"config/{name}.yaml"


def with_local_model() -> dict:
    config = copy.deepcopy(SMOKE)
    config["models"] = [dict(LOCAL)]
    return config


def downstream_of(models: list[str], extract: bool = True) -> Counter[str]:
    """Jobs that recomputing these models' rank arrays (or only their summaries) implies."""
    jobs = Counter(job_key("summarize", model=m, dataset=d) for m in models for d in DATASETS)
    if not extract:  # summaries alone: the token tables and Fig. 15 (which read the trajectories only) stay
        return jobs + summary_outputs()
    # new rank arrays: their families' trajectories too (which read rank arrays, not summaries)
    jobs.update(job_key("extract", model=m, dataset=d) for m in models for d in DATASETS)
    jobs.update(trajectory_jobs({"local" if m == LOCAL["name"] else "ladder" for m in models}, DATASETS))
    return jobs + output_jobs()


@pytest.fixture(scope="module")
def local(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The smoke run plus a model given by `path:`, which brings its own tokenizer; run to completion."""
    workdir = copy_run(smoke_run, tmp_path_factory.mktemp("incremental") / "run")
    args = write_config(workdir, "local", with_local_model())
    plan = planned_jobs(workdir, *args)
    before = file_states(workdir, *UPSTREAM)
    result = snakemake(workdir, "--cores", "2", *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return SimpleNamespace(workdir=workdir, args=args, plan=plan, before=before, after=file_states(workdir, *UPSTREAM))


def test_a_model_with_a_new_tokenizer_adds_tokenization_and_no_training(local):
    tok = text_key(LOCAL["path"])
    expected = downstream_of([LOCAL["name"]]) + Counter(job_key("tokenize", tok=tok, dataset=d) for d in DATASETS)
    expected.update(trajectory_jobs(["ladder"], DATASETS))  # a new run directory (results/local/): every family's
    expected[job_key("token_kinds", tok=tok)] += 1  # its tokenizer's token kinds (the `kind` stratum)
    assert local.plan == expected
    assert all(local.after[path] == state for path, state in local.before.items())
    assert planned_jobs(local.workdir, *local.args) == Counter()


def local_entry(**changes: object) -> Callable[[dict], None]:
    def mutate(config: dict) -> None:
        config["models"][0].update(changes)

    return mutate


def setting(section: str, key: str, value: object) -> Callable[[dict], None]:
    def mutate(config: dict) -> None:
        config[section][key] = value

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(local_entry(dtype="bfloat16"), downstream_of([LOCAL["name"]]), id="dtype"),
        pytest.param(local_entry(max_length=32), downstream_of([LOCAL["name"]]), id="window-length"),
        pytest.param(local_entry(ties="gt"), downstream_of([LOCAL["name"]]), id="rank-convention"),
        pytest.param(local_entry(batch_size=4, device="cpu", threads=2), Counter(), id="runtime-only"),
        pytest.param(
            setting("analysis", "k_points_per_decade", 6),
            downstream_of([*LADDER, LOCAL["name"]], extract=False),
            id="k-grid",
        ),
        pytest.param(
            setting("analysis", "emergence_N", [1, 3]), downstream_of([*LADDER, LOCAL["name"]], False), id="fit"
        ),
        pytest.param(setting("figures", "rbp_k", [10, 50]), output_jobs([], ["fig4_rbp_k"]), id="one-figure"),
        pytest.param(
            setting("figures", "emergence_extrapolate", 1),
            output_jobs([], ["fig7b_emergence_probability"]),
            id="another-figure",
        ),
        pytest.param(
            setting("figures", "rbp_k", [10, 20]),  # a k not yet on the grid: summaries gain it
            downstream_of([*LADDER, LOCAL["name"]], extract=False),
            id="figures-new-k",
        ),
    ],
)
def test_a_change_reruns_exactly_what_it_concerns(local, mutate, expected):
    config = with_local_model()
    mutate(config)
    assert planned_jobs(local.workdir, *write_config(local.workdir, "variant", config, run="local")) == expected


def test_plot_and_report_code_rerun_only_figures(local):
    """An edit to what figures run reruns the figures; a touch or a caption edit reruns nothing."""
    script, caption = local.workdir / "workflow/scripts/figure.py", local.workdir / "workflow/report/figure.rst"
    saved = {path: (path.read_text(), path.stat()) for path in (script, caption)}
    try:
        caption.write_text(caption.read_text() + "\nEdited caption.\n")
        os.utime(script)  # a touch (a checkout) is not an edit
        assert planned_jobs(local.workdir, *local.args) == Counter()
        script.write_text(script.read_text().replace('log.info("wrote %s"', 'log.info("drew %s"'))
        assert planned_jobs(local.workdir, *local.args) == output_jobs([])
    finally:
        for path, (text, stat) in saved.items():
            path.write_text(text)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.fixture(scope="module")
def removed(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The smoke run with its first ladder size removed from the config, rerun."""
    workdir = copy_run(smoke_run, tmp_path_factory.mktemp("removed") / "run")
    config = copy.deepcopy(SMOKE)
    config["ladder"]["sizes"] = config["ladder"]["sizes"][1:]
    args = write_config(workdir, "removed", config)
    plan = planned_jobs(workdir, *args)
    before = file_states(workdir, *UPSTREAM)
    # as far as the table read below: the plan above already lists every table and figure it reruns
    result = snakemake(workdir, "--cores", "2", "results/removed/tables/metrics.csv", *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return SimpleNamespace(workdir=workdir, plan=plan, before=before, after=file_states(workdir, *UPSTREAM))


def test_removing_a_model_reruns_only_tables_and_figures(removed):
    """Removing the first model must not change the shared tokenizer's params (and so every array)."""
    assert removed.plan == output_jobs() + trajectory_jobs(["ladder"], DATASETS)  # a new run directory
    assert removed.after == removed.before
    metrics = pd.read_csv(removed.workdir / "results/removed/tables/metrics.csv")
    assert set(metrics["model"]) == set(LADDER[1:])


def as_written_differently(value: object) -> object:
    """The same configuration written another way: every mapping's keys reversed, integers as floats
    (a mapping has no order that means anything; lists, such as ladder.corpus, keep theirs)."""
    if isinstance(value, dict):
        return {k: as_written_differently(value[k]) for k in sorted(value, reverse=True)}
    if isinstance(value, list):
        return [as_written_differently(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def test_key_order_and_number_types_rerun_nothing(local):
    """Params are canonical: the smoke configuration with keys in another order and 1.0 for 1 plans nothing."""
    config = as_written_differently(with_local_model())
    text = yaml.safe_dump(config, sort_keys=False)
    assert "max_length: 64.0" in text and text != yaml.safe_dump(with_local_model(), sort_keys=False)
    assert planned_jobs(local.workdir, *write_config(local.workdir, "rewritten", config, run="local")) == Counter()


def test_the_interval_level_reruns_tables_and_figures_only(local):
    """`analysis.bootstrap.level` only changes percentiles: no summary (the replicates) reruns."""
    config = with_local_model()
    config["analysis"]["bootstrap"] = {"level": 0.9}
    jobs = planned_jobs(local.workdir, *write_config(local.workdir, "level", config, run="local"))
    rules = {key.split("[")[0] for key in jobs}
    assert rules == {"table", "figure", "all"}, jobs
    assert job_key("table", table="metrics") in jobs and job_key("table", table="lognormal_fits") not in jobs
    config["analysis"]["bootstrap"] = {"replicates": 200}
    jobs = planned_jobs(local.workdir, *write_config(local.workdir, "replicates", config, run="local"))
    assert jobs[job_key("summarize", model="smoke-a", dataset="humaneval")] == 1
    assert not any(key.startswith("extract") for key in jobs)


def test_refresh_calibration_reextracts_exactly_the_arrays_made_before_the_fields(local, tmp_path: Path):
    """Arrays made before the calibration fields stay up to date; `extraction.refresh_calibration` (or a model's
    own) re-extracts those and only those; an array that has the fields never reruns for it."""
    import json
    from dataclasses import replace

    from rankscale.rankfile import load_rank_arrays, save_rank_arrays

    work = copy_run(local.workdir, tmp_path / "run")
    for npz in sorted((work / "results/ranks" / LOCAL["name"]).glob("*.npz")):  # local-b's, as an older rankscale left them
        sidecar = npz.with_suffix(".json")
        arrays, meta = load_rank_arrays(npz, sidecar)
        save_rank_arrays(replace(arrays, calibration=None), npz, sidecar, meta)
        older = json.loads(sidecar.read_text())
        del older["fields"]
        sidecar.write_text(json.dumps(older))
    touched = snakemake(work, "--touch", "--forceall", "--cores", "1", *local.args)  # their record, as it was made
    assert touched.returncode == 0, touched.stdout[-3000:] + touched.stderr[-3000:]
    assert planned_jobs(work, *local.args) == Counter()  # older arrays stay up to date
    everywhere, own = with_local_model(), with_local_model()
    everywhere["extraction"]["refresh_calibration"] = True
    own["models"][0]["refresh_calibration"] = True
    for config in (everywhere, own):  # the ladder's arrays have the fields: only local-b's rerun
        assert planned_jobs(work, *write_config(work, "refresh", config, run="local")) == downstream_of([LOCAL["name"]])
