"""The six recipes of CONTRIBUTING.md, followed to the letter: each marked code block of that file is
copied into a copy of the workflow exactly as written there (a configuration block is merged into the
configuration run), and the real rules run on it.

A new metric (the mean reciprocal rank, a genuinely new per-document statistic), a new fit form
(y = a + b log S), a new dataset source, a new figure, a new stratum kind (in-context repeats) and a new table
(RBP_k - RBP_1): each must come out of the real workflow with its values checked against brute force.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from rankscale.config import ConfigError, load_yaml, validate
from rankscale.layout import Ladder, Layout
from rankscale.plan.checks import check_analysis
from rankscale.rankfile import load_rank_arrays
from rankscale.tables import MODULES, TABLES, read_table
from rankscale.tokens import load_tokens
from rankscale.windows import WindowSpec, plan_windows
from tests.conftest import REPO, copy_run, copy_workflow, job_key, planned_jobs, snakemake

pytestmark = pytest.mark.slow

RECIPE = re.compile(r"<!-- recipe (\w+): (\S+) (append|create|defs|config) -->\n```\w+\n(.*?)```", re.DOTALL)


def recipes() -> list[tuple[str, str, str, str]]:
    """(recipe, file, how, code) of every marked block of CONTRIBUTING.md, in order."""
    return RECIPE.findall((REPO / "CONTRIBUTING.md").read_text())


def apply(work: Path, path: str, how: str, code: str) -> None:
    """What the recipe says to do with the block: append it to a file, create a file, or add schema $defs (a
    configuration block is merged into the configuration the test runs instead: `configured`)."""
    target = work / path
    if how == "config":
        return
    if how == "create":
        assert not target.exists(), f"{path} exists already: the recipe would overwrite it"
        target.write_text(code)
    elif how == "append":
        target.write_text(target.read_text() + "\n\n" + code)
    else:
        schema = yaml.safe_load(target.read_text())
        schema["$defs"].update(yaml.safe_load(code))
        target.write_text(yaml.safe_dump(schema, sort_keys=False))


def merged(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """`base` with `update` merged in: mappings key by key, any other value replaced."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def configured(config: dict[str, Any], recipe: str | None = None) -> dict[str, Any]:
    """`config` with the configuration blocks of every recipe (or of `recipe`) merged in, as a user adds them."""
    for name, _, how, code in recipes():
        if how == "config" and recipe in (None, name):
            config = merged(config, yaml.safe_load(code))
    return config


LAYOUT_SCRIPT = """
import json, sys
from pathlib import Path
from rankscale.share import configured

files = configured(sys.argv[2:], Path(sys.argv[1]))[2]
pairs = lambda keys: [[*key, stem] for key, stem in keys.items()]
print(json.dumps({"run": files.run, "corpus_keys": files.corpus_keys, "token_keys": pairs(files.token_keys),
                  "rank_keys": pairs(files.rank_keys), "summary_keys": pairs(files.summary_keys),
                  "tokenizers": files.tokenizers, "ladder": files.ladder.dir}))
"""


