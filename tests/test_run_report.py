"""A run that reports: the summary it prints at its end, the loader of its results, the paper's claims checked."""

from __future__ import annotations

import math
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from rankscale.rankfile import load_rank_arrays
from rankscale.report.heavy_documents import HEAVY_DOCUMENTS
from rankscale.report.landing import shown
from rankscale.results import INDEX, load
from rankscale.run_summary import WARNING, report_command, report_refusal, write_report_command
from rankscale.tables import TABLES, read_table
from rankscale.tables.claims import CLAIMS, NO, UNDECIDED, UNTESTABLE, YES, Value, claims_table
from tests.conftest import REPO, SMOKE_OUTPUT, copy_run, files, snakemake

SMOKE = files(REPO, "config/smoke.yaml")


def fit_row(family: str, dataset: str, k: int | None, r2: float, r2_ci: tuple[float, float],
            alpha: float = 0.05, alpha_ci: tuple[float, float] = (0.03, 0.07), n_models: int = 4,
            metric: str = "neg_log_rbp") -> dict:  # fmt: skip
    return {"family": family, "dataset": dataset, "metric": metric, "k": k, "n_models": n_models, "alpha": alpha,
            "alpha_ci_low": alpha_ci[0], "alpha_ci_high": alpha_ci[1], "r2": r2, "r2_ci_low": r2_ci[0],
            "r2_ci_high": r2_ci[1], "note": ""}  # fmt: skip


def synthetic_fits() -> pd.DataFrame:
    """A family whose laws are known: R² 0.995 [0.985, 0.999] at k = 1 (above 0.98: holds), 0.90 [0.85, 0.95] at
    k = 10 (wholly below 0.97: fails), 0.97 [0.95, 0.99] at k = 50 (straddles: undecided), no law at k = 100; R²
    above 0.9 up to k = 1000, first below at k = 20000 of |V| = 50000; and a family of one size."""
    rows = [
        fit_row("f", "d", 1, 0.995, (0.985, 0.999)),
        fit_row("f", "d", 10, 0.90, (0.85, 0.95)),
        fit_row("f", "d", 50, 0.97, (0.95, 0.99)),
        fit_row("f", "d", 1000, 0.93, (0.91, 0.95)),
        fit_row("f", "d", 20000, 0.5, (0.2, 0.7)),
        fit_row("f", "d", None, 0.99, (0.98, 1.0), metric="ce"),
        # calibration: the error shrinks with S (alpha wholly above 0), the PIT's distance undecided
        fit_row("f", "d", None, 0.9, (0.8, 0.95), alpha=0.2, alpha_ci=(0.1, 0.3), metric="calibration_error"),
        fit_row("f", "d", None, 0.5, (0.1, 0.9), alpha=0.05, alpha_ci=(-0.1, 0.2), metric="pit_distance"),
        fit_row("one", "d", 1, math.nan, (math.nan, math.nan), n_models=1),
    ]
    frame = pd.DataFrame(rows)
    frame.loc[frame["family"] == "one", "note"] = "one size"
    frame["k"] = frame["k"].astype("Int64")
    return frame


