"""Figures a reader can read: intervals stay inside their panel and say when they do not end there, degenerate
intervals do not pass for precise points, and legends sit outside the axes, off the data, inside the saved file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Annotation

from rankscale.config import load_yaml, validate
from rankscale.laws import FORMS
from rankscale.plan.settings import figure_settings
from rankscale.plots import FIGURES, emergence, extrapolation, laws
from rankscale.plots.common import CLIPPED_LABEL, DEGENERATE_LABEL, FigureData, FigureSettings, clipped_errorbar, save
from tests.conftest import REPO

# figures that draw fitted laws without bands: the form of powerlaw_fits.csv, no replicates
LAWS = {"form": FORMS["power_law"], "level": None, "refits": None, "seed": None, "replicates": None}


def drawn_y(ax: Any) -> np.ndarray:
    """The y data (data coordinates) of every line and line collection on `ax` (legend proxies have none)."""
    ys = [np.asarray(line.get_ydata(), float) for line in ax.lines]
    for collection in ax.collections:
        ys += [np.asarray(segment)[:, 1] for segment in getattr(collection, "get_segments", list)()]
    return np.concatenate([y.ravel() for y in ys]) if ys else np.array([])


def edge_arrows(ax: Any) -> list[Annotation]:
    """The arrowheads `clipped_errorbar` puts on a panel's edge (y in axes coordinates, 0 or 1)."""
    return [
        a
        for a in ax.texts
        if isinstance(a, Annotation)
        and a.xycoords == ("data", "axes fraction")
        and a.arrowprops is not None
        and a.arrowprops["arrowstyle"] == "-|>"
    ]


