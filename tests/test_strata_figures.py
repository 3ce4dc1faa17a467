"""Fig. 13 (the exponents of every stratum's laws) and Fig. 13b (-log RBP_1 against S per frequency bin), drawn
from strata tables built here with planted laws: what is drawn is what the tables say, strata without a law are
left out and named, legends sit off the data, and empty or one-size inputs say there is nothing to draw."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from rankscale.laws import FORMS
from rankscale.plan.settings import figure_settings
from rankscale.plots import FIGURES, strata
from rankscale.plots.common import FigureData, FigureSettings
from tests.test_figures import assert_legends_off_the_data, capture

SIZES = np.array([1e4, 1e5, 1e6])
MODELS = ["m0", "m1", "m2"]
STRATA = {  # kind -> its strata, in table order
    "frequency": ["1-10", "11-100", "101-1000", "1001+"],
    "context": ["1-3", "4-15"],
    "kind": ["word", "number"],
}
LAWS = [("neg_log_rbp", 1), ("neg_log_rbp", 10), ("neg_log_rbp", 100), ("ce", None)]
UNFITTED = {("frequency", "1001+"): None, ("frequency", "11-100"): ("neg_log_rbp", 1)}  # None: every law
EMPTY_BIN = ("frequency", "1001+")  # no scored token


def planted_alpha(dataset: str, kind: str, stratum: str, law: str, k: int | None) -> float:
    """A distinct exponent for every law, so each drawn point can be traced to its row."""
    d = ["d1", "d2"].index(dataset)
    s = STRATA[kind].index(stratum)
    j = LAWS.index((law, k))
    return round(0.02 + 0.1 * s + 0.02 * j + 0.005 * d - (0.15 if kind == "kind" and j == 0 else 0.0), 6)


def planted_c(stratum_index: int, law: str) -> float:
    return (3.0 if law == "ce" else 1.5) + stratum_index


def fitted(kind: str, stratum: str, law: str, k: int | None) -> bool:
    if (kind, stratum) not in UNFITTED:
        return True
    which = UNFITTED[kind, stratum]
    return which is not None and which != (law, k)


def tables(
    family_sizes: dict[str, np.ndarray] | None = None, ks: tuple[int, ...] = (1, 10, 50, 100), form: str = "power_law"
) -> dict[str, pd.DataFrame]:
    """strata.csv and strata_fits.csv of families with the planted laws: each stratum's -log RBP_k (and CE)
    is C S^-alpha exactly, its interval 2% either side; fitted rows hold the planted alpha, C and +-0.01."""
    family_sizes = family_sizes or {"f": SIZES}
    points, fits = [], []
    for family, sizes in family_sizes.items():
        for dataset in ("d1", "d2"):
            for kind, labels in STRATA.items():
                for s, label in enumerate(labels):
                    for law, k in [("neg_log_rbp", k) for k in ks] + [("ce", None)]:
                        alpha = planted_alpha(dataset, kind, label, law, k) if (law, k) in LAWS else 0.3
                        c = planted_c(s, law)
                        y = c * sizes**-alpha
                        value = np.exp(-y) if law == "neg_log_rbp" else y
                        if (kind, label) == EMPTY_BIN:
                            value = np.full_like(y, np.nan)
                        elif (kind, label, law, k) == ("frequency", "11-100", "neg_log_rbp", 1):
                            value = np.where(sizes == sizes.max(), 0.0, value)  # RBP_1 = 0 at the largest size
                        for i, (size, v) in enumerate(zip(sizes, value, strict=True)):
                            points.append(
                                dict(family=family, model=f"{family}-m{i}", dataset=dataset, S=size, D=1000.0,
                                     size=f"{family}-m{i}", final=True, seed=0, replica_of=f"{family}-m{i}",
                                     vocab_size=512, n_tokens=1000, kind=kind, stratum=label, n_stratum=100,
                                     share=0.25, metric="rbp" if law == "neg_log_rbp" else "ce", k=k, value=v,
                                     share_ci_low=0.2, share_ci_high=0.3, ci_low=0.98 * v, ci_high=min(1.02 * v, 1.0))
                            )  # fmt: skip
                        row: dict[str, Any] = dict(
                            family=family, dataset=dataset, kind=kind, stratum=label, metric=law, k=k,
                            n_models=len(sizes), S_min=sizes.min(), S_max=sizes.max(), noise="documents", note="",
                        )  # fmt: skip
                        if len(set(sizes)) < 2:
                            row.update(alpha=math.nan, C=math.nan, note="family has one size: no law")
                        elif fitted(kind, label, law, k):
                            row.update(alpha=alpha, C=c, r2=1.0, alpha_ci_low=alpha - 0.01, alpha_ci_high=alpha + 0.01)
                            if form == "offset_power_law":
                                row.update(E=0.0)
                        else:
                            row.update(alpha=math.nan, C=math.nan, note="a power-law fit needs S > 0 and finite y > 0")
                        fits.append(row)
    frame = pd.DataFrame(points)
    frame["k"] = frame["k"].astype("Int64")
    fit_frame = pd.DataFrame(fits)
    fit_frame["k"] = fit_frame["k"].astype("Int64")
    if ks != (1, 10, 50, 100):  # the strata's k come from analysis.law_k
        fit_frame = fit_frame[fit_frame["k"].isna() | fit_frame["k"].isin(ks)]
    return {"strata": frame, "strata_fits": fit_frame, "strata_contrasts": pd.DataFrame()}


def figure_data(frames: dict[str, pd.DataFrame]) -> FigureData:
    return FigureData(frames, ["d1", "d2"], [], form=None, level=None, refits=None, seed=None, replicates=None)


def texts(fig: plt.Figure) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def marked(ax: Any, marker: str) -> list[Any]:
    """The lines of data points with `marker` on `ax` (legend proxies have no data)."""
    return [line for line in ax.get_lines() if line.get_marker() == marker and len(line.get_xdata())]


def assert_saved(png: Path) -> None:
    assert png.stat().st_size > 3000 and png.with_suffix(".pdf").stat().st_size > 1000


def test_both_figures_are_registered_with_the_tables_they_read() -> None:
    assert FIGURES["fig13_strata"].tables == ("strata_fits",)
    assert FIGURES["fig13b_frequency"].tables == ("strata", "strata_fits")
    for name in ("fig13_strata", "fig13b_frequency"):
        entry = FIGURES[name]
        assert not (entry.hists or entry.resampled or entry.settings) and entry.caption
        config = {"figures": {}, "analysis": {"law_form": "power_law", "bootstrap": {}}}
        assert figure_settings(config, name, ["d1"], ["m"])["models"] == []


def test_fig13_draws_each_laws_alpha_and_interval_by_stratum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = capture(monkeypatch, strata)
    frames = tables()
    png = tmp_path / "fig13.png"
    strata.fig_strata(figure_data(frames), FigureSettings(), png)
    assert_saved(png)
    fig = figures[0]
    axes = np.array(fig.axes).reshape(2, 3)  # rows: (f, d1), (f, d2); columns: the kinds in table order
    markers = {(law, k): marker for law, k, marker, _ in strata.LAWS}
    for r, dataset in enumerate(["d1", "d2"]):
        for c, (kind, labels) in enumerate(STRATA.items()):
            ax = axes[r, c]
            shown = [label for label in labels if (kind, label) != ("frequency", "1001+")]
            assert [t.get_text() for t in ax.get_xticklabels()] == shown
            for j, (law, k) in enumerate(LAWS):
                expected = [
                    (i + (j - 1.5) * strata.SPREAD, planted_alpha(dataset, kind, label, law, k))
                    for i, label in enumerate(shown)
                    if fitted(kind, label, law, k)
                ]
                (line,) = marked(ax, markers[law, k])
                np.testing.assert_allclose(line.get_xdata(), [x for x, _ in expected])
                np.testing.assert_allclose(line.get_ydata(), [y for _, y in expected])
                bars = [seg for coll in ax.collections for seg in coll.get_segments()]
                for x, y in expected:  # each point's bar spans its interval exactly
                    assert any(np.allclose(seg, [[x, y - 0.01], [x, y + 0.01]]) for seg in bars), (kind, law, k, x)
            zero = [line for line in ax.get_lines() if list(line.get_ydata()) == [0, 0]]
            assert zero, "the horizontal line at 0"
        note = [" ".join(t.get_text().split()) for t in axes[r, 0].texts if "no law" in t.get_text()]
        assert note and "1001+ (every law)" in note[0] and "11-100 (k = 1)" in note[0]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [f"exponent of {name}" for *_, name in strata.LAWS]
    assert "alpha" in axes[0, 0].get_ylabel() and "RBP" in axes[0, 0].get_ylabel()
    assert_legends_off_the_data(fig, png)


def test_fig13_draws_only_the_k_the_strata_have(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """analysis.law_k without 100: the laws of k = 1 and 10, and CE."""
    figures = capture(monkeypatch, strata)
    strata.fig_strata(figure_data(tables(ks=(1, 10))), FigureSettings(), tmp_path / "fig13.png")
    labels = [t.get_text() for t in figures[0].legends[0].get_texts()]
    assert labels == [f"exponent of {name}" for law, k, _, name in strata.LAWS if k != 100]
    assert not marked(figures[0].axes[0], "^")


def test_fig13b_draws_each_bins_points_and_law(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = capture(monkeypatch, strata)
    frames = tables()
    png = tmp_path / "fig13b.png"
    strata.fig_frequency(figure_data(frames), FigureSettings(), png)
    assert_saved(png)
    fig = figures[0]
    assert len(fig.axes) == 2
    for ax, dataset in zip(fig.axes, ["d1", "d2"], strict=True):
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert ax.get_xlabel() == "non-embedding parameters $S$" and "RBP" in ax.get_ylabel()
        laws = [line for line in ax.get_lines() if line.get_linestyle() == "-" and len(line.get_xdata()) > 2]
        alphas = [planted_alpha(dataset, "frequency", label, "neg_log_rbp", 1) for label in ("1-10", "101-1000")]
        assert len(laws) == 2  # 11-100 has RBP_1 = 0 at one size and 1001+ no tokens: no law
        for line, alpha in zip(laws, alphas, strict=True):
            x, y = np.log(line.get_xdata()), np.log(line.get_ydata())
            np.testing.assert_allclose(np.diff(y) / np.diff(x), -alpha, rtol=1e-9)
            np.testing.assert_allclose([line.get_xdata()[0], line.get_xdata()[-1]], [SIZES[0], SIZES[-1]])
        points = marked(ax, "o")
        expected = [
            planted_c(s, "neg_log_rbp") * SIZES ** -planted_alpha(dataset, "frequency", label, "neg_log_rbp", 1)
            for s, label in enumerate(STRATA["frequency"][:3])
        ]
        expected[1] = expected[1][:2]  # RBP_1 = 0 (unbounded -log) at the largest size: not on the axes
        assert len(points) == 3
        for line, y in zip(points, expected, strict=True):
            np.testing.assert_allclose(line.get_ydata(), y, rtol=1e-9)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend[0].startswith("1-10: $\\alpha$ = " + f"{alphas[0]:.3f} [{alphas[0] - 0.01:.3f}, ")
        assert "no law" in legend[1] and "RBP$_1$ = 0 at 1 of 3 sizes" in legend[1]
        assert "no scored token" in legend[3]
    assert_legends_off_the_data(fig, png)


def test_fig13b_reads_the_form_from_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """strata_fits.csv fitted as E + C S^-alpha: the line is that law (E = 0 here, so the same slope)."""
    frames = tables(form="offset_power_law")
    assert strata.strata_form(frames["strata_fits"]) is FORMS["offset_power_law"]
    assert strata.strata_form(tables()["strata_fits"]) is FORMS["power_law"]
    figures = capture(monkeypatch, strata)
    strata.fig_frequency(figure_data(frames), FigureSettings(), tmp_path / "fig13b.png")
    ax = figures[0].axes[0]
    line = next(line for line in ax.get_lines() if line.get_linestyle() == "-" and len(line.get_xdata()) > 2)
    slope = np.diff(np.log(line.get_ydata())) / np.diff(np.log(line.get_xdata()))
    np.testing.assert_allclose(slope, -planted_alpha("d1", "frequency", "1-10", "neg_log_rbp", 1))


@pytest.mark.parametrize("plot", [strata.fig_strata, strata.fig_frequency])
def test_no_strata_say_there_is_nothing_to_draw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plot: Any) -> None:
    """analysis.strata: [] writes empty tables, read back without columns."""
    figures = capture(monkeypatch, strata)
    empty = {"strata": pd.DataFrame(), "strata_fits": pd.DataFrame(), "strata_contrasts": pd.DataFrame()}
    png = tmp_path / "fig.png"
    plot(figure_data(empty), FigureSettings(), png)
    assert_saved(png)
    assert "nothing to draw: no strata" in texts(figures[0])


def test_one_size_families_have_no_law_to_draw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fig. 13 has no exponent to show; Fig. 13b shows the points alone, and says there is no law."""
    figures = capture(monkeypatch, strata)
    frames = tables({"solo": np.array([5e5])})
    strata.fig_strata(figure_data(frames), FigureSettings(), tmp_path / "fig13.png")
    assert "nothing to draw: every family has one size" in texts(figures[0])
    strata.fig_frequency(figure_data(frames), FigureSettings(), tmp_path / "fig13b.png")
    assert_saved(tmp_path / "fig13b.png")
    ax = figures[1].axes[0]
    assert "one size, no law" in ax.get_title()
    assert not [line for line in ax.get_lines() if line.get_linestyle() == "-" and len(line.get_xdata())]
    assert [list(line.get_xdata()) for line in marked(ax, "o")] == [[5e5], [5e5]]  # 1-10 and 101-1000
    assert all("one size, no law" in t.get_text() for t in ax.get_legend().get_texts())


def test_a_one_size_family_beside_a_ladder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fig. 13: the ladder's rows, the one-size family named in the legend; Fig. 13b: a row per family."""
    figures = capture(monkeypatch, strata)
    frames = tables({"f": SIZES, "solo": np.array([5e5])})
    strata.fig_strata(figure_data(frames), FigureSettings(), tmp_path / "fig13.png")
    assert len(figures[0].axes) == 6
    labels = [t.get_text() for t in figures[0].legends[0].get_texts()]
    assert any(label.startswith("solo on d1: not drawn") for label in labels)
    strata.fig_frequency(figure_data(frames), FigureSettings(), tmp_path / "fig13b.png")
    titles = [ax.get_title() for ax in figures[1].axes]
    assert titles == ["f on d1", "f on d2", "solo on d1: one size, no law", "solo on d2: one size, no law"]
    assert_legends_off_the_data(figures[1], tmp_path / "fig13b.png")