def test_claims_hold_fail_or_stay_undecided_by_their_intervals():
    facts = {
        ("f", "d"): {"vocab_size": 50000, "growth": Value(0.10, 0.05, 0.15, 100),
                     "rbp1_minus_ce": Value(0.03, 0.01, 0.05, 1)},  # fmt: skip
        ("one", "d"): {"vocab_size": 50000},
    }
    table = claims_table(synthetic_fits(), facts)
    got = table[table["family"] == "f"].set_index("claim")
    assert list(got.index) == [c.name for c in CLAIMS]
    assert got.loc["r2_k1", "holds"] == YES and got.loc["r2_k1", "value"] == 0.995
    assert (got.loc["r2_k1", "ci_low"], got.loc["r2_k1", "ci_high"]) == (0.985, 0.999)
    assert got.loc["r2_k10", "holds"] == NO  # its whole interval lies below 0.97
    assert got.loc["r2_k50", "holds"] == UNDECIDED
    assert got.loc["r2_k100", "holds"] == UNTESTABLE and "k not on this run's grid" in got.loc["r2_k100", "note"]
    # k < 1000: 1, 10, 50; k = 10's [0.85, 0.95] straddles 0.9, the others lie above: undecided, at the lowest R²
    assert got.loc["r2_below_1000", "holds"] == UNDECIDED and got.loc["r2_below_1000", "value"] == 0.90
    assert got.loc["r2_below_1000", "k"] == 10
    # R² first below 0.9 at k = 20000 (k = 10's 0.90 is not below): 0.4 of |V|, near it
    assert got.loc["breakdown_near_V", "k"] == 20000 and got.loc["breakdown_near_V", "value"] == 0.4
    assert got.loc["breakdown_near_V", "holds"] == YES
    assert got.loc["alpha_k1_small", "holds"] == YES  # [0.03, 0.07] below 0.1
    assert got.loc["alpha_grows_with_k", "holds"] == YES  # [0.05, 0.15] above 0
    assert got.loc["ce_exponent_close", "holds"] == NO  # [0.01, 0.05] excludes 0
    # calibration's published answers, by the exponents' intervals: improves [0.1, 0.3] > 0; so not flat; the PIT
    # distance's [-0.1, 0.2] neither wholly below 0 nor above: inverse scaling undecided
    assert got.loc["calibration_improves", "holds"] == YES and got.loc["calibration_improves", "value"] == 0.2
    assert got.loc["calibration_flat", "holds"] == NO  # [0.1, 0.3] excludes 0
    assert got.loc["nucleus_inverse", "holds"] == UNDECIDED
    flat = claims_table(pd.DataFrame([fit_row("g", "d", None, 0.5, (0.1, 0.9), alpha=0.004, alpha_ci=(-0.012, 0.018),
                                              metric="calibration_error")]).astype({"k": "Int64"}), {})  # fmt: skip
    flat = flat.set_index("claim")
    assert flat.loc["calibration_flat", "holds"] == YES and flat.loc["calibration_improves", "holds"] == UNDECIDED
    assert flat.loc["nucleus_inverse", "holds"] == UNTESTABLE and "calibration fields" in flat.loc["nucleus_inverse", "note"]
    # a family where some final model's arrays lack the fields: a law over the others is not the family's
    partial = claims_table(pd.DataFrame([fit_row("g", "d", None, 0.5, (0.1, 0.9), alpha=0.004, alpha_ci=(-0.012, 0.018),
                                                 metric="calibration_error")]).astype({"k": "Int64"}),
                           {("g", "d"): {"without_calibration": ["g-small"]}}).set_index("claim")  # fmt: skip
    assert partial.loc["calibration_flat", "holds"] == UNTESTABLE and "g-small" in partial.loc["calibration_flat", "note"]
    one = table[table["family"] == "one"]
    assert len(one) == len(CLAIMS) and (one["holds"] == UNTESTABLE).all() and (one["note"] == "one size: no law").all()


def test_a_claim_without_an_interval_is_judged_by_its_point_and_says_so():
    fits = pd.DataFrame([fit_row("f", "d", 1, 0.99, (math.nan, math.nan))]).astype({"k": "Int64"})
    table = claims_table(fits, {("f", "d"): {"vocab_size": 512}}).set_index("claim")
    assert table.loc["r2_k1", "holds"] == YES and "point" in table.loc["r2_k1", "note"]
    # the grid stops at k = 1, far below |V|/2: where the law breaks down cannot be seen
    assert table.loc["breakdown_near_V", "holds"] == UNTESTABLE


