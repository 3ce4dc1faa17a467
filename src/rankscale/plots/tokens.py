"""Fig. 15: which tokens a larger model gets right (the token trajectories' tables, docs/science.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.plots.common import (
    S_LABEL,
    FigureData,
    FigureSettings,
    clipped_errorbar,
    cycle_color,
    grid,
    legend_below,
    panel_note,
    save,
)
from rankscale.trajectories import RANK_BINS

CHURN_K = (1, 10)


def _rows(frame: pd.DataFrame, family: str, dataset: str, **match: Any) -> pd.DataFrame:
    if frame.empty or "family" not in frame:
        return frame
    keep = (frame["family"] == family) & (frame["dataset"] == dataset)
    for column, value in match.items():
        keep &= frame[column] == value
    return frame[keep]


def _churn(ax: Any, churn: pd.DataFrame, family: str, dataset: str) -> None:
    """Gained and lost between consecutive sizes against the larger size, at k = 1 and 10, with the seed floor."""
    rows = _rows(churn, family, dataset, axis="size", kind="all")
    if rows.empty:
        panel_note(ax, "fewer than two sizes: no churn", blank=True)
        return
    ax.set_xscale("log")
    for c, k in enumerate(CHURN_K):
        at = rows[rows["k"] == k].sort_values("S_to")
        if at.empty:
            continue
        for what, marker, style in (("gained", "o", "-"), ("lost", "v", "--")):
            ax.plot(at["S_to"], at[what], style, color=cycle_color(c), lw=0.8)
            clipped_errorbar(ax, at["S_to"], at[what], at[f"{what}_ci_low"], at[f"{what}_ci_high"], marker=marker,
                             color=cycle_color(c), label=f"{what}, k = {k}")  # fmt: skip
        floor = at["seed_floor"].to_numpy(float) / 2
        if np.isfinite(floor).any():
            ax.plot(at["S_to"], floor, ":x", color=cycle_color(c), lw=1.5, ms=7, label=f"seed floor / 2, k = {k}")
    ax.set_xlabel(f"larger size's {S_LABEL}")
    ax.set_ylabel("share of scored tokens")
    ax.set_title(f"{family} / {dataset}: churn between sizes", fontsize=9)
    legend_below(ax, fontsize=7, ncol=2)


def _learning(ax: Any, learning: pd.DataFrame, family: str, dataset: str) -> None:
    """Learned and kept by each size beside RBP_1."""
    rows = _rows(learning, family, dataset, kind="all", k=1)
    if rows.empty or "quantity" not in rows:
        panel_note(ax, "fewer than two sizes: no learning", blank=True)
        return
    ax.set_xscale("log")
    for c, (quantity, label) in enumerate(
        (("rbp", "$\\mathrm{RBP}_1$"), ("kept_by", "ranked first here and at every larger size"))
    ):
        at = rows[rows["quantity"] == quantity].sort_values("S")
        ax.plot(at["S"], at["value"], "-", color=cycle_color(c + 2), lw=0.8)
        clipped_errorbar(ax, at["S"], at["value"], at["ci_low"], at["ci_high"], color=cycle_color(c + 2), label=label)
    ax.set_xlabel(S_LABEL)
    ax.set_ylabel("share of scored tokens")
    ax.set_title("learned and kept, k = 1", fontsize=9)
    legend_below(ax, fontsize=7)


def _slopes(ax: Any, slopes: pd.DataFrame, family: str, dataset: str) -> None:
    """The per-token slopes' quantiles against the range noise alone would give around their mean."""
    rows = _rows(slopes, family, dataset)
    if rows.empty or not np.isfinite(rows["mean"].to_numpy(float)).any():
        panel_note(ax, "fewer than two sizes: no slopes", blank=True)
        return
    row = rows.iloc[0]
    ax.plot(
        [row["q05"], row["q95"]], [1, 1], "-", color="0.2", lw=1.2, label="tokens' slopes: 5-95% (thin), 25-75% (thick)"
    )
    ax.plot([row["q25"], row["q75"]], [1, 1], "-", color="0.2", lw=6, solid_capstyle="butt")
    ax.plot([row["q50"]], [1], "o", color="white", mec="0.2", ms=6)
    noise = row["sd_noise"]
    if np.isfinite(noise):
        half = 1.645 * noise
        ax.plot([row["mean"] - half, row["mean"] + half], [0, 0], "-", color=cycle_color(3), lw=1.2,
                label=f"noise alone: mean ± 1.645 sd ({row['noise_source']})")  # fmt: skip
        ax.plot([row["mean"] - noise * 0.674, row["mean"] + noise * 0.674], [0, 0], "-", color=cycle_color(3), lw=6,
                solid_capstyle="butt")  # fmt: skip
    ax.axvline(0, color="0.6", lw=0.6)
    ax.set_yticks([0, 1], ["noise", "tokens"])
    ax.set_ylim(-0.8, 1.8)
    ax.set_xlabel("slope of $\\log R$ against $\\log S$ per token")
    ax.set_title(f"slopes: sd {row['sd']:.3f} against noise {noise:.3f}", fontsize=9)
    legend_below(ax, fontsize=7)


def _transitions(ax: Any, transitions: pd.DataFrame, family: str, dataset: str) -> None:
    """The two largest sizes' transition matrix on log bins of rank (shares of each row's tokens)."""
    rows = _rows(transitions, family, dataset)
    rows = rows[rows["bin_from"].notna()] if not rows.empty else rows
    if rows.empty:
        panel_note(ax, "fewer than two sizes: no transitions", blank=True)
        return
    last = rows[rows["S_to"] == rows["S_to"].max()]
    n = len(RANK_BINS)
    matrix = np.full((n, n), np.nan)
    for _, r in last.iterrows():
        matrix[RANK_BINS.index(r["bin_from"]), RANK_BINS.index(r["bin_to"])] = r["conditional"]
    ax.imshow(matrix, cmap="Blues", vmin=0, vmax=1)
    for a in range(n):
        for b in range(n):
            if np.isfinite(matrix[a, b]):
                ax.text(b, a, f"{matrix[a, b]:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if matrix[a, b] > 0.6 else "black")  # fmt: skip
    ax.set_xticks(range(n), RANK_BINS, fontsize=7, rotation=30)
    ax.set_yticks(range(n), RANK_BINS, fontsize=7)
    ax.set_xlabel(f"rank at {last['to'].iloc[0]}")
    ax.set_ylabel(f"rank at {last['from'].iloc[0]}")
    ax.set_title("rank transitions (share of each row)", fontsize=9)


def fig_token_trajectories(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """One row per family x dataset: churn, learned-and-kept, slopes against noise, transition matrix."""
    slopes = data.tables["token_slopes"]
    pairs = [] if slopes.empty else sorted({(f, d) for f, d in zip(slopes["family"], slopes["dataset"], strict=True)})
    fig, axes = grid(max(len(pairs), 1), 4, w=4.4, h=3.6)
    if not pairs:
        for ax in axes[0]:
            panel_note(ax, "no family was scored", blank=True)
    for i, (family, dataset) in enumerate(pairs):
        _churn(axes[i, 0], data.tables["token_churn"], family, dataset)
        _learning(axes[i, 1], data.tables["token_learning"], family, dataset)
        _slopes(axes[i, 2], slopes, family, dataset)
        _transitions(axes[i, 3], data.tables["rank_transitions"], family, dataset)
    save(fig, png)
