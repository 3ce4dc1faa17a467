"""Training-run noise in a law: every seed's points and its own law, with the pooled law and band."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bootstrap import has_replicas, interval
from rankscale.laws import Points
from rankscale.plots.common import (
    S_LABEL,
    FigureData,
    FigureSettings,
    cycle_color,
    grid,
    legend_below,
    readable_log_ticks,
    save,
)
from rankscale.tables import LawKey, select
from rankscale.tables.lawkit import LawRefits
from rankscale.tables.selection import optional_int

SHOWN = (("neg_log_rbp", 1), ("ce", None))  # -log RBP_1 and CE


def _seed_law(seed_fits: pd.DataFrame, key: LawKey, seed: int | None, data: FigureData) -> Any:
    """The law fitted to one seed's models alone (seed_fits.csv), if it was fitted."""
    if seed_fits.empty:
        return None
    rows = select(seed_fits, family=key.family, dataset=key.dataset, metric=key.law, k=key.k, seed=seed)
    return data.fits_form.from_row(rows.iloc[0]) if len(rows) and not rows["note"].fillna("").iloc[0] else None


def _panel(ax: Any, data: FigureData, key: LawKey) -> bool:
    """One family's runs on one law: points and law per seed (thin), pooled law and band (thick); False if
    the family has one run per size."""
    group = key.points(data.tables["metrics"])
    if group.empty or not has_replicas(group["replica_of"]):
        return False
    form, metric = data.fits_form, key.metric
    grid_s = Points.of(np.geomspace(group["S"].min(), group["S"].max(), 60))
    for c, (seed, runs) in enumerate(group.groupby("seed", sort=True)):
        color = cycle_color(c)
        ax.plot(runs["S"], metric.to_law(runs["value"].to_numpy(float)), "o", color=color, ms=4, label=f"seed {seed}")
        law = _seed_law(data.tables["seed_fits"], key, optional_int(seed), data)
        if law is not None:
            ax.plot(grid_s.S, form.predict(law, grid_s), "-", color=color, lw=0.8, alpha=0.8)
    pooled = key.select(data.tables["powerlaw_fits"], form)
    if pooled is not None:
        ax.plot(
            grid_s.S, form.predict(pooled.law, grid_s), "k-", lw=1.8, label=f"pooled law ({pooled.record['noise']})"
        )
        if data.replicates is not None:
            assert data.level is not None and data.refits is not None, "bands need the level and refits"
            refitted = LawRefits.of(group, data.replicates, form, pooled.law, data.refits, data.seed)
            low, high = interval(refitted.band(grid_s), data.level)
            ax.fill_between(grid_s.S, low, high, color="0.5", alpha=0.25, lw=0, label="pooled band: seeds + documents")
    return True


def fig_seeds(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """-log RBP_1 and CE against S for every family with several seeds per size: each seed and the pool."""
    metrics = data.tables["metrics"]
    final = metrics[metrics["final"].astype(bool)].drop_duplicates("model")
    seeded = sorted(f for f, group in final.groupby("family") if has_replicas(group["replica_of"]))
    if not seeded:  # one run per size everywhere: say so once, without empty axes
        fig, axes = grid(1, 1, w=6.0, h=1.6)
        axes[0, 0].axis("off")
        axes[0, 0].text(0.5, 0.5, "No size was trained with more than one seed: nothing to compare across runs.\n"
                        "Give several in ladder.train.seeds (config/seeds.yaml), or seed and replica_of on models.",
                        ha="center", va="center", fontsize=9, transform=axes[0, 0].transAxes)  # fmt: skip
        save(fig, png)
        return
    fig, axes = grid(len(SHOWN) * len(seeded), len(data.datasets), w=4.8, h=4.2)
    for f, family in enumerate(seeded):
        for i, (law, k) in enumerate(SHOWN):
            for j, dataset in enumerate(data.datasets):
                ax = axes[f * len(SHOWN) + i, j]
                ax.set_xscale("log")
                ax.set_yscale("log")
                key = LawKey(family, dataset, law, k)
                if not _panel(ax, data, key):  # the family has several seeds elsewhere, not on this dataset
                    ax.axis("off")
                    ax.text(0.5, 0.5, f"{family} on {dataset}: one run per size", transform=ax.transAxes,
                            ha="center", va="center", fontsize=8)  # fmt: skip
                    continue
                ax.set_xlabel(S_LABEL)
                ax.set_ylabel(key.metric.axis_label(k))
                ax.set_title(f"{family} on {dataset}")
                ax.grid(True, which="both", alpha=0.3)
                legend_below(ax, fontsize=7, ncol=2)
                readable_log_ticks(ax)
    save(fig, png)
