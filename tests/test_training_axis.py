"""Scaling in training tokens D: checkpoints as models, the joint law in (S, D), and the plumbing through
real Snakemake runs (adding a checkpoint trains and scores that checkpoint alone)."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from rankscale.config import ConfigError
from rankscale.laws import JointLaw, fit_joint_law
from rankscale.plan import build_plan
from rankscale.tables import TABLES
from tests.conftest import (
    REPO,
    copy_run,
    file_states,
    files,
    job_key,
    output_jobs,
    planned_jobs,
    snakemake,
    trajectory_jobs,
)

TOKEN_FIGURES = ("fig10_rbp_vs_tokens", "fig11_compute_frontier")  # the figures in training tokens

SMOKE = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
DATASETS = list(SMOKE["datasets"])
SIZES = [s["name"] for s in SMOKE["ladder"]["sizes"]]


def test_joint_law_recovers_its_parameters_without_noise() -> None:
    size = np.repeat(np.geomspace(2e4, 3e6, 5), 4)
    tokens = np.tile(np.geomspace(3e4, 3e5, 4), 5)
    truth = JointLaw(E=1.5, A=40.0, alpha=0.3, B=25.0, beta=0.4, n=20)
    law = fit_joint_law(size, tokens, truth.at(size, tokens))
    for name, value in truth.row().items():
        assert getattr(law, name) == pytest.approx(value, rel=1e-6), name
    assert JointLaw.from_row({**law.row(), "n_points": 20}).at(1e6, 1e5) == pytest.approx(truth.at(1e6, 1e5))


def test_the_compute_frontier_is_the_minimum_at_each_budget() -> None:
    law = JointLaw(E=1.0, A=30.0, alpha=0.3, B=20.0, beta=0.4, n=0)
    budget = 1e13
    size, best = law.compute_optimal(np.array([budget]))
    trial = np.geomspace(size[0] / 30, size[0] * 30, 2001)
    brute = law.at(trial, budget / (6 * trial))
    assert best[0] == pytest.approx(brute.min(), rel=1e-6) and size[0] == pytest.approx(trial[brute.argmin()], rel=0.01)


def test_the_joint_law_needs_both_axes() -> None:
    with pytest.raises(ValueError, match="two sizes S and two token counts D"):
        fit_joint_law(np.full(8, 1e6), np.geomspace(1e4, 1e6, 8), np.ones(8))


def with_checkpoints(*tokens: int) -> dict:
    config = copy.deepcopy(SMOKE)
    config["ladder"]["train"]["checkpoints"] = list(tokens)
    return config


def test_checkpoints_are_models_with_the_tokens_they_have_seen() -> None:
    plans = build_plan(with_checkpoints(5000, 12000))
    per_step = SMOKE["ladder"]["train"]["batch_size"] * SMOKE["ladder"]["train"]["seq_len"]  # 512
    ck = plans["smoke-b-t5000"]
    assert (ck.D, ck.size, ck.final, ck.checkpoint) == (10 * per_step, "smoke-b", False, 5000)
    assert plans["smoke-b"].final and plans["smoke-b"].D == 40 * per_step  # 20,000 tokens: 40 steps of 512
    assert ck.source.location.endswith("/models/smoke-b-t5000") and ck.family == plans["smoke-b"].family


@pytest.mark.parametrize(
    ("checkpoints", "message"),
    [
        ([30000], "ladder.train.checkpoints[0]: 30000 is not below ladder.train.tokens = 20000"),
        ([8000, 4000], "ladder.train.checkpoints[1]: 4000 does not follow 8000"),
        ([4000, 4000], "ladder.train.checkpoints[1]: 4000 does not follow 4000"),
        ([4000, 4050], "fall in the same training step"),
    ],
)
def test_bad_checkpoints_are_refused_with_the_key(checkpoints: list[int], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_plan(with_checkpoints(*checkpoints))
    assert message in str(err.value)


def test_hub_checkpoints_group_by_checkpoint_of() -> None:
    config = copy.deepcopy(SMOKE)
    step = 2_097_152
    config["models"] = [
        {
            "name": f"pythia-70m-step{n}",
            "family": "pythia",
            "hub_id": "EleutherAI/pythia-70m",
            "revision": f"step{n}",
            "checkpoint_of": "pythia-70m",
            "D": n * step,
        }  # fmt: skip
        for n in (1000, 143000)
    ]
    plans = build_plan(config, check_paths=False)
    assert not plans["pythia-70m-step1000"].final and plans["pythia-70m-step143000"].final
    config["models"][1]["D"] = None
    with pytest.raises(ConfigError, match=r"models\[1\]\.D: model 'pythia-70m-step143000' is one of the checkpoints"):
        build_plan(config, check_paths=False)
    config["models"][1].update(D=143000 * step, family="other")
    with pytest.raises(ConfigError, match=r"models\[1\]\.family: checkpoints of 'pythia-70m' must share one family"):
        build_plan(config, check_paths=False)


def write(workdir: Path, name: str, config: dict) -> tuple[str, str]:
    (workdir / f"config/{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return "--configfile", f"config/{name}.yaml"


@pytest.fixture(scope="module")
def grown(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The smoke run, then a checkpoint at 8,000 tokens added to every size and run."""
    work = copy_run(smoke_run, tmp_path_factory.mktemp("tokens") / "run")
    args = write(work, "ck", with_checkpoints(8000))
    plan = planned_jobs(work, *args)  # every job: the test of the plan checks them all
    before = file_states(work, "results/ranks/**/*", "resources/ladder/**/*")
    ck = files(work, "config/ck.yaml")  # what the tests read: every table and the two figures in training tokens
    targets = [ck.table(name) for name in TABLES]
    targets += [ck.figure(name, ext) for name in TOKEN_FIGURES for ext in ("png", "pdf")]
    result = snakemake(work, "--cores", "2", *targets, *args)  # targets before --configfile (it takes every word after)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return SimpleNamespace(
        work=work,
        args=args,
        plan=plan,
        before=before,
        after=file_states(work, "results/ranks/**/*", "resources/ladder/**/*"),
    )