def capture(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[plt.Figure]:
    """The figures `module` saves (really saved, so laid out as in the file)."""
    figures: list[plt.Figure] = []

    def keep(fig: plt.Figure, png: str | Path) -> None:
        figures.append(fig)
        save(fig, png)

    monkeypatch.setattr(module, "save", keep)
    return figures


def test_an_unbounded_or_out_of_range_bound_is_clipped_at_the_edge_and_marked() -> None:
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    ylim = (1.0, 100.0)
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([10.0, 10.0, 10.0, 10.0])
    low = np.array([5.0, 5.0, 0.0, 5.0])  # third: a bound of 0 has no place on a log axis
    high = np.array([20.0, np.inf, 20.0, 690.0])  # second: -log of a rate of 0; fourth: far beyond the panel
    assert clipped_errorbar(ax, x, y, low, high, ylim=ylim) == (3, 0)
    ax.set_ylim(ylim)
    ys = drawn_y(ax)
    assert np.isfinite(ys).all() and (ys >= ylim[0]).all() and (ys <= ylim[1]).all()
    heads = sorted((a.xy[0], a.xy[1]) for a in edge_arrows(ax))
    assert heads == [(2.0, 1.0), (3.0, 0.0), (4.0, 1.0)]  # top, bottom, top edge; none for the bounded point
    assert np.array_equal(ax.collections[0].get_segments()[0], [[1.0, 5.0], [1.0, 20.0]])  # bounded: in full
    fig.canvas.draw()
    inside = ax.bbox.padded(1.0)
    for artist in ax.texts:  # the dotted stretches and the arrowheads end on the panel's edge
        box = artist.arrow_patch.get_window_extent()
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1
    assert CLIPPED_LABEL in ax.get_legend_handles_labels()[1]
    plt.close(fig)


def test_bounds_in_either_order_and_a_missing_bound_on_the_far_side() -> None:
    """-log swaps the bounds; a NaN bound is unknown, so its side runs to the edge (here the bottom)."""
    fig, ax = plt.subplots()
    assert clipped_errorbar(ax, [1.0, 2.0], [3.0, 3.0], [4.0, 4.0], [2.0, np.nan]) == (1, 0)
    assert np.array_equal(ax.collections[0].get_segments()[0], [[1.0, 2.0], [1.0, 4.0]])
    assert [(a.xy[0], a.xy[1]) for a in edge_arrows(ax)] == [(2.0, 0.0)]
    plt.close(fig)


def test_a_degenerate_interval_is_marked_not_drawn_as_a_precise_point() -> None:
    fig, ax = plt.subplots()
    x, y = [1.0, 2.0, 3.0], [0.5, 0.5, 0.5]
    low, high = [0.4, 0.5, np.nan], [0.6, 0.5, np.nan]  # second: zero width; third: no bounds at all
    assert clipped_errorbar(ax, x, y, low, high, marker="s", color="C1", label="series") == (0, 2)
    bars = np.concatenate([c.get_segments() for c in ax.collections])
    assert [segment[0][0] for segment in bars] == [1.0]  # only the real interval has a bar
    hollow = [line for line in ax.lines if line.get_marker() == "s" and line.get_markerfacecolor() == "none"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [2.0, 3.0]
    filled = [line for line in ax.lines if line.get_label() == "series"]
    assert list(filled[0].get_xdata()) == [1.0]
    rings = [line for line in ax.lines if line.get_marker() == "o" and len(line.get_xdata())]
    assert len(rings) == 1 and list(rings[0].get_xdata()) == [2.0, 3.0]
    assert DEGENERATE_LABEL in ax.get_legend_handles_labels()[1]
    plt.close(fig)


def emergence_rows(zero_low: bool) -> pd.DataFrame:
    """Two sizes, runs of N = 1 and 2 inside the top-1; the measured rate's interval of the larger N reaches 0."""
    rows = []
    for model, size, rate in (("a", 1000.0, 0.3), ("b", 8000.0, 0.4)):
        for n in (1, 2):
            p = rate**n
            row = dict(family="f", model=model, dataset="d", S=size, final=True, k=1, N=n)
            for kind in ("empirical", "predicted", "markov"):
                row.update({kind: p, f"{kind}_ci_low": 0.8 * p, f"{kind}_ci_high": min(1.2 * p, 0.99)})
            if zero_low and n == 2:
                row["empirical_ci_low"] = 0.0
            rows.append(row)
    return pd.DataFrame(rows)


def test_emergence_interval_reaching_a_rate_of_zero_stays_inside_its_panel(tmp_path, monkeypatch) -> None:
    """Fig. 7: -log 0 is unbounded; the bar used to be drawn to -log 1e-300 = 690, the whole height of the panel."""
    figures = capture(monkeypatch, emergence)
    fits = pd.DataFrame(columns=["family", "dataset", "metric", "k", "alpha", "C"])
    data = FigureData({"emergence": emergence_rows(zero_low=True), "powerlaw_fits": fits}, ["d"], ["a", "b"], **LAWS)
    emergence.fig_emergence(data, FigureSettings(), tmp_path / "fig7.png")
    ax = figures[0].axes[0]
    low, high = ax.get_ylim()
    ys = drawn_y(ax)
    assert ys.size and (ys >= low * (1 - 1e-9)).all() and (ys <= high * (1 + 1e-9)).all()
    assert [a.xy[1] for a in edge_arrows(ax)] == [1.0, 1.0]  # both sizes' N = 2 intervals: open at the top
    assert CLIPPED_LABEL in figures[0].legends[0].get_texts()[-1].get_text()


def legends(fig: plt.Figure) -> list[Any]:
    return list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]


def assert_legends_off_the_data(fig: plt.Figure, png: Path) -> None:
    """Every legend is outside every axes (so it covers no point, line or band), and inside the saved file."""
    FigureCanvasAgg(fig)  # `save` closed the figure, which took its pyplot canvas
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = legends(fig)
    assert found
    for legend in found:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            assert not box.overlaps(ax.bbox), (legend, ax.get_title())
            for line in ax.lines:
                xy = np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float)
                xy = xy[np.isfinite(xy).all(axis=1)]
                if len(xy):
                    points = ax.transData.transform(xy)
                    assert not any(box.contains(px, py) for px, py in points)
    tight = fig.get_tightbbox(renderer)  # what savefig(bbox_inches="tight") keeps, in inches
    for legend in found:
        box = legend.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())
        assert tight.x0 <= box.x0 + 1e-6 and box.x1 <= tight.x1 + 1e-6
        assert tight.y0 <= box.y0 + 1e-6 and box.y1 <= tight.y1 + 1e-6
    # 150 dpi and 0.1 inch of padding; text measured at 150 dpi comes out a few pixels apart
    height, width = matplotlib.image.imread(png).shape[:2]
    assert abs(height - (tight.height + 0.2) * 150) <= 8 and abs(width - (tight.width + 0.2) * 150) <= 8


def test_emergence_legend_is_shared_and_below_the_panels(tmp_path, monkeypatch) -> None:
    """Fig. 7's legend covered the points of the top-left panel; now one legend for all, under them."""
    figures = capture(monkeypatch, emergence)
    fits = pd.DataFrame(columns=["family", "dataset", "metric", "k", "alpha", "C"])
    table = pd.concat([emergence_rows(False), emergence_rows(False).assign(k=10)], ignore_index=True)
    png = tmp_path / "fig7.png"
    emergence.fig_emergence(FigureData({"emergence": table, "powerlaw_fits": fits}, ["d"], ["a", "b"], **LAWS), FigureSettings(), png)
    fig = figures[0]
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    assert_legends_off_the_data(fig, png)


