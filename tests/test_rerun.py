"""Results follow their inputs and nothing else: the code that computed them, a local model's weights, the
configuration's meaning (not how its YAML is written), and files verified on load. Real Snakemake runs on
copies of a finished smoke run."""

from __future__ import annotations

import contextlib
import copy
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from safetensors.numpy import load_file, save_file

from rankscale.formats import CORPUS_FORMAT, RANK_FORMAT
from rankscale.layout import run_name
from rankscale.plan import ladder_dir
from tests.conftest import (
    REPO,
    copy_run,
    copy_workflow,
    files,
    job_key,
    output_jobs,
    planned_jobs,
    snakemake,
    trajectory_jobs,
)

pytestmark = pytest.mark.slow

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
DATASETS = list(SMOKE["datasets"])
LADDER = [s["name"] for s in SMOKE["ladder"]["sizes"]]
SMOKE_ARGS = ("--configfile", "config/smoke.yaml")


def rules_of(jobs: Counter[str]) -> Counter[str]:
    return Counter(key.split("[")[0] for key in jobs.elements())


def summaries_and_outputs(models: list[str]) -> Counter[str]:
    return Counter(job_key("summarize", model=m, dataset=d) for m in models for d in DATASETS) + output_jobs()


@pytest.fixture
def work(smoke_run: Path, tmp_path: Path) -> Path:
    return copy_run(smoke_run, tmp_path / "run")


def test_a_change_to_summary_code_reruns_summaries_tables_and_figures(work: Path) -> None:
    """The package code a rule imports is part of its identity: a fix that lands by `git pull` reruns what it
    affects, and nothing upstream (no extraction, no training)."""
    compute = work / "src/rankscale/summary/compute.py"
    source = compute.read_text()
    edited = source.replace("    docs, row = np.unique(arrays.doc, return_inverse=True)\n",
                            "    docs, row = np.unique(arrays.doc, return_inverse=True)\n    row = row.ravel()\n")  # fmt: skip
    assert edited != source
    compute.write_text(edited)
    assert planned_jobs(work, *SMOKE_ARGS) == summaries_and_outputs(LADDER)
    # a change to one table's code reruns that table and the tables and figures that read it, no summary
    compute.write_text(source)
    assert planned_jobs(work, *SMOKE_ARGS) == Counter()  # back to what computed them: nothing to do
    tables = work / "src/rankscale/tables/metrics.py"
    tables.write_text(tables.read_text().replace("rows = []", "rows: list = []", 1))  # in metrics_table
    jobs = planned_jobs(work, *SMOKE_ARGS)
    assert set(rules_of(jobs)) == {"table", "figure", "all"} and job_key("table", table="metrics") in jobs
    assert set(jobs) < set(output_jobs()) and job_key("table", table="token_churn") not in jobs


def test_an_edit_to_one_figure_or_table_reruns_it_alone(work: Path) -> None:
    """Each figure and table carries its own code's digest (rankscale.fingerprint.entry_digest): an edit to one
    figure's function reruns that figure alone, one to a helper the figures of a topic share reruns those that call
    it, one to a table's builder reruns that table and what reads it (tests/test_entry_digests.py: every case)."""
    laws = work / "src/rankscale/plots/laws.py"
    source = laws.read_text()
    signature = "def fig_r2_alpha(data: FigureData, settings: FigureSettings, png: Path) -> None:\n"
    laws.write_text(source.replace(signature, signature + "    assert png\n"))
    assert planned_jobs(work, *SMOKE_ARGS) == output_jobs([], ["fig6_r2_alpha_vs_k"])
    helper = "def law_panel(ax: Any, data: FigureData, dataset: str, law: str, k: int | None) -> None:\n"
    laws.write_text(source.replace(helper, helper + "    assert ax\n"))
    drawn = set(output_jobs([])) - {"all"}
    panels = {job_key("figure", figure=f) for f in ("fig3_rbp1", "fig4_rbp_k", "fig5_large_k", "fig14_bits_per_byte")}
    assert set(planned_jobs(work, *SMOKE_ARGS)) == (panels & drawn) | {"all"}
    laws.write_text(source)
    fits = work / "src/rankscale/tables/laws.py"
    builder = "def build_form_comparison(inputs: TableInputs) -> pd.DataFrame:\n"
    fits.write_text(fits.read_text().replace(builder, builder + "    assert inputs\n"))
    # form_comparison and the tables whose modules import tables.laws (claims, strata), and what reads those
    jobs = planned_jobs(work, *SMOKE_ARGS)
    assert job_key("table", table="form_comparison") in jobs and job_key("table", table="strata") in jobs
    assert job_key("table", table="metrics") not in jobs and job_key("table", table="powerlaw_fits") not in jobs
    assert job_key("figure", figure="fig3_rbp1") not in jobs  # reads metrics and powerlaw_fits alone


