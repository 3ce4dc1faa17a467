"""The four recipes of CONTRIBUTING.md, followed to the letter: each marked code block of that file is
copied into a copy of the workflow exactly as written there, and the real rules run on it.

A new metric (the mean reciprocal rank, a genuinely new per-document statistic), a new fit form
(y = a + b log S), a new dataset source and a new figure: each must come out of the real workflow
with its values checked against brute force.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from rankscale.rankfile import load_rank_arrays
from rankscale.tables import read_table
from tests.conftest import REPO, copy_run, job_key, planned_jobs, snakemake

pytestmark = pytest.mark.slow

RECIPE = re.compile(r"<!-- recipe (\w+): (\S+) (append|create|defs) -->\n```\w+\n(.*?)```", re.DOTALL)


def recipes() -> list[tuple[str, str, str, str]]:
    """(recipe, file, how, code) of every marked block of CONTRIBUTING.md, in order."""
    return RECIPE.findall((REPO / "CONTRIBUTING.md").read_text())


def apply(work: Path, path: str, how: str, code: str) -> None:
    """What the recipe says to do with the block: append it to a file, create a file, or add schema $defs."""
    target = work / path
    if how == "create":
        assert not target.exists(), f"{path} exists already: the recipe would overwrite it"
        target.write_text(code)
    elif how == "append":
        target.write_text(target.read_text() + "\n\n" + code)
    else:
        schema = yaml.safe_load(target.read_text())
        schema["$defs"].update(yaml.safe_load(code))
        target.write_text(yaml.safe_dump(schema, sort_keys=False))


def test_every_recipe_has_its_blocks() -> None:
    found = {name for name, *_ in recipes()}
    assert found == {"metric", "form", "source", "figure"}, found


@pytest.fixture(scope="module")
def extended(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The smoke run, every recipe of CONTRIBUTING.md applied, and a dataset of the new source added; rerun."""
    work = copy_run(smoke_run, tmp_path_factory.mktemp("registries") / "run")
    for _, path, how, code in recipes():
        apply(work, path, how, code)
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    config["datasets"]["toy"] = {"source": "toy", "count": 30}
    config.setdefault("analysis", {})["forms"] = ["power_law", "log_linear"]
    (work / "config/toy.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    args = ("--configfile", "config/toy.yaml")
    plan = planned_jobs(work, *args)
    result = snakemake(work, "--cores", "2", *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return SimpleNamespace(work=work, plan=plan, config=config, args=args)


def models_of(config: dict) -> list[str]:
    return [s["name"] for s in config["ladder"]["sizes"]]


def test_a_new_dataset_source_runs_through_every_step(extended):
    models = models_of(extended.config)
    assert extended.plan[job_key("corpus", dataset="toy")] == 1
    assert all(extended.plan[job_key("extract", model=m, dataset="toy")] == 1 for m in models)
    # the ladder's training text is kept free of every evaluated dataset's text: a new dataset retrains it
    assert all(extended.plan[job_key("ladder_train", model=m)] == 1 for m in models)
    corpus = (extended.work / "results/corpus/toy.jsonl").read_text().splitlines()
    assert len(corpus) == 30 and "return x + 29" in corpus[-1]
    metrics = read_table(extended.work / "results/tables/metrics.csv")
    assert set(metrics[metrics["dataset"] == "toy"]["model"]) == set(models)


def test_a_new_metric_is_computed_tabled_and_fitted_with_intervals(extended):
    """MRR from the real rank arrays by brute force; its interval a real document bootstrap's; its law fitted."""
    metrics = read_table(extended.work / "results/tables/metrics.csv")
    mrr = metrics[metrics["metric"] == "mrr"]
    assert len(mrr) == 3 * 3 and mrr["k"].isna().all()
    for row in mrr.itertuples():
        ranks = extended.work / f"results/ranks/{row.model}/{row.dataset}"
        arrays, _ = load_rank_arrays(f"{ranks}.npz", f"{ranks}.json")
        assert row.value == pytest.approx(np.mean(1.0 / arrays.rank.astype(np.float64)), rel=1e-12)
        # the document-level standard error of a ratio of sums (linearised), a scale the interval must have
        docs, doc_row = np.unique(arrays.doc, return_inverse=True)
        sums = np.bincount(doc_row, weights=1.0 / arrays.rank.astype(np.float64))
        counts = np.bincount(doc_row).astype(np.float64)
        z = (sums - row_value(sums, counts) * counts) / counts.mean()
        se = np.std(z, ddof=1) / np.sqrt(len(docs))
        assert row.ci_low < row.value < row.ci_high
        assert 0.5 * 3.92 * se < row.ci_high - row.ci_low < 2.5 * 3.92 * se + 1e-12, (row, se)
    fits = read_table(extended.work / "results/tables/powerlaw_fits.csv")
    law = fits[fits["metric"] == "neg_log_mrr"]
    assert len(law) == 3 and (law["note"].fillna("") == "").all()
    assert ((law["alpha_ci_low"] <= law["alpha"]) & (law["alpha"] <= law["alpha_ci_high"])).all()
    assert (law["alpha_ci_high"] > law["alpha_ci_low"]).all() and law["snr"].notna().all()
    # the point fit is the power law of the brute-force values
    humaneval = mrr[mrr["dataset"] == "humaneval"].sort_values("S")
    slope = np.polyfit(np.log(humaneval["S"]), np.log(-np.log(humaneval["value"])), 1)[0]
    assert law.set_index("dataset").loc["humaneval", "alpha"] == pytest.approx(-slope, rel=1e-9)


def row_value(sums: np.ndarray, counts: np.ndarray) -> float:
    return float(sums.sum() / counts.sum())


def test_a_new_figure_is_drawn_by_its_own_job(extended):
    assert extended.plan[job_key("figure", figure="fig_mrr")] == 1
    for ext in ("png", "pdf"):
        assert (extended.work / f"results/figures/fig_mrr.{ext}").stat().st_size > 5000
    assert planned_jobs(extended.work, *extended.args) == {}  # and up to date afterwards


def test_a_new_fit_form_is_compared_by_the_real_rule(extended):
    forms = read_table(extended.work / "results/tables/form_comparison.csv")
    toy = forms[forms["form"] == "log_linear"]
    assert len(toy) == len(forms) / 2 and toy["a"].notna().all() and toy["b"].notna().all()
    assert toy["loo_rmse"].notna().all() and set(forms.loc[forms["preferred"], "form"]) <= {"power_law", "log_linear"}
    ce = toy[(toy["metric"] == "ce") & (toy["dataset"] == "humaneval")].iloc[0]
    metrics = read_table(extended.work / "results/tables/metrics.csv")
    points = metrics[(metrics["metric"] == "ce") & (metrics["dataset"] == "humaneval")].sort_values("S")
    b, a = np.polyfit(np.log(points["S"]), points["value"], 1)
    assert (ce["a"], ce["b"]) == (pytest.approx(a, rel=1e-9), pytest.approx(b, rel=1e-9))


def test_a_new_fit_form_can_be_the_law_form_everywhere(extended):
    """`analysis.law_form: log_linear`: the fits, extrapolation, emergence and figures use it; tables and
    figures rerun, nothing upstream."""
    config = copy.deepcopy(extended.config)
    config["analysis"]["law_form"] = "log_linear"
    (extended.work / "config/toy_form.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    args = ("--configfile", "config/toy_form.yaml")
    jobs = planned_jobs(extended.work, *args)
    assert {key.split("[")[0] for key in jobs} == {"table", "figure", "all"}, jobs
    result = snakemake(extended.work, "--cores", "2", *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    fits = read_table(extended.work / "results/tables/powerlaw_fits.csv")
    assert {"a", "b", "a_ci_low", "a_ci_high", "b_ci_low", "b_ci_high"} <= set(fits.columns)
    assert "alpha" not in fits.columns
    ce = fits[(fits["metric"] == "ce") & (fits["dataset"] == "humaneval")].iloc[0]
    assert ce["a_ci_low"] <= ce["a"] <= ce["a_ci_high"] and ce["b_ci_low"] <= ce["b"] <= ce["b_ci_high"]
    extrapolation = read_table(extended.work / "results/tables/extrapolation.csv")
    held = extrapolation[(extrapolation["metric"] == "ce") & (extrapolation["dataset"] == "humaneval")].iloc[0]
    metrics = read_table(extended.work / "results/tables/metrics.csv")
    points = metrics[(metrics["metric"] == "ce") & (metrics["dataset"] == "humaneval")].sort_values("S")
    b, a = np.polyfit(np.log(points["S"][:-1]), points["value"][:-1], 1)
    assert held["predicted"] == pytest.approx(a + b * np.log(points["S"].iloc[-1]), rel=1e-9)
    emergence = read_table(extended.work / "results/tables/emergence.csv")
    assert emergence["fitted"].notna().any()
    assert read_table(extended.work / "results/tables/exponent_contrasts.csv").empty  # no exponent to compare
    assert isinstance(fits, pd.DataFrame)