def test_law_panel_legends_sit_under_their_panels(tmp_path, monkeypatch) -> None:
    """Fig. 3: each panel's legend (its alphas) under the panel, below the x label; the file holds it."""
    figures = capture(monkeypatch, laws)
    sizes = np.array([1e4, 1e5, 1e6, 1e7])
    rbp = np.exp(-3.0 * sizes**-0.05)
    metrics = pd.concat(
        [
            pd.DataFrame(
                dict(
                    family="f",
                    model=[f"m{i}" for i in range(4)],
                    dataset=d,
                    S=sizes,
                    final=True,
                    metric="rbp",
                    k=1,
                    value=rbp,
                    ci_low=rbp * 0.99,
                    ci_high=rbp * 1.01,
                )
            )
            for d in ("d1", "d2")
        ],
        ignore_index=True,
    )
    fits = pd.DataFrame(columns=["family", "dataset", "metric", "k", "alpha", "C"])
    png = tmp_path / "fig3.png"
    laws.fig_rbp1(FigureData({"metrics": metrics, "powerlaw_fits": fits}, ["d1", "d2"], [], **LAWS), FigureSettings(), png)
    fig = figures[0]
    assert all(ax.get_legend() is not None for ax in fig.axes)
    assert_legends_off_the_data(fig, png)


def test_extrapolation_draws_each_relative_error_with_the_interval_that_judges_it(tmp_path, monkeypatch) -> None:
    """Fig. 9 plots observed / predicted - 1 per held-out prediction against a zero line, its interval as observed /
    bound - 1 (so it holds 0 exactly where the table says `covered`); a bound at 0 runs off the top edge, marked,
    and a zero-width interval is drawn hollow and ringed. (It plotted predicted against observed on log axes,
    where every point sat on the diagonal and the errors the table judges could not be seen.)"""
    figures = capture(monkeypatch, extrapolation)
    table = pd.DataFrame(
        dict(
            family="f",
            dataset="d",
            metric="rbp",
            k=1,
            held_out_model=["m3", "m2", "m3"],
            S=[1e6, 1e5, 1e6],
            n_fit=[3, 2, 2],
            predicted=[0.2, 0.3, 0.25],
            predicted_ci_low=[0.0, 0.3, 0.2],
            predicted_ci_high=[0.3, 0.3, 0.3],
            observed=[0.21, 0.29, 0.22],
            covered=[True, False, True],
            noise="documents",
        )
    )
    png = tmp_path / "fig9.png"
    extrapolation.fig_extrapolation(
        FigureData({"extrapolation": table}, ["d"], [], form=None, level=None, refits=None, seed=None, replicates=None),
        FigureSettings(),
        png,
    )
    ax = figures[0].axes[0]
    assert ax.get_yscale() == "linear" and ax.get_xscale() == "linear"
    errors = {round(float(y), 9) for line in ax.lines for y in np.atleast_1d(line.get_ydata())}
    assert {0.05, round(0.29 / 0.3 - 1, 9), -0.12, 0.0} <= errors  # the three errors and the zero line
    # the covered point's bar: from 0.22 / 0.3 - 1 (upper bound) to 0.22 / 0.2 - 1 (lower), holding 0
    bars = np.concatenate([np.asarray(c.get_segments())[:, :, 1] for c in ax.collections if c.get_segments()])
    assert any(np.allclose(sorted(b), [0.22 / 0.3 - 1, 0.22 / 0.2 - 1]) for b in bars)
    arrows = edge_arrows(ax)
    assert [a.xy[1] for a in arrows] == [1.0]  # a lower bound of 0 is an unbounded error: off the top edge
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "interval excludes 0 (not covered)" in labels and labels[-2:] == [CLIPPED_LABEL, DEGENERATE_LABEL]
    assert "documents" in ax.get_title()
    assert_legends_off_the_data(figures[0], png)


def test_every_figures_params_read_back_typed() -> None:
    """Each figure job's params (`figure_settings`, from the validated default configuration) type as
    FigureSettings with the values configured; a setting the figure does not declare is refused when read, and a
    param FigureSettings has no field for is refused when typed."""
    config = validate(load_yaml(REPO / "config/config.yaml"))
    for name, entry in FIGURES.items():
        typed = FigureSettings.from_params(figure_settings(config, name, ["d1", "d2"], ["m"]))
        assert typed.datasets == ["d1", "d2"] and typed.models == (["m"] if entry.hists or entry.resampled else [])
        assert typed.form is (FORMS[config["analysis"]["law_form"]] if entry.reads_fits else None)
        assert typed.level == (config["analysis"]["bootstrap"]["level"] if entry.resampled else None)
        for key in ("rbp_k", "large_k", "emergence_extrapolate", "snr_threshold"):
            if key in entry.settings:
                assert typed.get(key) == config["figures"][key]
            else:
                with pytest.raises(KeyError, match=f"reads figures setting '{key}' but does not declare it"):
                    typed.get(key)
    with pytest.raises(KeyError, match=r"\['rbp_kk'\] are not fields of FigureSettings"):
        FigureSettings.from_params({"rbp_kk": [10]})