def test_report_command_and_refusal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config/config.yaml").write_text("")
    (tmp_path / "my.yaml").write_text("")
    default = tmp_path / "config/config.yaml"
    assert report_command(tmp_path / "results/default", [default], default).endswith(
        "--report " + str(tmp_path / "results/default/report.html")
    )
    mine = report_command(tmp_path.joinpath("results/my"), [tmp_path / "my.yaml"], default)
    assert mine.endswith("report.html --configfile my.yaml"), mine  # relative to where the user runs it
    (tmp_path / "more.yaml").write_text("")
    two = report_command(tmp_path / "results/my", [tmp_path / "my.yaml", default, tmp_path / "more.yaml"], default)
    assert two.endswith("--configfile my.yaml more.yaml"), two  # one flag: a second --configfile would replace it
    write_report_command(tmp_path / "results/my", mine)
    # the default configuration has not run: a report of it is refused, pointing to the run that has
    refusal = report_refusal(["snakemake", "--report", "results/my/report.html"], tmp_path / "results/default",
                             tmp_path / "results/default/manifest.json")  # fmt: skip
    assert refusal is not None and "nothing to report" in refusal and mine in refusal
    # the default has run too: a report written into results/my/ with the default's configuration is refused
    (tmp_path / "results/default").mkdir()
    (tmp_path / "results/default/manifest.json").write_text("{}")
    argv = ["snakemake", "--report", "results/my/report.html"]
    refusal = report_refusal(argv, tmp_path / "results/default", tmp_path / "results/default/manifest.json")
    assert refusal is not None and "another run's directory" in refusal and mine in refusal
    ok = ["snakemake", "--report=results/default/report.html"]
    assert report_refusal(ok, tmp_path / "results/default", tmp_path / "results/default/manifest.json") is None
    assert report_refusal(["snakemake", "--cores", "2"], tmp_path / "results/x", tmp_path / "nope.json") is None


@pytest.mark.slow
def test_the_run_ends_with_a_summary_of_what_it_found(smoke_run):
    said = (smoke_run / SMOKE_OUTPUT).read_text()
    summary = said[said.index("rankscale: results in results/smoke/") :]
    lines = summary.splitlines()
    fits = read_table(smoke_run / "results/smoke/tables/powerlaw_fits.csv")
    for dataset in ("humaneval", "pydoc"):
        line = next(line for line in lines if line.strip().startswith(f"ladder / {dataset}"))
        for metric, k, label in (("neg_log_rbp", 1, "-log RBP_1: "), ("ce", None, "CE: ")):
            row = fits[(fits["dataset"] == dataset) & (fits["metric"] == metric)
                       & (fits["k"].isna() if k is None else fits["k"].eq(k).fillna(False))].iloc[0]  # fmt: skip
            want = f"{label}{shown(row['alpha'])} [{shown(row['alpha_ci_low'])}, {shown(row['alpha_ci_high'])}]"
            assert want in line, (want, line)
    # the warnings counted are those the jobs' logs hold (three summaries of pydoc's 13 documents)
    logs = [*smoke_run.glob("logs/extract/*/*.log"), *smoke_run.glob("logs/summarize/*/*.log"),
            *smoke_run.glob("results/smoke/logs/*/*.log")]  # fmt: skip
    count = sum(WARNING in line for path in logs for line in path.read_text().splitlines())
    assert count > 0 and f"  {count} warning(s) in the jobs' logs" in summary
    assert "  report: snakemake --report results/smoke/report.html --configfile config/smoke.yaml" in lines
    # pydoc's 13 documents are worth about 3 (under 10): a paragraph says what its tables flag; HumanEval's 40 none
    metrics = read_table(smoke_run / "results/smoke/tables/metrics.csv")
    pydoc, humaneval = (metrics[metrics["dataset"] == d] for d in ("pydoc", "humaneval"))
    assert pydoc["n_eff_documents"].min() < HEAVY_DOCUMENTS <= humaneval["n_eff_documents"].min()
    [note] = [line for line in lines if "few heavy documents" in line]
    assert note.startswith(f"  pydoc: {pydoc['n_eff_documents'].min():.1f} effective documents of 13 (under 10")
    flagged = int(pydoc["ci_reliable"].astype(str).ne("True").sum())
    assert flagged > 0 and f"{flagged} of {len(pydoc)} in metrics.csv" in note and "Why: " in note
    landing = (smoke_run / "results/smoke/report/landing.rst").read_text()
    assert landing.count('class="heavy-documents"') == 1 and 'class="heavy-documents" data-dataset="pydoc"' in landing
    assert f"{flagged} of {len(pydoc)} in metrics.csv" in landing
    # quiet: no numpy warning anywhere in the run, and the default k above |V| = 512 left out without a warning
    assert "RuntimeWarning" not in said
    assert "WARNING rankscale: k values above |V|" not in said and "default k values above |V| = 512" in said