def layout_of(work: Path, *config_files: str) -> Layout:
    """`tests.conftest.files` as the package of `work` (the recipes applied) says: this process's package knows
    neither the new source nor the new stratum kind, and would refuse the configuration."""
    result = subprocess.run([sys.executable, "-c", LAYOUT_SCRIPT, str(work), *config_files], cwd=work,
                            env={"PYTHONPATH": str(work / "src"), "PATH": "/usr/bin:/bin"},
                            capture_output=True, text=True, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    keys = json.loads(result.stdout)
    pairs = {name: {(a, b): stem for a, b, stem in keys[name]} for name in ("token_keys", "rank_keys", "summary_keys")}
    return Layout(run=keys["run"], corpus_keys=keys["corpus_keys"], tokenizers=keys["tokenizers"],
                  ladder=Ladder(keys["ladder"]), **pairs)  # fmt: skip


def test_every_recipe_has_its_blocks() -> None:
    found = {name for name, *_ in recipes()}
    assert found == {"metric", "form", "source", "figure", "stratum", "table"}, found


@pytest.fixture(scope="module")
def extended(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The smoke run, every recipe of CONTRIBUTING.md applied, and a dataset of the new source added; rerun."""
    work = copy_run(smoke_run, tmp_path_factory.mktemp("registries") / "run")
    for _, path, how, code in recipes():
        apply(work, path, how, code)
    config = configured(yaml.safe_load((REPO / "config/smoke.yaml").read_text()))
    config["datasets"]["toy"] = {"source": "toy", "count": 30}
    config.setdefault("analysis", {})["forms"] = ["power_law", "log_linear"]
    (work / "config/toy.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    plan = planned_jobs(work, "--configfile", "config/toy.yaml")  # every job, checked by the tests below
    files = layout_of(work, "config/toy.yaml")
    assert files.out == "results/toy"
    # what the recipes' tests read: every table (the new one too) and the new figure, not the other figures
    tables = [key.split("table=")[1].rstrip("]") for key in plan if key.startswith("table[")]
    targets = [files.table(name) for name in tables] + [files.figure("fig_mrr", ext) for ext in ("png", "pdf")]
    args = (*targets, "--configfile", "config/toy.yaml")  # targets before --configfile, which takes every word after
    result = snakemake(work, "--cores", "2", *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return SimpleNamespace(work=work, plan=plan, config=config, args=args, files=files)


def models_of(config: dict) -> list[str]:
    return [s["name"] for s in config["ladder"]["sizes"]]


def test_a_new_dataset_source_runs_through_every_step(extended):
    models = models_of(extended.config)
    assert extended.plan[job_key("corpus", dataset="toy")] == 1
    assert all(extended.plan[job_key("extract", model=m, dataset="toy")] == 1 for m in models)
    # the ladder's training text is kept free of every evaluated dataset's text: a new dataset retrains it
    assert all(extended.plan[job_key("ladder_train", model=m)] == 1 for m in models)
    corpus = (extended.work / extended.files.corpus("toy")).read_text().splitlines()
    assert len(corpus) == 30 and "return x + 29" in corpus[-1]
    metrics = read_table(extended.work / "results/toy/tables/metrics.csv")
    assert set(metrics[metrics["dataset"] == "toy"]["model"]) == set(models)


def test_a_new_metric_is_computed_tabled_and_fitted_with_intervals(extended):
    """MRR from the real rank arrays by brute force; its interval a real document bootstrap's; its law fitted."""
    metrics = read_table(extended.work / "results/toy/tables/metrics.csv")
    mrr = metrics[metrics["metric"] == "mrr"]
    assert len(mrr) == 3 * 3 and mrr["k"].isna().all()
    for row in mrr.itertuples():
        ranks = [extended.work / extended.files.ranks(row.model, row.dataset, ext) for ext in ("npz", "json")]
        arrays, _ = load_rank_arrays(*ranks)
        assert row.value == pytest.approx(np.mean(1.0 / arrays.rank.astype(np.float64)), rel=1e-12)
        # the document-level standard error of a ratio of sums (linearised), a scale the interval must have
        docs, doc_row = np.unique(arrays.doc, return_inverse=True)
        sums = np.bincount(doc_row, weights=1.0 / arrays.rank.astype(np.float64))
        counts = np.bincount(doc_row).astype(np.float64)
        z = (sums - row_value(sums, counts) * counts) / counts.mean()
        se = np.std(z, ddof=1) / np.sqrt(len(docs))
        assert row.ci_low < row.value < row.ci_high
        assert 0.5 * 3.92 * se < row.ci_high - row.ci_low < 2.5 * 3.92 * se + 1e-12, (row, se)
    fits = read_table(extended.work / "results/toy/tables/powerlaw_fits.csv")
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
        assert (extended.work / f"results/toy/figures/fig_mrr.{ext}").stat().st_size > 5000
    assert planned_jobs(extended.work, *extended.args) == {}  # and up to date afterwards


def test_a_new_table_is_built_by_its_own_job(extended):
    """RBP_k - RBP_1 at every k of `analysis.law_k` above 1, as brute force from the real rank arrays says, inside
    its interval; a job of its own, which a change of the law form does not rerun and one of the level does."""
    assert extended.plan[job_key("table", table="rbp_gain")] == 1
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    law_k = extended.config["analysis"].get("law_k", schema["properties"]["analysis"]["properties"]["law_k"]["default"])
    gain = read_table(extended.work / "results/toy/tables/rbp_gain.csv")
    models, datasets = models_of(extended.config), list(extended.config["datasets"])
    expected = {(m, d, k) for m in models for d in datasets for k in law_k if k > 1}
    assert set(zip(gain["model"], gain["dataset"], gain["k"], strict=True)) == expected and len(gain) == len(expected)
    for row in gain.itertuples():
        ranks = [extended.work / extended.files.ranks(row.model, row.dataset, ext) for ext in ("npz", "json")]
        rank = load_rank_arrays(*ranks)[0].rank
        assert row.gain == pytest.approx(np.mean((rank > 1) & (rank <= row.k)), rel=1e-12, abs=1e-15)
        assert 0 <= row.ci_low <= row.gain <= row.ci_high <= 1 and row.ci_low < row.ci_high
    for change, reruns in (({"law_form": "log_linear"}, False), ({"bootstrap": {"level": 0.9}}, True)):
        config = copy.deepcopy(extended.config) | {"run": "toy"}
        config["analysis"] = config.get("analysis", {}) | change
        (extended.work / "config/toy_change.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        jobs = planned_jobs(extended.work, "--configfile", "config/toy_change.yaml")
        assert (job_key("table", table="rbp_gain") in jobs) is reruns, (change, jobs)


def test_a_new_fit_form_is_compared_by_the_real_rule(extended):
    forms = read_table(extended.work / "results/toy/tables/form_comparison.csv")
    toy = forms[forms["form"] == "log_linear"]
    assert len(toy) == len(forms) / 2
    # a law in log space is fitted where every size's value is positive; CE's decomposition, a jackknife estimate, can
    # fall below 0 (a KL divergence or -log C near 0: the smoke run's pydoc), and there each form says so in `note`
    from rankscale.metrics import METRICS
    from rankscale.tables import finals

    metrics = finals(read_table(extended.work / "results/toy/tables/metrics.csv"))
    known = {m.law: n for n, m in METRICS.items()}  # the recipe's metric (mrr) is registered in the copy alone
    for row in toy.itertuples():
        if row.metric not in known:  # -log MRR: MRR in (0, 1] and below 1 for these models, so always fitted
            assert str(row.note) in ("", "nan") and np.isfinite([row.a, row.b, row.loo_rmse]).all(), row
            continue
        name = known[row.metric]
        same_k = metrics["k"].isna() if pd.isna(row.k) else metrics["k"] == row.k
        values = metrics[(metrics["dataset"] == row.dataset) & (metrics["metric"] == name) & same_k]["value"]
        positive = bool((METRICS[name].to_law(values.to_numpy(dtype=np.float64)) > 0).all())
        assert (str(row.note) in ("", "nan")) == positive, row
        assert np.isfinite([row.a, row.b]).all() == positive, row
        # a left-out fit of a line in log S may predict a tiny positive quantity at or below 0 (-log C(0.9) near 0):
        # its log error is unbounded, inf, never a crash
        assert not positive or row.loo_rmse > 0, row
    assert set(forms.loc[forms["preferred"], "form"]) <= {"power_law", "log_linear"}
    ce = toy[(toy["metric"] == "ce") & (toy["dataset"] == "humaneval")].iloc[0]
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
    # a run directory of its own (results/toy_form/): its token trajectories too (cheap, as its tables)
    assert {key.split("[")[0] for key in jobs} == {"trajectories", "table", "figure", "all"}, jobs
    read = ("powerlaw_fits", "extrapolation", "metrics", "emergence", "exponent_contrasts", "strata_contrasts")
    targets = [layout_of(extended.work, "config/toy_form.yaml").table(name) for name in read]  # what is read below
    result = snakemake(extended.work, "--cores", "2", *targets, *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    tables = extended.work / "results/toy_form/tables"
    fits = read_table(tables / "powerlaw_fits.csv")
    assert {"a", "b", "a_ci_low", "a_ci_high", "b_ci_low", "b_ci_high"} <= set(fits.columns)
    assert "alpha" not in fits.columns
    ce = fits[(fits["metric"] == "ce") & (fits["dataset"] == "humaneval")].iloc[0]
    assert ce["a_ci_low"] <= ce["a"] <= ce["a_ci_high"] and ce["b_ci_low"] <= ce["b"] <= ce["b_ci_high"]
    extrapolation = read_table(tables / "extrapolation.csv")
    held = extrapolation[(extrapolation["metric"] == "ce") & (extrapolation["dataset"] == "humaneval")].iloc[0]
    metrics = read_table(tables / "metrics.csv")
    points = metrics[(metrics["metric"] == "ce") & (metrics["dataset"] == "humaneval")].sort_values("S")
    b, a = np.polyfit(np.log(points["S"][:-1]), points["value"][:-1], 1)
    assert held["predicted"] == pytest.approx(a + b * np.log(points["S"].iloc[-1]), rel=1e-9)
    emergence = read_table(tables / "emergence.csv")
    assert emergence["fitted"].notna().any()
    assert read_table(tables / "exponent_contrasts.csv").empty  # no exponent to compare
    assert read_table(tables / "strata_contrasts.csv").empty  # nor between strata
    assert isinstance(fits, pd.DataFrame)


# --- a new stratum kind: in-context repeats ------------------------------------------------------------------


def brute_repeats(
    ids: list[np.ndarray], first: np.ndarray, spec: WindowSpec, doc: np.ndarray, pos: np.ndarray
) -> np.ndarray:
    """Per scored target (doc, pos), 1 where its id occurs earlier in the window that scored it, at a position that
    is itself a target (the document's first scored position or later), by the windows of the true lengths."""
    w = plan_windows(np.array([len(x) for x in ids]), spec, first)
    start = {(int(d), p): int(s) for d, s, f, e in zip(w.doc, w.start, w.score_from, w.end, strict=True)
             for p in range(int(f), int(e))}  # fmt: skip
    out = []
    for d, p in zip(doc.tolist(), pos.tolist(), strict=True):
        earlier = ids[d][max(start[(d, p)], int(first[d])) : p]
        out.append(int((earlier == ids[d][p]).any()))
    return np.array(out, dtype=np.int64)


STRATUM_SCRIPT = """
import json, sys
import numpy as np
from rankscale.config import validate
from rankscale.identity import OWN_SHA
from rankscale.plan.checks import check_analysis
from rankscale.rankfile import RankArrays
from rankscale.strata import StrataSettings
from rankscale.summary import ModelInfo, Resampling, SummarySettings, summarize
from rankscale.windows import WindowSpec

work = sys.argv[1]
config = validate(json.loads(open(f"{work}/config.json").read()))
check_analysis(config)  # the recipe's kind is known now
data = np.load(f"{work}/arrays.npz")
arrays = RankArrays(*(data[k] for k in ("rank", "logprob", "doc", "pos", "target")))
analysis = config["analysis"]
strata = StrataSettings(analysis["strata"], analysis["strata_bins"], [1, 10])
settings = SummarySettings(4, [1, 10], [1], [1], [1, 10], 40, 0, True, 0, strata)
meta = {"vocab_size": 64, "model": "m", "dataset": "d", "S": 10**6, "ties": "ge", OWN_SHA: "m"}
n = int(data["n_docs"])
summary, _, boot = summarize(arrays, meta, settings, Resampling(np.arange(n), n, 40, 0, "d"),
                             ModelInfo("f", None, "m", True, None, "m"), WindowSpec(*json.loads(sys.argv[2])),
                             data["kind_table"])
open(f"{work}/summary.json", "w").write(json.dumps(summary.to_json()))
np.savez(f"{work}/boot.npz", **boot)
"""


def test_a_new_stratum_kind_partitions_the_tokens_of_a_summary(tmp_path: Path) -> None:
    """The stratum recipe's blocks applied to a copy of the workflow: its configuration is refused without them and
    accepted with them, and a summary computed with the kind holds its two strata, which partition the tokens (per
    document, in total, in every replicate) exactly as brute force from the token ids says."""
    work = copy_workflow(tmp_path / "wf")
    for name, path, how, code in recipes():
        if name == "stratum":
            apply(work, path, how, code)
    config = configured(load_yaml(REPO / "config/smoke.yaml"), "stratum")
    assert config["analysis"]["strata"][-1] == "repeat"
    with pytest.raises(ConfigError, match=r"analysis\.strata\[3\]: unknown stratum kind 'repeat'"):
        check_analysis(validate(copy.deepcopy(config)))  # this package, without the recipe

    # documents of a small vocabulary (repeats abound), every third after a BOS, some cut by max_windows_per_doc
    rng = np.random.default_rng(0)
    spec = WindowSpec(max_length=24, stride=8, max_windows_per_doc=4)
    first = np.where(np.arange(60) % 3 == 0, 2, 1)
    ids = [np.concatenate([[63] if f == 2 else [], rng.integers(0, 30, rng.integers(2, 90))]).astype(np.int64)
           for f in first]  # fmt: skip
    w = plan_windows(np.array([len(x) for x in ids]), spec, first)
    doc = np.concatenate([np.full(e - f, d) for d, f, e in zip(w.doc, w.score_from, w.end, strict=True)])
    pos = np.concatenate([np.arange(f, e) for f, e in zip(w.score_from, w.end, strict=True)])
    target = np.array([ids[d][p] for d, p in zip(doc, pos, strict=True)])
    rank = rng.integers(1, 65, doc.size)
    arrays = {"rank": rank, "logprob": -np.log(rank) - 0.1, "doc": doc, "pos": pos, "target": target}
    types = {"rank": np.uint32, "logprob": np.float32, "doc": np.uint32, "pos": np.uint32, "target": np.uint32}
    np.savez(tmp_path / "arrays.npz", **{k: v.astype(types[k]) for k, v in arrays.items()}, n_docs=len(ids),
             kind_table=rng.integers(0, 5, 64).astype(np.uint8))  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    windows = json.dumps([spec.max_length, spec.stride, spec.max_windows_per_doc])
    result = subprocess.run([sys.executable, "-c", STRATUM_SCRIPT, str(tmp_path), windows], cwd=tmp_path,
                            env={"PYTHONPATH": str(work / "src"), "PATH": "/usr/bin:/bin"},
                            capture_output=True, text=True, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]

    summary = json.loads((tmp_path / "summary.json").read_text())
    boot = np.load(tmp_path / "boot.npz")
    labels = [(s["kind"], s["label"]) for s in summary["strata_columns"]]
    cols = [i for i, (kind, _) in enumerate(labels) if kind == "repeat"]
    assert [labels[i] for i in cols] == [("repeat", "first"), ("repeat", "repeat")] and cols[-1] == len(labels) - 1
    brute = brute_repeats(ids, first, spec, doc, pos)
    # the window matters: some ids recur earlier in their document but before their window; some only after a BOS
    in_document = np.array([(ids[d][int(first[d]) : p] == ids[d][p]).any() for d, p in zip(doc, pos, strict=True)])
    assert (in_document & (brute == 0)).any() and 0 < brute.mean() < 1
    sums = summary["sums"]
    np.testing.assert_array_equal(np.asarray(sums["strata_n"])[cols], np.bincount(brute, minlength=2))
    for j, k in enumerate(summary["strata_k"]):
        hits = np.bincount(brute, weights=rank <= k, minlength=2)
        np.testing.assert_array_equal(np.asarray(sums["strata_hits"])[cols, j], hits)
        assert hits.sum() == sums["hits"][summary["k"].index(k)]
    assert sum(np.asarray(sums["strata_n"])[cols]) == sums["n"] == doc.size
    np.testing.assert_array_equal(boot["doc_strata_n"][:, cols].sum(axis=1), boot["doc_n"])
    np.testing.assert_array_equal(boot["rep_strata_n"][:, cols].sum(axis=1), boot["rep_n"])
    at_strata_k = [summary["k"].index(k) for k in summary["strata_k"]]
    np.testing.assert_array_equal(boot["rep_strata_hits"][:, cols].sum(axis=1), boot["rep_hits"][:, at_strata_k])


def test_a_new_stratum_kind_runs_through_the_workflow(extended):
    """With the recipe's kind in `analysis.strata`, every summary of the real run holds its strata as brute force
    from the token files says, and the strata tables give them intervals, laws and the contrast repeat - first."""
    work, files = extended.work, extended.files
    # another test of this module ran another law form, into results/toy_form/: this configuration's tables stand
    result = snakemake(work, "--cores", "2", *extended.args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    models, datasets = models_of(extended.config), list(extended.config["datasets"])
    (tok,) = {files.tokenizers[m] for m in models}  # the ladder's one tokenizer
    for dataset in datasets:
        tokens = load_tokens(work / files.tokens(tok, dataset))
        ids = [tokens.doc(d).astype(np.int64) for d in range(len(tokens.offsets) - 1)]
        for model in models:
            arrays, meta = load_rank_arrays(
                work / files.ranks(model, dataset), work / files.ranks(model, dataset, "json")
            )
            assert all(
                ids[d][p] == t
                for d, p, t in zip(arrays.doc.tolist(), arrays.pos.tolist(), arrays.target.tolist(), strict=True)
            )
            spec = WindowSpec(**meta["windows"])
            brute = brute_repeats(ids, tokens.first_targets(), spec, arrays.doc, arrays.pos)
            summary = json.loads((work / files.summary(model, dataset)).read_text())
            labels = [(s["kind"], s["label"]) for s in summary["strata_columns"]]
            cols = [i for i, (kind, _) in enumerate(labels) if kind == "repeat"]
            assert [labels[i] for i in cols] == [("repeat", "first"), ("repeat", "repeat")]
            np.testing.assert_array_equal(
                np.asarray(summary["sums"]["strata_n"])[cols], np.bincount(brute, minlength=2)
            )
            assert sum(np.asarray(summary["sums"]["strata_n"])[cols]) == summary["n_tokens"]
            assert brute.sum() > 0.05 * brute.size  # code and prose repeat themselves
    strata = read_table(work / "results/toy/tables/strata.csv")
    repeat = strata[strata["kind"] == "repeat"]
    assert set(zip(repeat["model"], repeat["dataset"], strict=True)) == {(m, d) for m in models for d in datasets}
    assert set(repeat["stratum"]) == {"first", "repeat"}
    assert ((repeat["ci_low"] <= repeat["value"]) & (repeat["value"] <= repeat["ci_high"])).all()
    shares = repeat[repeat["metric"] == "ce"].groupby(["model", "dataset"])["share"].sum()
    np.testing.assert_allclose(shares.to_numpy(), 1.0, rtol=0, atol=1e-12)
    contrasts = read_table(work / "results/toy/tables/strata_contrasts.csv")
    repeat = contrasts[contrasts["kind"] == "repeat"]
    assert set(repeat["dataset"]) == set(datasets)
    assert set(repeat["reference"]) == {"first"} and set(repeat["stratum"]) == {"repeat"}
    fitted = repeat[repeat["note"].fillna("") == ""]
    assert (
        len(fitted) and ((fitted["ci_low"] <= fitted["difference"]) & (fitted["difference"] <= fitted["ci_high"])).all()
    )
    fits = read_table(work / "results/toy/tables/strata_fits.csv")
    assert set(fits.loc[fits["kind"] == "repeat", "stratum"]) == {"first", "repeat"}


def test_a_registry_refuses_a_duplicate_name_and_lists_what_it_has() -> None:
    from rankscale.registry import Registry

    first, second = ("a", 1), ("a", 2)
    with pytest.raises(ValueError, match=r"two tables are registered as 'a'"):
        Registry("table", [first, ("b", 0), second], lambda e: e[0])
    registry = Registry("figure", [("x", 1), ("y", 2)], lambda e: e[0])
    assert list(registry) == ["x", "y"] and registry["y"] == ("y", 2) and len(registry) == 2
    with pytest.raises(KeyError, match="no figure 'z'; registered: x, y"):
        registry["z"]
    assert len(TABLES) == len({t.name for module in MODULES for t in module.TABLES})


# --- what each recipe moves: format pins and code digests -------------------------------------------------------

PINS_SCRIPT = """
import json, sys
from pathlib import Path
from rankscale import formats
from rankscale.fingerprint import SCRIPTS, code_digest, entry_digests
from rankscale.plots import FIGURES
from rankscale.tables import TABLES

pins = {name: fmt for name, fmt in vars(formats).items() if isinstance(fmt, formats.FormatVersion)}
pins |= {f"source:{key}": fmt for key, fmt in formats.SOURCE_FORMATS.items()}
print(json.dumps({
    "pins": {name: [fmt.code, fmt.current()] for name, fmt in pins.items()},
    "steps": {step: code_digest(SCRIPTS / f"{step}.py") for step in ("summarize", "token_kinds", "trajectories")},
    "tables": entry_digests(SCRIPTS / "table.py", {name: t.build for name, t in TABLES.items()}),
    "figures": entry_digests(SCRIPTS / "figure.py", {name: f.plot for name, f in FIGURES.items()}),
}))
"""


def pins_of(work: Path) -> dict[str, Any]:
    """The format pins (pinned, current) and the code digests planning gives each step, table and figure, as the
    package of `work` computes them."""
    result = subprocess.run([sys.executable, "-c", PINS_SCRIPT], cwd=work, capture_output=True, text=True,
                            env={"PYTHONPATH": str(work / "src"), "PATH": "/usr/bin:/bin"}, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def unchanged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return pins_of(copy_workflow(tmp_path_factory.mktemp("pins") / "wf"))


ALL = "every one"
# per recipe: the digests of steps, tables and figures that move; no format pin moves. A metric, a form or a stratum
# kind is code every table and figure imports (through rankscale.metrics, rankscale.laws, rankscale.summary); a new
# figure's function or a new table's builder is no other entry's code: its topic module's figures and tables keep
# their digests, but for the table whose builder's module gains module-level code (the recipe's import and columns)
MOVES = {
    "metric": {"steps": {"summarize"}, "tables": ALL, "figures": ALL},
    "form": {"steps": set(), "tables": ALL, "figures": ALL},
    "source": {"steps": set(), "tables": set(), "figures": set()},
    "figure": {"steps": set(), "tables": set(), "figures": set()},
    "stratum": {"steps": {"summarize", "trajectories"}, "tables": ALL, "figures": ALL},
    "table": {"steps": set(), "tables": {"metrics"}, "figures": set()},
}


@pytest.mark.parametrize("recipe", sorted(MOVES))
def test_a_recipe_moves_no_format_pin_and_reruns_what_it_concerns(recipe: str, unchanged, tmp_path: Path) -> None:
    """Each recipe applied alone to a copy of the workflow: every format pin still holds (tests/test_formats.py
    passes: a new source brings its own pin and moves no corpus or training pin), and the code digests that move
    are those of what runs the new code: an existing figure's or table's digest moves only where its own code did."""
    work = copy_workflow(tmp_path / "wf")
    for name, path, how, code in recipes():
        if name == recipe:
            apply(work, path, how, code)
    after = pins_of(work)
    assert {name: code for name, (code, _) in after["pins"].items() if name in unchanged["pins"]} == {
        name: code for name, (code, _) in unchanged["pins"].items()
    }  # the recipe edits no pin
    stale = {name: current for name, (code, current) in after["pins"].items() if code != current}
    assert not stale, f"{recipe}: the recipe moves format pins {stale}"
    added = set(after["pins"]) - set(unchanged["pins"])
    assert added == ({"source:sources/toy.py"} if recipe == "source" else set())
    for kind, expected in MOVES[recipe].items():
        moved = {name for name, code in unchanged[kind].items() if after[kind][name] != code}
        assert moved == (set(unchanged[kind]) if expected == ALL else expected), (recipe, kind, moved)
    new = {"figure": ("figures", "fig_mrr"), "table": ("tables", "rbp_gain")}
    if recipe in new:
        kind, name = new[recipe]
        assert set(after[kind]) - set(unchanged[kind]) == {name}