def test_reformatting_comments_and_touches_rerun_nothing(work: Path) -> None:
    """Formatting, comments and docstrings are not code; modification times are not either."""
    compute = work / "src/rankscale/summary/compute.py"
    compute.write_text("# a comment\n" + compute.read_text().replace('"""Per model', '"""Reworded: per model', 1))
    now = 2_000_000_000
    for path in [*(work / "workflow").rglob("*"), *(work / "src").rglob("*.py")]:
        if path.is_file():
            os.utime(path, (now, now))
    assert planned_jobs(work, *SMOKE_ARGS) == Counter()


def test_bumping_the_rank_format_reruns_extraction(work: Path) -> None:
    formats = work / "src/rankscale/formats.py"
    bumped = f"RANK_FORMAT = FormatVersion(version={RANK_FORMAT.version + 1}"
    formats.write_text(re.sub(r"RANK_FORMAT = FormatVersion\(version=\d+", bumped, formats.read_text()))
    jobs = rules_of(planned_jobs(work, *SMOKE_ARGS))
    n = len(LADDER) * len(DATASETS)
    assert jobs["extract"] == n and jobs["summarize"] == n and jobs["tokenize"] == len(DATASETS)
    assert jobs["corpus"] == jobs["ladder_train"] == 0  # the corpora and the ladder are other formats'


def test_bumping_the_corpus_format_reruns_the_corpora_and_all_made_from_them(work: Path) -> None:
    formats = work / "src/rankscale/formats.py"
    bumped = f"CORPUS_FORMAT = FormatVersion(version={CORPUS_FORMAT.version + 1}"
    formats.write_text(re.sub(r"CORPUS_FORMAT = FormatVersion\(version=\d+", bumped, formats.read_text()))
    jobs = rules_of(planned_jobs(work, *SMOKE_ARGS))
    assert jobs["corpus"] == len(DATASETS) and jobs["extract"] == len(LADDER) * len(DATASETS)
    assert jobs["ladder_train"] == len(LADDER)  # its training text is cut free of the evaluated corpora