@pytest.mark.slow
def test_report_without_its_configuration_refuses_with_the_fix(smoke_run, tmp_path):
    work = copy_run(smoke_run, tmp_path / "work")
    (work / "results/smoke/report.html").unlink(missing_ok=True)  # another test may have reported the shared run
    done = snakemake(work, "--report", "results/smoke/report.html")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "nothing to report" in done.stderr
    assert "`snakemake --report results/smoke/report.html --configfile config/smoke.yaml`" in done.stderr
    assert "Traceback" not in done.stderr and not (work / "results/smoke/report.html").exists()


@pytest.mark.slow
def test_results_load_tables_and_rank_arrays_by_model_and_dataset(smoke_run, tmp_path):
    results = load(smoke_run / "results/smoke")
    assert set(results.tables) == set(TABLES)
    pd.testing.assert_frame_equal(results.tables["metrics"], read_table(smoke_run / "results/smoke/tables/metrics.csv"))
    assert results.models == ["smoke-a", "smoke-b", "smoke-c"] and results.datasets == ["humaneval", "pydoc"]
    for model in results.models:
        for dataset in results.datasets:
            want, meta = load_rank_arrays(smoke_run / SMOKE.ranks(model, dataset),
                                          smoke_run / SMOKE.ranks(model, dataset, "json"))  # fmt: skip
            got = results.ranks(model=model, dataset=dataset)
            np.testing.assert_array_equal(got.rank, want.rank)
            np.testing.assert_array_equal(got.logprob, want.logprob)
            assert results.sidecar(model, dataset) == meta
    with pytest.raises(KeyError, match="no rank array of model 'nope'.*models: smoke-a, smoke-b, smoke-c"):
        results.ranks(model="nope", dataset="pydoc")
    # a run made before the index: the arrays are found from their sidecars
    old = copy_run(smoke_run, tmp_path / "old")
    os.remove(old / "results/smoke" / INDEX)
    scanned = load(old / "results/smoke")
    assert scanned.arrays == tuple(sorted(results.arrays, key=lambda a: (a.model, a.dataset)))
    with pytest.raises(FileNotFoundError, match="no tables/"):
        load(tmp_path)
    shutil.rmtree(old)


@pytest.mark.slow
def test_the_claims_table_reads_the_run_s_own_fits_and_contrasts(smoke_run):
    tables = smoke_run / "results/smoke/tables"
    claims = read_table(tables / "paper_claims.csv")
    fits = read_table(tables / "powerlaw_fits.csv")
    contrasts = read_table(tables / "exponent_contrasts.csv")
    for dataset in ("humaneval", "pydoc"):
        got = claims[claims["dataset"] == dataset].set_index("claim")
        r2 = fits[(fits["dataset"] == dataset) & (fits["metric"] == "neg_log_rbp") & fits["k"].eq(1).fillna(False)]
        assert got.loc["r2_k1", "value"] == r2["r2"].iloc[0] and got.loc["r2_k1", "ci_low"] == r2["r2_ci_low"].iloc[0]
        # the same paired contrast as exponent_contrasts.csv's (the same replicates, the same refits)
        pair = contrasts[(contrasts["dataset"] == dataset) & (contrasts["metric"] == "neg_log_rbp")
                         & contrasts["k"].eq(1).fillna(False) & (contrasts["versus"] == "ce")].iloc[0]  # fmt: skip
        close = got.loc["ce_exponent_close"]
        assert (close["value"], close["ci_low"], close["ci_high"]) == (pair["difference"], pair["ci_low"],
                                                                      pair["ci_high"])  # fmt: skip
        assert close["holds"] == (YES if pair["ci_low"] <= 0 <= pair["ci_high"] else NO)
    landing = (smoke_run / "results/smoke/report/landing.rst").read_text()
    assert 'class="claims"' in landing and 'data-claim="ce_exponent_close"' in landing
    assert 'class="models"' in landing and 'data-model="smoke-c" data-dataset="pydoc"' in landing
