"""The smoke configuration run end to end by real Snakemake in a temporary directory."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from rankscale.models import ModelSource, load_model, load_tokenizer
from rankscale.plan import ladder_dir
from rankscale.plots import FIGURES as PLOTS
from rankscale.plots import left_out
from rankscale.rankfile import load_rank_arrays
from rankscale.statistics import k_grid
from rankscale.tables import TABLES
from rankscale.tokens import load_tokens
from tests.conftest import REPO, copy_workflow, files, snakemake, study_figures
from tests.report_study import docutils_messages
from tests.tolerances import (
    PathTolerance,
    assert_logprobs_close,
    assert_ranks_close,
    extraction_threads,
    head_inputs,
    path_tolerance,
    reference_threads,
)

pytestmark = pytest.mark.slow

MODELS = ["smoke-a", "smoke-b", "smoke-c"]
DATASETS = ["humaneval", "pydoc"]
FIGURES = study_figures()  # those the smoke run draws: no checkpoints, no seeds, so not Figs. 10-12
SMOKE = files(REPO, "config/smoke.yaml")  # where the smoke run puts each file


def test_every_table_and_figure_exists(smoke_run):
    for name in TABLES:
        assert (smoke_run / "results/smoke/tables" / f"{name}.csv").stat().st_size > 0
    for name in FIGURES:
        for ext in ("png", "pdf"):
            path = smoke_run / "results/smoke/figures" / f"{name}.{ext}"
            assert path.stat().st_size > 5000, path
    assert not list((smoke_run / "results").rglob("*.tmp*")), "temporary files left behind"


def test_figures_that_do_not_apply_are_left_out_and_the_report_says_why(smoke_run):
    skipped = [name for name in PLOTS if name not in FIGURES]
    assert skipped == ["fig10_rbp_vs_tokens", "fig11_compute_frontier", "fig12_seeds"]
    for name in skipped:
        assert not list((smoke_run / "results/smoke/figures").glob(f"{name}.*")), name
    landing = (smoke_run / "results/smoke/report/landing.rst").read_text()
    for name in skipped:
        assert f'data-figure="{name}"' in landing, name
    assert "no model is a checkpoint" in landing and "no size was trained with more than one seed" in landing


def test_left_out_follows_the_models():
    final = {"family": "f", "final": True, "replica_of": "a"}
    checkpoint = {"family": "f", "final": False, "replica_of": "a"}
    other = {"family": "f", "final": True, "replica_of": "b"}
    assert set(left_out([final, other])) == {"fig10_rbp_vs_tokens", "fig11_compute_frontier", "fig12_seeds"}
    assert set(left_out([final, checkpoint, other])) == {"fig12_seeds"}  # a checkpoint: Figs. 10 and 11 apply
    assert set(left_out([final, final, other])) == {"fig10_rbp_vs_tokens", "fig11_compute_frontier"}  # two seeds
    # two sizes called alike in two families are not seeds of one size
    assert "fig12_seeds" in left_out([final, {**final, "family": "g"}])


def test_metrics_are_sane(smoke_run):
    metrics = pd.read_csv(smoke_run / "results/smoke/tables/metrics.csv", dtype={"k": "Int64"})
    assert set(metrics["model"]) == set(MODELS) and set(metrics["dataset"]) == set(DATASETS)
    rbp = metrics[metrics["metric"] == "rbp"]
    assert rbp["value"].between(0, 1).all()
    for (model, dataset), group in rbp.groupby(["model", "dataset"]):
        group = group.sort_values("k")
        # the analysis grid plus every k a figure shows (smoke figures.large_k: 200, 400, 512)
        assert list(group["k"]) == k_grid(512, 12, [1, 10, 50, 100, 1000, 20000, 30000, 200, 400, 512])
        assert {200, 400}.issubset(set(group["k"])), (model, dataset)
        assert len(group) >= 40
        assert np.all(np.diff(group["value"].to_numpy()) >= 0), "RBP_k must not decrease with k"
        assert group["value"].iloc[-1] == 1.0, "RBP_|V| is 1"
    ce = metrics[metrics["metric"] == "ce"]
    assert (ce["value"] > 0).all() and (ce["value"] < np.log(512) + 2).all()
    sizes = metrics.groupby("model")["S"].first()
    assert sizes["smoke-a"] < sizes["smoke-b"] < sizes["smoke-c"]
    # S of a 2-layer GPT-NeoX, d = 32: L (12 d^2 + 13 d) + 2 d
    assert sizes["smoke-b"] == 2 * (12 * 32**2 + 13 * 32) + 2 * 32


def test_tables_agree_with_rank_arrays(smoke_run):
    """metrics.csv, lognormal and emergence rows recomputed from the raw rank arrays."""
    metrics = pd.read_csv(smoke_run / "results/smoke/tables/metrics.csv", dtype={"k": "Int64"})
    emergence = pd.read_csv(smoke_run / "results/smoke/tables/emergence.csv")
    for model in MODELS:
        for dataset in DATASETS:
            arrays, meta = load_rank_arrays(
                smoke_run / SMOKE.ranks(model, dataset), smoke_run / SMOKE.ranks(model, dataset, "json")
            )
            rows = metrics[(metrics["model"] == model) & (metrics["dataset"] == dataset)]
            ce = rows[rows["metric"] == "ce"]["value"].item()
            assert ce == pytest.approx(-arrays.logprob.astype(np.float64).mean(), rel=1e-9)
            for k in (1, 10, 100):
                got = rows[(rows["metric"] == "rbp") & (rows["k"] == k)]["value"].item()
                assert got == pytest.approx(np.mean(arrays.rank <= k), abs=1e-12)
            em = emergence[(emergence["model"] == model) & (emergence["dataset"] == dataset)]
            row = em[(em["k"] == 10) & (em["N"] == 2)].iloc[0]
            assert row["predicted"] == pytest.approx(np.mean(arrays.rank <= 10) ** 2)
            assert meta["n_tokens"] == arrays.rank.size and meta["vocab_size"] == 512


def test_fits_are_finite(smoke_run):
    fits = pd.read_csv(smoke_run / "results/smoke/tables/powerlaw_fits.csv", dtype={"k": "Int64"})
    for metric, k in (("neg_log_rbp", 1), ("neg_log_rbp", 10), ("ce", None)):
        sel = fits[(fits["metric"] == metric) & (fits["k"].isna() if k is None else fits["k"] == k)]
        assert len(sel) == len(DATASETS)
        assert np.isfinite(sel["alpha"]).all() and (sel["C"] > 0).all() and sel["r2"].between(-1e-9, 1 + 1e-9).all()
        assert (sel["n_models"] == 3).all()
    lognormal = pd.read_csv(smoke_run / "results/smoke/tables/lognormal_fits.csv")
    assert len(lognormal) == len(MODELS) * len(DATASETS)
    assert (lognormal["sigma"] > 0).all()
    assert np.allclose(lognormal["mu_over_sigma"], lognormal["mu"] / lognormal["sigma"])


def test_ranks_match_an_independent_reference(smoke_run):
    """Per-window forward pass of a ladder checkpoint, brute-force rank: agreement up to float32 rounding."""
    model_dir = smoke_run / ladder_dir(yaml.safe_load((REPO / "config/smoke.yaml").read_text())) / "models/smoke-c"
    source = ModelSource.directory("smoke-c", str(model_dir))
    # as the smoke run's extraction jobs load it (config/smoke.yaml: float32 on the CPU)
    model = load_model(source, dtype="float32", device="cpu", device_map=None, attn_implementation=None)
    tokenizer = load_tokenizer(source)
    arrays, meta = load_rank_arrays(
        smoke_run / SMOKE.ranks("smoke-c", "pydoc"), smoke_run / SMOKE.ranks("smoke-c", "pydoc", "json")
    )
    corpus = load_tokens(smoke_run / SMOKE.model_tokens("smoke-c", "pydoc"))
    vocab = len(tokenizer)
    max_length, stride = meta["windows"]["max_length"], meta["windows"]["max_length"] // 2
    if extraction_threads():
        assert meta["threads"] == extraction_threads()
    seen = 0
    ranks, logprobs, tols = [], [], []
    with torch.no_grad(), reference_threads(), head_inputs(model) as hidden:
        for d in range(len(corpus.offsets) - 1):
            tokens = corpus.doc(d)
            first_target, end = 1, min(max_length, len(tokens))
            while True:
                start = max(0, end - max_length)
                logits = model(input_ids=torch.from_numpy(tokens[start:end].astype(np.int64))[None]).logits[0].float()
                rows = torch.arange(first_target - 1 - start, end - 1 - start)
                targets = torch.from_numpy(tokens[first_target:end].astype(np.int64))
                tol = path_tolerance(logits[rows, :vocab], targets, hidden[-1][0, rows], model.get_output_embeddings())
                tols.append(tol)
                for p in range(first_target, end):
                    row = logits[p - 1 - start, :vocab]
                    t = int(tokens[p])
                    assert arrays.doc[seen] == d and arrays.pos[seen] == p and arrays.target[seen] == t
                    ranks.append(int((row >= row[t]).sum()))
                    logprobs.append(float(torch.log_softmax(row, 0)[t]))
                    seen += 1
                if end == len(tokens):
                    break
                first_target, end = end, min(end + stride, len(tokens))
    assert seen == arrays.rank.size
    # the workflow's batched extraction against these per-window passes: float32 paths that round differently.
    # Was: every rank exact, log-probs abs=2e-5. Now each token's float32 bound, from u * sqrt(d) * sum|w h| of
    # its own logits, and ranks equal but at counted near ties (tests/tolerances.py)
    tol = PathTolerance.concat(tols)
    assert_ranks_close(arrays.rank, np.array(ranks), tol, "smoke-c pydoc: workflow vs per-window")
    assert_logprobs_close(arrays.logprob, np.array(logprobs), tol, "smoke-c pydoc: workflow vs per-window")


def test_rerun_is_a_no_op_and_report_builds(smoke_run):
    dry = snakemake(smoke_run, "-n", "--cores", "2", "--configfile", "config/smoke.yaml")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "Nothing to be done" in dry.stdout + dry.stderr
    report = snakemake(
        smoke_run, "--cores", "1", "--configfile", "config/smoke.yaml", "--report", "results/smoke/report.html"
    )
    assert report.returncode == 0, report.stderr[-3000:]
    html = (smoke_run / "results/smoke/report.html").read_text(errors="replace")
    assert len(html) > 100_000
    # docutils said nothing of a caption or the landing page: each message is an ERROR block in the report
    assert not docutils_messages(report.stdout + report.stderr) and not docutils_messages(html)
    for name in FIGURES:
        assert name in html
    # the run manifest opens it
    manifest = json.loads((smoke_run / "results/smoke/manifest.json").read_text())
    assert manifest["config_digest"] in html and "wall time: extract" in html


def test_the_run_manifest_says_what_made_the_results(smoke_run):
    from rankscale.canon import canonical, short_hash
    from rankscale.config import validate

    manifest = json.loads((smoke_run / "results/smoke/manifest.json").read_text())
    config = validate(yaml.safe_load((smoke_run / "config/smoke.yaml").read_text()))
    assert manifest["config_digest"] == short_hash(canonical(config))
    assert manifest["commit"] is None and manifest["dirty"] is None  # the test's copy is no git checkout
    pairs = len(config["ladder"]["sizes"]) * len(config["datasets"])
    assert manifest["devices"] == {"cpu": pairs}
    rules = manifest["rules"]
    assert rules["extract"]["jobs"] == rules["summarize"]["jobs"] == pairs
    assert rules["ladder_train"]["jobs"] == len(config["ladder"]["sizes"]) and rules["table"]["jobs"] == len(TABLES)
    seconds = [float(line.split("\t")[0]) for path in (smoke_run / "results/benchmarks/extract").rglob("*.tsv")
               for line in path.read_text().splitlines()[1:]]  # fmt: skip
    assert abs(rules["extract"]["wall_s"] - sum(seconds)) <= 0.05 + 1e-9  # rounded to 0.1 s, summed in its own order
    assert manifest["versions"]["torch"] and manifest["host"]["cpus"] >= 1


def test_lint_is_clean(tmp_path):
    workdir = copy_workflow(tmp_path / "lint")
    result = snakemake(workdir, "--lint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Lints for" not in result.stdout + result.stderr


def test_sidecar_records_provenance(smoke_run):
    meta = json.loads((smoke_run / SMOKE.ranks("smoke-a", "humaneval", "json")).read_text())
    for key in (
        "resolved_revision",
        "S",
        "vocab_size",
        "tokenizer_sha256",
        "corpus_sha256",
        "windows",
        "ties",
        "dtype",
        "device",
        "n_tokens",
        "wall_time_s",
        "versions",
        "sha256",
    ):
        assert key in meta, key
    assert meta["ties"] == "ge" and meta["dtype"] == "float32" and meta["resolved_revision"].startswith("sha256:")
    note = (smoke_run / "logs/summarize/smoke-a" / f"{SMOKE.summary_keys[('smoke-a', 'humaneval')]}.log").read_text()
    assert "default k values above |V| = 512 left out: [1000, 20000, 30000]" in note  # info: the user wrote none of them
    assert (REPO / "config/smoke.yaml").exists()


def test_every_number_has_an_interval(smoke_run):
    """Percentile intervals of the document bootstrap sit around every estimate (docs/science.md, Uncertainty)."""
    tables = smoke_run / "results/smoke/tables"
    metrics = pd.read_csv(tables / "metrics.csv")
    # a statistic biased under resampling gets no interval rather than a wrong one, and says why (ci_note)
    none = metrics["ci_low"].isna() | metrics["ci_high"].isna()
    assert metrics.loc[none, "ci_note"].fillna("").str.len().gt(0).all()
    assert set(metrics.loc[none, "metric"]) <= {"ee", "self_alignment", "confidence", "ee_lognormal", "neg_log_p1_lognormal"}
    ok = metrics[~none]
    assert ((ok["ci_low"] <= ok["value"]) & (ok["value"] <= ok["ci_high"])).all()
    assert (metrics.loc[metrics["metric"].isin(["rbp", "ce"]), "ci_low"].notna()).all()
    fits = pd.read_csv(tables / "powerlaw_fits.csv").dropna(subset=["alpha"])
    for p in ("alpha", "C", "r2"):  # a quantity its refits all miss on one side (R² of a near-perfect law) has none
        has = fits[f"{p}_ci_low"].notna() & fits[f"{p}_ci_high"].notna()
        assert ((fits[f"{p}_ci_low"] <= fits[p]) & (fits[p] <= fits[f"{p}_ci_high"]))[has].all(), p
        assert has.mean() > 0.8, (p, has.mean())
    assert (fits["snr"] > 0).all()
    emergence = pd.read_csv(tables / "emergence.csv")
    for p in ("predicted", "empirical"):
        ok = emergence[p].notna()
        assert ((emergence[f"{p}_ci_low"] <= emergence[p]) & (emergence[p] <= emergence[f"{p}_ci_high"]))[ok].all()
    contrasts = pd.read_csv(tables / "exponent_contrasts.csv")
    # a contrast of a law that has no interval (some model's statistic biased under resampling) has no p either
    gated = contrasts["note"].fillna("").str.contains("no interval: ")
    assert set(contrasts["dataset"]) == set(DATASETS) and contrasts.loc[~gated, "p_value"].between(0, 1).all()
    assert contrasts.loc[gated, ["ci_low", "ci_high", "p_value"]].isna().all().all() and (~gated).any()
    # the calibration laws beside their contrast with -log RBP_1: an OLS exponent's difference is the ratio's exponent
    nucleus = pd.read_csv(tables / "nucleus_fits.csv").dropna(subset=["difference"])
    assert set(nucleus["dataset"]) == set(DATASETS) and nucleus["metric"].str.startswith("neg_log_nucleus_").any()
    assert np.allclose(nucleus["difference"], nucleus["alpha"] - nucleus["alpha_rbp1"], rtol=0, atol=1e-9)
    extrapolation = pd.read_csv(tables / "extrapolation.csv")
    assert set(extrapolation["held_out_model"]) == {"smoke-c"} and (extrapolation["n_fit"] == 2).all()
    forms = pd.read_csv(tables / "form_comparison.csv")
    assert set(forms["form"]) == {"power_law", "offset_power_law"}
    fitted = forms.assign(fitted=forms["note"].isna()).groupby(["dataset", "metric", "k"], dropna=False)
    assert (fitted["preferred"].sum() == fitted["fitted"].any().astype(int)).all()  # one form, where any fits


def test_the_bootstrap_is_paired_within_a_family(smoke_run):
    """Every model of a family on a dataset is resampled with the same documents: the ladder shares one
    tokenizer, so each replicate's token count is identical across models."""
    for dataset in DATASETS:
        counts = []
        for model in MODELS:
            with np.load(smoke_run / SMOKE.summary(model, dataset, "boot.npz")) as boot:
                counts.append(boot["rep_n"])
                assert boot["rep_hits"].shape == (
                    1000,
                    len(json.loads((smoke_run / SMOKE.summary(model, dataset)).read_text())["k"]),
                )
        assert all(np.array_equal(counts[0], c) for c in counts[1:])
        assert counts[0].std() > 0  # and the replicates do differ
