"""Families of one model: every table and figure leaves them out of the laws with a note instead of failing, and
cross_family.csv places such a model (e.g. one pretrained model) against another family's law.

The unit tests use synthetic summaries whose metrics follow planted laws exactly; the slow test runs the real
workflow on the ladder beside a one-model family (a run whose every family holds one model is test_pretrained's).
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import yaml

from rankscale.laws import FORMS
from rankscale.plots.common import FigureData, FigureSettings
from rankscale.plots.extrapolation import fig_extrapolation
from rankscale.plots.laws import fig_r2_alpha, fig_rbp1, law_panel
from rankscale.statistics import Totals
from rankscale.summary import Summary
from rankscale.tables import TABLES, Replicates, read_table
from rankscale.tables.cross_family import NO_LAW_FAMILY, cross_family_table
from rankscale.tables.emergence import emergence_laws_table
from rankscale.tables.extrapolation import TWO_SIZES, extrapolation_table
from rankscale.tables.laws import contrasts_table, fits_table
from rankscale.tables.metrics import metrics_table
from rankscale.tables.selection import ONE_SIZE
from rankscale.tables.training import joint_fits_table
from tests.synthetic import summary

POWER_LAW = FORMS["power_law"]
SIZES = np.array([1e5, 4e5, 1.6e6, 6.4e6, 2.56e7])  # the law's family: five sizes
BIG = 40 * SIZES[-1]  # the one-model family's size, 40 times the largest of the law's
C1, ALPHA1 = 3.0, 0.1  # -log RBP_1 = C1 S^-ALPHA1
C10, ALPHA10 = 1.5, 0.2  # -log RBP_10
CE_C, CE_ALPHA = 7.0, 0.05  # CE = CE_C S^-CE_ALPHA
OFF = {1: 0.9, 10: 1.2, "ce": 1.1}  # the one model's measured value over the law's, per quantity


def law(size: float | np.ndarray, c: float, alpha: float) -> np.ndarray:
    return c * np.asarray(size, dtype=np.float64) ** -alpha


def family(
    name: str,
    sizes: Sequence[float],
    neg_log_rbp: dict[int, np.ndarray],
    ce: np.ndarray,
    noise: float,
    seed: int,
    ulps: float = 0.0,
) -> tuple[list[Summary], list[Totals]]:
    """Summaries whose RBP_k and CE are exactly exp(-neg_log_rbp[k]) and `ce` per size, and replicate totals
    jittered by `noise` (each family its own draws, as each family's documents are resampled on their own) and,
    with `ulps`, by up to that many float64 units in the last place: the same totals summed in another order, as
    another CPU's kernels sum them."""
    ks, n, replicates = sorted(neg_log_rbp), 10**6, 64
    rng = np.random.default_rng(seed)
    last_bits = np.random.default_rng(seed + 100)
    summaries, totals = [], []
    for m, size in enumerate(sizes):
        hits = np.array([math.exp(-neg_log_rbp[k][m]) * n for k in ks])
        sums = {"n": n, "sum_logprob": -ce[m] * n, "hits": hits}
        model = f"{name}-{m}" if len(sizes) > 1 else name
        summaries.append(summary(model, int(size), sums, ks, family=name, dataset="d"))
        jitter = np.exp(noise * rng.normal(size=(replicates, 1)))
        jitter = jitter * (1.0 + ulps * np.finfo(np.float64).eps * last_bits.uniform(-1, 1, (replicates, 1)))
        histogram = {stat: np.full(replicates, 1.0) for stat in ("ee", "self_alignment", "confidence")}
        histogram.update(ee_lognormal=np.full(replicates, 1.0), neg_log_p1_lognormal=np.full(replicates, 1.0))
        totals.append(
            Totals(
                {
                    "n": np.full(replicates, float(n)),
                    "sum_logprob": np.full(replicates, -ce[m] * n) * jitter[:, 0],
                    "hits": np.minimum(np.tile(hits, (replicates, 1)) * jitter, n),
                    **histogram,
                }
            )
        )
    return summaries, totals


def planted(
    noise: float = 0.0, law_sizes: Sequence[float] = tuple(SIZES), ulps: float = 0.0
) -> tuple[list[Summary], Replicates]:
    """The law's family `ladder` (planted laws exactly) and `solo`, one model at BIG off the laws by OFF."""
    sizes = np.asarray(law_sizes, dtype=np.float64)
    rbp = {1: law(sizes, C1, ALPHA1), 10: law(sizes, C10, ALPHA10)}
    ladder = family("ladder", sizes, rbp, law(sizes, CE_C, CE_ALPHA), noise, 0, ulps)
    one = {1: OFF[1] * law([BIG], C1, ALPHA1), 10: OFF[10] * law([BIG], C10, ALPHA10)}
    solo = family("solo", [BIG], one, OFF["ce"] * law([BIG], CE_C, CE_ALPHA), noise, 1, ulps)
    summaries, totals = ladder[0] + solo[0], ladder[1] + solo[1]
    return summaries, Replicates(summaries, totals)


def tables(summaries: list[Summary], replicates: Replicates) -> tuple[pd.DataFrame, pd.DataFrame]:
    metrics = metrics_table(summaries, replicates, 0.95)
    return metrics, fits_table(metrics, POWER_LAW, replicates, 0.95, 0, 0)


@pytest.mark.parametrize("ulps", [0, 64, 4096])
def test_cross_family_predicts_a_planted_law_exactly(ulps: float) -> None:
    """A five-size family on -log RBP_k = C S^-alpha exactly: its law at 40x its largest size is known, and the
    one model set at 0.9 (k = 1), 1.2 (k = 10) and 1.1 (CE) times it gives exactly those ratios.

    With `ulps`, the noise-free replicates differ from the points in their last bits, as they do on a CPU whose
    kernels sum and take logs in another order. Those bits are not document noise: below `ROUNDING` they are
    zero, so every CPU sees the same exact law. Before, this CPU's exact zeros made V singular and dropped the
    size level (`documents` alone), and an AMD EPYC's last bits became a V of ~1e-30 whose t mixture moved an
    interval end 1.03e-9 off its point."""
    summaries, replicates = planted(ulps=ulps)
    metrics, fits = tables(summaries, replicates)
    table = cross_family_table(metrics, fits, replicates, [1, 10], 0.95, POWER_LAW, 0, 0)
    assert list(table["model"].unique()) == ["solo"] and set(table["law_family"]) == {"ladder"}
    assert not table["note"].fillna("").any()
    assert set(zip(table["metric"], table["k"].astype(object).where(table["k"].notna(), None), strict=True)) == {
        ("ce", None),
        ("neg_log_rbp", 1),
        ("neg_log_rbp", 10),
    }
    for _, row in table.iterrows():
        c, alpha, off = {1: (C1, ALPHA1, OFF[1]), 10: (C10, ALPHA10, OFF[10])}.get(
            row["k"] if pd.notna(row["k"]) else None, (CE_C, CE_ALPHA, OFF["ce"])
        )
        truth = float(law(BIG, c, alpha))
        assert row["predicted"] == pytest.approx(truth, rel=1e-9)
        assert row["observed"] == pytest.approx(off * truth, rel=1e-9)
        assert row["ratio"] == pytest.approx(off, rel=1e-9)
        assert row["S"] == int(BIG) and row["S_over_law_S_max"] == pytest.approx(40.0)
        assert (row["law_n_models"], row["law_S_min"], row["law_S_max"]) == (5, int(SIZES[0]), int(SIZES[-1]))
        assert row["noise"] == "documents+sizes"
        # noise-free replicates: every interval is the point. What is left is float64 rounding: the exact law's
        # residuals (tau^2 <= 1e-24, asserted below), and with `ulps` the replicates' own last bits, which reach the
        # observed value's percentile interval directly (3e-11 at 4096 ulps). Measured at 0 ulps: 4e-15 on every
        # kernel tried (numpy without AVX2 and AVX-512, OpenBLAS Prescott, ATen default), so 1e-9 leaves 30x.
        # Before, the law's design was a central-difference Jacobian whose rounding set tau^2 ~ 6e-21 and moved
        # the ends 0.65-1.56e-9 depending on the kernels. A document effect (>= 1e-7) fails it.
        for name in ("predicted", "observed", "ratio"):
            assert row[f"{name}_ci_low"] == pytest.approx(row[name], rel=1e-9)
            assert row[f"{name}_ci_high"] == pytest.approx(row[name], rel=1e-9)
        assert row["p_value"] < 0.05  # every replicate off the law by the same factor
    tau2 = fits.loc[fits["family"] == "ladder", "tau2"]
    assert tau2.notna().any() and (tau2.dropna() <= 1e-24).all(), tau2


def test_cross_family_intervals_combine_both_families_noise() -> None:
    """With noisy replicates, the ratio's interval holds the point and is wider than the measured value's
    relative interval alone: the law's refits add their own uncertainty at 40x its sizes."""
    summaries, replicates = planted(noise=0.02)
    metrics, fits = tables(summaries, replicates)
    table = cross_family_table(metrics, fits, replicates, [1], 0.95, POWER_LAW, 0, 0)
    for _, row in table.iterrows():
        for name in ("predicted", "observed", "ratio"):
            assert row[f"{name}_ci_low"] <= row[name] <= row[f"{name}_ci_high"], (name, row)
        observed_width = math.log(row["observed_ci_high"] / row["observed_ci_low"])
        assert math.log(row["ratio_ci_high"] / row["ratio_ci_low"]) > observed_width
    assert table.columns[-1] == "note"


def test_one_model_families_get_note_rows_not_errors() -> None:
    """Every family of one size: each law table says so in a note row, and cross_family has no law to use."""
    summaries, replicates = planted(law_sizes=[SIZES[0]])  # `ladder` shrunk to one size: two one-model families
    metrics, fits = tables(summaries, replicates)
    assert (metrics.groupby("model")["ci_low"].count() > 0).all()
    assert set(fits["note"]) == {ONE_SIZE}
    contrasts = contrasts_table(metrics, fits, replicates, 0.95, POWER_LAW, 0, 0)
    assert list(contrasts["note"]) == [ONE_SIZE, ONE_SIZE] and list(contrasts["family"]) == ["ladder", "solo"]
    extrapolation = extrapolation_table(metrics, replicates, [1, 10], 0.95, POWER_LAW, 0, 0)
    assert list(extrapolation["note"]) == [ONE_SIZE, ONE_SIZE]
    cross = cross_family_table(metrics, fits, replicates, [1, 10], 0.95, POWER_LAW, 0, 0)
    assert list(cross["model"]) == ["ladder", "solo"] and set(cross["note"]) == {NO_LAW_FAMILY}
    runs = emergence_laws_table(summaries, fits, replicates, 0.95, POWER_LAW, 0, 0)
    assert list(runs["note"]) == [ONE_SIZE, ONE_SIZE]
    with_d = metrics.assign(D=pd.array([10**6] * len(metrics), dtype="Int64"))
    with_d = pd.concat([with_d, with_d.assign(D=pd.array([10**7] * len(metrics), dtype="Int64"))])
    joint = joint_fits_table(with_d, replicates, [1], 0.95)
    assert set(joint["note"]) == {ONE_SIZE}


def test_two_sizes_leave_nothing_to_hold_out() -> None:
    summaries, replicates = planted(law_sizes=SIZES[:2])
    metrics, _ = tables(summaries, replicates)
    extrapolation = extrapolation_table(metrics, replicates, [1], 0.95, POWER_LAW, 0, 0)
    assert list(zip(extrapolation["family"], extrapolation["note"], strict=True)) == [
        ("ladder", TWO_SIZES),
        ("solo", ONE_SIZE),
    ]


def figure_data(summaries: list[Summary], replicates: Replicates) -> FigureData:
    metrics, fits = tables(summaries, replicates)
    extrapolation = extrapolation_table(metrics, replicates, [1], 0.95, POWER_LAW, 0, 0)
    return FigureData(
        tables={"metrics": metrics, "powerlaw_fits": fits, "extrapolation": extrapolation},
        datasets=["d"],
        models=[s.model for s in summaries],
        form=POWER_LAW,
        level=0.95,
        refits=0,
        seed=0,
        replicates=replicates,
    )


def test_fig3_marks_the_one_model_and_draws_the_law_out_to_it(tmp_path: Path) -> None:
    """The one model, at 40x the law's largest size: a named star with its interval, the law dashed out to its S,
    and both inside the panel."""
    data = figure_data(*planted(noise=0.02))
    fig, ax = plt.subplots()
    law_panel(ax, data, "d", "neg_log_rbp", 1)
    fig.canvas.draw()
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--" and len(line.get_xdata())]
    assert dashed and max(float(np.max(line.get_xdata())) for line in dashed) == pytest.approx(BIG)
    stars = [line for line in ax.get_lines() if line.get_marker() == "*" and len(line.get_xdata())]
    assert [float(line.get_xdata()[0]) for line in stars] == [pytest.approx(BIG)]
    assert "solo" in [text.get_text() for text in ax.texts]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    measured = OFF[1] * float(law(BIG, C1, ALPHA1))
    assert x0 < SIZES[0] and x1 > BIG and y0 < measured < y1 and y0 < float(law(SIZES[0], C1, ALPHA1)) < y1
    labels = ax.get_legend_handles_labels()[1]
    assert any("solo" in label and "one size" in label for label in labels)
    plt.close(fig)
    fig_rbp1(data, FigureSettings(), tmp_path / "fig3.png")
    assert (tmp_path / "fig3.png").stat().st_size > 5000


def test_figures_of_one_model_families_say_there_is_no_law(tmp_path: Path) -> None:
    data = figure_data(*planted(law_sizes=[SIZES[0]]))
    for name, plot in (("fig3", fig_rbp1), ("fig6", fig_r2_alpha), ("fig9", fig_extrapolation)):
        plot(data, FigureSettings(snr_threshold=2.0), tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").stat().st_size > 3000, name


# the real workflow: every family one model, then the ladder beside a one-model family



def run(work: Path, config: dict[str, object]) -> Path:
    from tests.conftest import snakemake

    path = work / "test.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake(work, "--cores", "2", "--configfile", str(path), timeout=1200)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return work / "results" / path.stem  # the configuration's own directory, results/<run>/


def assert_everything_built(results: Path) -> None:
    from tests.conftest import drawn_figures

    for name in TABLES:
        assert (results / "tables" / f"{name}.csv").is_file(), name
    for name in drawn_figures(results):  # those that apply to it
        for ext in ("png", "pdf"):
            assert (results / "figures" / f"{name}.{ext}").stat().st_size > 3000, (name, ext)


@pytest.mark.slow
def test_a_one_model_family_beside_a_ladder_is_placed_against_its_law(smoke_run: Path, tmp_path: Path) -> None:
    """The smoke study's ladder (three sizes, already trained and scored in the copied run) beside a one-model family:
    a fourth ladder size trained alone and moved out with the ladder's tokenizer, a family and a tokenizer of its own,
    larger than the ladder's models. cross_family.csv places it against the ladder's law, and every table and figure
    is built. A run whose every family holds one model is test_pretrained's real run
    (test_families_of_one_model_build_every_table_and_figure)."""
    from rankscale.plan import ladder_dir
    from tests.conftest import REPO, copy_run, snakemake

    work = copy_run(smoke_run, tmp_path / "work")
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    bigger = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    bigger["ladder"]["sizes"].append({"name": "solo-l2-d128", "layers": 2, "d_model": 128, "heads": 4})
    (work / "bigger.yaml").write_text(yaml.safe_dump(bigger))
    ladder = work / ladder_dir(bigger)
    assert ladder_dir(bigger) == ladder_dir(config)  # sizes do not make a ladder of their own
    result = snakemake(work, str(ladder.relative_to(work) / "models/solo-l2-d128"), "--cores", "2",
                       "--configfile", "bigger.yaml")  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    solo = shutil.copytree(ladder / "models/solo-l2-d128", tmp_path / "solo")
    for file in (ladder / "tokenizer").iterdir():
        if not (solo / file.name).exists():
            shutil.copy2(file, solo / file.name)
    config["models"] = [{"name": "solo", "family": "solo", "path": str(solo)}]
    scored = {path: path.stat().st_mtime_ns for path in (work / "results/ranks").glob("*/*.npz")}
    results = run(work, config)
    assert {path: path.stat().st_mtime_ns for path in scored} == scored, "the ladder's arrays were not reused"
    assert {p.parent.name for p in (work / "results/ranks").glob("*/*.npz")} == {"smoke-a", "smoke-b", "smoke-c", "solo"}
    assert_everything_built(results)
    metrics = read_table(results / "tables/metrics.csv")
    core = metrics[(metrics["model"] == "solo") & metrics["metric"].isin(["rbp", "ce"])]
    assert len(core) and np.isfinite(core[["value", "ci_low", "ci_high"]].to_numpy(float)).all()
    assert (core["ci_low"] <= core["value"]).all() and (core["value"] <= core["ci_high"]).all()
    cross = read_table(results / "tables/cross_family.csv")
    assert set(cross["model"]) == {"solo"} and set(cross["law_family"]) == {"ladder"}
    assert set(cross["metric"]) == {"ce", "neg_log_rbp", "bpb"} and not cross["note"].fillna("").any()
    numbers = cross[[f"{n}{end}" for n in ("predicted", "observed", "ratio") for end in ("", "_ci_low", "_ci_high")]]
    assert np.isfinite(numbers.to_numpy(float)).all() and (cross["S_over_law_S_max"] > 1).all()
    fits = read_table(results / "tables/powerlaw_fits.csv")
    assert set(fits.loc[fits["family"] == "solo", "note"]) == {ONE_SIZE}
    assert fits.loc[fits["family"] == "ladder", "note"].fillna("").eq("").any()