@pytest.mark.slow
def test_adding_a_checkpoint_trains_and_scores_that_checkpoint_alone(grown: SimpleNamespace) -> None:
    new = [f"{s}-t8000" for s in SIZES]
    # with checkpoints, Figs. 10 and 11 are drawn (one seed per size: not Fig. 12); the family's trajectories rerun
    outputs = output_jobs(where=(grown.work, "config/ck.yaml"))
    expected = outputs + trajectory_jobs(["ladder"], DATASETS)
    expected.update(job_key("ladder_train", model=m) for m in new)
    expected.update(
        job_key(rule, model=m, dataset=d) for m in new for d in DATASETS for rule in ("extract", "summarize")
    )
    assert grown.plan == expected
    assert all(grown.after[path] == state for path, state in grown.before.items())  # nothing finished was redone


@pytest.mark.slow
def test_checkpoints_are_scored_and_fitted_in_training_tokens(grown: SimpleNamespace) -> None:
    tables = grown.work / "results/ck/tables"
    metrics = pd.read_csv(tables / "metrics.csv", dtype={"k": "Int64", "D": "Int64"})
    assert set(metrics.loc[metrics["model"].str.endswith("-t8000"), "D"]) == {16 * 512}
    assert not metrics.loc[metrics["model"].str.endswith("-t8000"), "final"].any()
    fits = pd.read_csv(tables / "powerlaw_fits.csv")
    assert (fits["n_models"] == len(SIZES)).all()  # laws in S: the final models only
    data = pd.read_csv(tables / "data_fits.csv")
    assert set(data["size"]) == set(SIZES) and (data["n_checkpoints"] == 2).all()
    ce = data[(data["metric"] == "ce") & (data["dataset"] == "humaneval")]
    assert (ce["beta"] > 0).all() and (ce["beta_ci_low"] <= ce["beta"]).all()  # more tokens, lower CE
    joint = pd.read_csv(tables / "joint_fits.csv")
    assert (joint["n_points"] == 2 * len(SIZES)).all() and np.isfinite(joint["E"]).all()
    for name in TOKEN_FIGURES:
        assert (grown.work / f"results/ck/figures/{name}.png").stat().st_size > 5000


@pytest.mark.slow
def test_a_checkpoint_is_its_size_run_stopped_early(grown: SimpleNamespace) -> None:
    """Same schedule (cosine over the full run's 40 steps), stopped after the 16 steps that reach 8,000 tokens."""
    import json

    ladder = next(p for p in (grown.work / "resources/ladder").iterdir() if (p / "models/smoke-a-t8000").is_dir())
    summary = json.loads((ladder / "models/smoke-a-t8000/training.json").read_text())
    assert summary["tokens_seen"] == 16 * 512 and summary["schedule_steps"] == 40 and summary["steps"] == 16


@pytest.mark.slow
def test_a_later_checkpoint_resumes_from_the_nearest_saved_state(grown: SimpleNamespace) -> None:
    """A checkpoint at 12,000 tokens, added after the one at 8,000: its training starts from the state the
    8,000-token job saved (step 16 of 40), not from scratch, and nothing else is retrained or rescored."""
    import json

    args = write(grown.work, "ck2", with_checkpoints(8000, 12000))
    new = [f"{s}-t12000" for s in SIZES]
    outputs = output_jobs(where=(grown.work, "config/ck2.yaml"))  # Figs. 10 and 11 too
    expected = outputs + trajectory_jobs(["ladder"], DATASETS)  # new checkpoints: the family's trajectories
    expected.update(job_key("ladder_train", model=m) for m in new)
    expected.update(
        job_key(rule, model=m, dataset=d) for m in new for d in DATASETS for rule in ("extract", "summarize")
    )
    assert planned_jobs(grown.work, *args) == expected
    before = file_states(grown.work, "results/ranks/**/*", "resources/ladder/*/models/**/*")
    # as far as the summaries: training and scoring are what is checked; the plan above lists the rest
    result = snakemake(grown.work, "--cores", "2", "--until", "summarize", *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    after = file_states(grown.work, "results/ranks/**/*", "resources/ladder/*/models/**/*")
    assert all(after[path] == state for path, state in before.items())
    # trained and scored once: only the outputs are left (the trajectories too: `--until summarize`)
    assert planned_jobs(grown.work, *args) == outputs + trajectory_jobs(["ladder"], DATASETS)
    ladder = next(p for p in (grown.work / "resources/ladder").iterdir() if (p / "models/smoke-a-t12000").is_dir())
    for size in SIZES:
        summary = json.loads((ladder / f"models/{size}-t12000/training.json").read_text())
        assert summary["resumed_from_step"] == 16 and summary["trained_steps"] == 24 - 16 and summary["steps"] == 24