def test_a_local_model_retrained_in_place_is_rescored_alone(smoke_run: Path, tmp_path: Path) -> None:
    """A `path:` model whose weights are replaced in the same folder is rescored; nothing else is."""
    work = copy_run(smoke_run, tmp_path / "run")
    checkpoint = work / "checkpoints/my-model"
    checkpoint.parent.mkdir()
    subprocess.run(["cp", "-r", str(work / ladder_dir(SMOKE) / "models/smoke-b"), str(checkpoint)], check=True)
    config = copy.deepcopy(SMOKE)
    config["models"] = [{"name": "mine", "family": "mine", "path": "checkpoints/my-model"}]
    (work / "config/mine.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    args = ("--configfile", "config/mine.yaml")
    # every run here goes as far as the summaries: the tables and figures after them would cost two minutes and
    # decide nothing (each plan below still lists them, so a rescoring that leaked past the model would show)
    result = snakemake(work, "--cores", "2", "--until", "summarize", *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    # `--until summarize`: the families' trajectories (which read rank arrays, not summaries) are left too
    waiting = trajectory_jobs(["ladder", "mine"], DATASETS)
    assert planned_jobs(work, *args) == output_jobs() + waiting
    with contextlib.chdir(work):  # the model's `path:` (and the digest cache) are read relative to the workflow
        mine = files(work, "config/mine.yaml")
    before = {d: (work / mine.ranks("mine", d, "json")).read_text() for d in DATASETS}
    # "retrain": the same architecture with other weights, written over the old file
    weights = load_file(checkpoint / "model.safetensors")
    rng = np.random.default_rng(0)
    save_file({k: v + rng.normal(0, 0.05, v.shape).astype(v.dtype) for k, v in weights.items()},
              checkpoint / "model.safetensors", metadata={"format": "pt"})  # fmt: skip
    jobs = planned_jobs(work, *args)
    expected = Counter(job_key(r, model="mine", dataset=d) for r in ("extract", "summarize") for d in DATASETS)
    assert jobs == expected + output_jobs() + waiting
    result = snakemake(work, "--cores", "2", "--until", "summarize", *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with contextlib.chdir(work):  # the new weights: a new key, so a new rank array beside the old one
        retrained = files(work, "config/mine.yaml")
    assert all(retrained.ranks("mine", d) != mine.ranks("mine", d) for d in DATASETS)
    after = {d: (work / retrained.ranks("mine", d, "json")).read_text() for d in DATASETS}
    assert all('"weights_sha256"' in after[d] and after[d] != before[d] for d in DATASETS)
    assert planned_jobs(work, *args) == output_jobs() + waiting  # the digest is cached, and the same next time


def sorted_copy(name: str, work: Path) -> tuple[str, str]:
    """config/<name>.yaml dumped with every mapping's keys sorted, as config/sorted-<name>.yaml; its `run:` that of
    config/<name>.yaml, so that its tables and figures are the ones config/<name>.yaml made (results/<run>/)."""
    config = yaml.safe_load((REPO / f"config/{name}.yaml").read_text())
    config["run"] = run_name(config, [REPO / f"config/{name}.yaml"], REPO / "config/config.yaml")
    (work / f"config/sorted-{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=True))
    return "--configfile", f"config/sorted-{name}.yaml"


def test_sorted_keys_plan_nothing_after_a_finished_smoke_run(work: Path) -> None:
    assert planned_jobs(work, *sorted_copy("smoke", work)) == Counter()


def finished_without_computing(work: Path, args: tuple[str, ...], ladder: str | None) -> None:
    """Every output of the plan as a placeholder, then `--touch`: the outputs and the metadata Snakemake
    compares (params, input sets, code) of a finished run, without the hours of computing them."""
    listing = snakemake(work, "--summary", *args)
    assert listing.returncode == 0, listing.stderr[-3000:]
    for line in listing.stdout.splitlines()[1:]:
        path, _, rule, *_ = line.split("\t")
        target = work / path
        if rule == "ladder_train" or path.endswith("/tokenizer"):  # the rules with directory outputs
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
    if ladder:  # the plan reads the ladder text's length from this one: an empty file will not do
        (work / ladder / "train_tokens.json").write_text('{"tokens": 10000000}')
    result = snakemake(work, "--touch", "--cores", "1", *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.parametrize("name", ["config", "paper"])
def test_sorted_keys_plan_the_same_jobs_with_the_same_params(name: str, tmp_path: Path) -> None:
    """After a finished run of every job, the sorted-key copy of the configuration plans nothing."""
    work = copy_workflow(tmp_path / "run")
    args = ("--configfile", f"config/{name}.yaml")
    config = yaml.safe_load((REPO / f"config/{name}.yaml").read_text())
    finished_without_computing(work, args, ladder_dir(config) if config.get("ladder") else None)
    # nothing planned for the sorted copy: the metadata the original's --touch recorded (params, inputs, code) match
    assert planned_jobs(work, *sorted_copy(name, work)) == Counter()


def test_a_corrupted_summary_is_named(work: Path) -> None:
    """A truncated bootstrap file fails the tables that read it with its name and how to recompute it."""
    smoke = files(work, "config/smoke.yaml")
    boot = work / smoke.summary("smoke-b", "pydoc", "boot.npz")
    boot.write_bytes(boot.read_bytes()[:1000])
    result = snakemake(work, "--cores", "1", *SMOKE_ARGS, "--forcerun", "table")
    assert result.returncode != 0
    logs = "".join(path.read_text() for path in (work / "results/smoke/logs/tables").glob("*.log")) + result.stderr
    assert f"{smoke.summary('smoke-b', 'pydoc', 'boot.npz')}: does not match the checksum" in logs, logs[-3000:]
    assert f"delete {smoke.summary('smoke-b', 'pydoc')}" in logs
    assert "BadZipFile" not in logs


def test_unpinned_hub_inputs_are_said_once(tmp_path: Path) -> None:
    work = copy_workflow(tmp_path / "run")
    result = snakemake(work, "-n", "--configfile", "config/paper.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if "read at a branch, not a commit" in line]
    assert len(lines) == 1 and "pythia-70m: EleutherAI/pythia-70m@main" in lines[0]
    assert "datasets.wikipedia: wikimedia/wikipedia@main" in lines[0] and "Pin a commit" in lines[0]


def test_the_default_profile_sets_the_rerun_triggers() -> None:
    """Without Snakemake's `code` trigger (script modification times), with every other one."""
    profile = yaml.safe_load((REPO / "profiles/default/config.yaml").read_text())
    slurm = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert profile["rerun-triggers"] == slurm["rerun-triggers"] == ["mtime", "params", "input", "software-env"]
    assert sys.version_info >= (3, 11)
