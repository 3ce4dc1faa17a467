"""Scaling in training tokens D, and size and tokens together under a compute budget (Figs. 10-11)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.laws import JointLaw
from rankscale.metrics import metric_for_law
from rankscale.plots.common import (
    FigureData,
    FigureSettings,
    clipped_errorbar,
    cycle_color,
    grid,
    legend_below,
    readable_log_ticks,
    save,
)
from rankscale.tables import select

D_LABEL = "training tokens $D$"
SHOWN = (("neg_log_rbp", 1), ("ce", None))  # -log RBP_1 and CE


def _rows(metrics: pd.DataFrame, dataset: str, law: str, k: int | None) -> pd.DataFrame:
    """Every model's row of `law` (at k) on `dataset` that says its training tokens D."""
    sel = select(metrics, dataset=dataset, metric=metric_for_law(law).name, k=k)
    return sel[sel["D"].notna()]


def _empty(ax: Any) -> None:
    ax.text(0.5, 0.5, "no checkpoints: one training-token count D per size\n(ladder.train.checkpoints, or D: on models)",
            transform=ax.transAxes, ha="center", va="center", fontsize=8)  # fmt: skip


def _fit(table: pd.DataFrame, dataset: str, law: str, k: int | None, **match: Any) -> pd.Series | None:
    """The first fitted row of `table` (data_fits.csv, joint_fits.csv) of `law` (at k) on `dataset` (and `match`)."""
    if table.empty:
        return None
    sel = select(table, dataset=dataset, metric=law, k=k, **match)
    return sel.iloc[0] if len(sel) and not sel["note"].fillna("").iloc[0] else None


def not_identified(row: pd.Series) -> set[str]:
    """Parameters joint_fits.csv marks as at a bound of their domain: not identified by the data."""
    text = row.get("not_identified")
    return {part.split(" ")[0] for part in str(text).split("; ") if part} if isinstance(text, str) else set()


def _frontier_label(row: pd.Series) -> str:
    """The joint law's parameters for the legend; one the data cannot identify is said so, not given a value."""
    unknown = not_identified(row)
    shown = [("E", "$E$", ".3g"), ("alpha", "$\\alpha$", ".2f"), ("beta", "$\\beta$", ".2f")]
    parts = [f"{tex} not identified" if name in unknown else f"{tex}={row[name]:{fmt}}" for name, tex, fmt in shown]
    return "frontier: " + ", ".join(parts)


def _draw(data: FigureData, png: Path, panel: Callable[[Any, str, str, int | None, pd.DataFrame], None]) -> None:
    """One panel per law of SHOWN (rows) and dataset (columns): `panel(ax, dataset, law, k, rows)` draws
    the checkpoints' rows; panels without checkpoints say so; every drawn panel gets log axes and labels."""
    fig, axes = grid(len(SHOWN), len(data.datasets), w=4.6, h=4.2)  # each with its legend under it
    for j, dataset in enumerate(data.datasets):
        for i, (law, k) in enumerate(SHOWN):
            ax, rows = axes[i, j], _rows(data.tables["metrics"], dataset, law, k)
            if rows.empty or rows["D"].nunique() < 2:
                _empty(ax)
                continue
            ax.set_xscale("log")  # before drawing: intervals are clipped to what log axes can show
            ax.set_yscale("log")
            panel(ax, dataset, law, k, rows)
            ax.set_ylabel(metric_for_law(law).axis_label(k))
            ax.set_title(dataset)
            ax.grid(True, which="both", alpha=0.3)
            legend_below(ax, fontsize=6, ncol=2)
            readable_log_ticks(ax)
            readable_log_ticks(ax, "x")
    save(fig, png)


def fig_tokens(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """-log RBP_1 and CE against D, one line per size, with each size's law in D (data_fits.csv)."""

    def panel(ax: Any, dataset: str, law: str, k: int | None, rows: pd.DataFrame) -> None:
        metric = metric_for_law(law)
        for c, (size, s) in enumerate(rows.groupby("size")["S"].max().sort_values().items()):
            group = rows[rows["size"] == size].sort_values("D")
            y = metric.to_law(group["value"].to_numpy(float))
            with np.errstate(divide="ignore", invalid="ignore"):  # -log of a bound of 0: unbounded, clipped
                bounds = metric.to_law(group[["ci_low", "ci_high"]].to_numpy(float))
            label = f"S = {s:.3g}"
            f = _fit(data.tables["data_fits"], dataset, law, k, size=size)
            if f is not None:
                d = np.geomspace(group["D"].min(), group["D"].max(), 40)
                ax.plot(d, f["C"] * d ** (-f["beta"]), "-", color=cycle_color(c), alpha=0.7)
                label += f": $\\beta$={f['beta']:.3f} [{f['beta_ci_low']:.3f}, {f['beta_ci_high']:.3f}]"
            clipped_errorbar(ax, group["D"], y, bounds[:, 0], bounds[:, 1], color=cycle_color(c), ms=4, label=label)
        ax.set_xlabel(D_LABEL)

    _draw(data, png, panel)


def fig_compute_frontier(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """y against compute C = 6 S D for every size's checkpoints, and the compute frontier of the joint law."""

    def panel(ax: Any, dataset: str, law: str, k: int | None, rows: pd.DataFrame) -> None:
        metric = metric_for_law(law)
        rows = rows.assign(C=6.0 * rows["S"].astype(float) * rows["D"].astype(float))
        for c, (size, s) in enumerate(rows.groupby("size")["S"].max().sort_values().items()):
            group = rows[rows["size"] == size].sort_values("C")
            ax.plot(group["C"], metric.to_law(group["value"].to_numpy(float)), "o-", color=cycle_color(c), ms=4,
                    lw=0.8, label=f"S = {s:.3g}")  # fmt: skip
        f = _fit(data.tables["joint_fits"], dataset, law, k)
        if f is not None:
            budgets = np.geomspace(rows["C"].min(), rows["C"].max(), 60)
            optimal_s, best = JointLaw.from_row(f).compute_optimal(budgets)
            optimal_d = budgets / (6.0 * optimal_s)
            s_range, d_range = rows["S"].astype(float), rows["D"].astype(float)
            measured = (  # the frontier's (S, D) inside the grid it was fitted on; elsewhere it extrapolates
                (optimal_s >= s_range.min()) & (optimal_s <= s_range.max())
                & (optimal_d >= d_range.min()) & (optimal_d <= d_range.max())
            )  # fmt: skip
            ax.plot(budgets, np.where(measured, best, np.nan), "k--", lw=1.2, label=_frontier_label(f))
            ax.plot(budgets, np.where(measured, np.nan, best), "k:", lw=1.0,
                    label="frontier outside the measured S and D (extrapolated)")  # fmt: skip
        ax.set_xlabel("training compute $C = 6\\,S\\,D$ (FLOPs)")

    _draw(data, png, panel)
