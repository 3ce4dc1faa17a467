"""Figures mirroring the paper's (Figs. 3-8), from the tidy tables; each saved as PNG + PDF."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import ticker  # noqa: E402

from rankscale.atomic import atomic_path  # noqa: E402
from rankscale.lognormal import log_pmf  # noqa: E402

S_LABEL = "non-embedding parameters $S$"


def save(fig: plt.Figure, png: str | Path) -> None:
    """Write `png` and the PDF beside it, each atomically."""
    png = Path(png)
    for path in (png, png.with_suffix(".pdf")):
        with atomic_path(path, suffix=path.suffix) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], dpi=150, bbox_inches="tight")
    plt.close(fig)


def _grid(rows: int, cols: int, w: float = 4.2, h: float = 3.4) -> tuple[plt.Figure, np.ndarray]:
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False)
    return fig, axes


def _colors(families: Sequence[str]) -> dict[str, str]:
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {f: cycle[i % len(cycle)] for i, f in enumerate(sorted(families))}


def _law_panel(
    ax: plt.Axes, metrics: pd.DataFrame, fits: pd.DataFrame, dataset: str, metric: str, k: int | None, ylabel: str
) -> None:
    """Points of y(S) per family with the fitted C S^-alpha line; alpha and R^2 in the legend."""
    colors = _colors(metrics["family"].unique())
    sel = metrics[(metrics["dataset"] == dataset) & (metrics["metric"] == ("ce" if metric == "ce" else "rbp"))]
    if k is not None:
        sel = sel[sel["k"] == k]
    plotted = False
    for family, group in sel.groupby("family"):
        y = group["value"].to_numpy(float)
        y = y if metric == "ce" else -np.log(y)
        ok = y > 0
        ax.loglog(group["S"][ok], y[ok], "o", color=colors[family])
        fit = fits[(fits["family"] == family) & (fits["dataset"] == dataset) & (fits["metric"] == metric)]
        fit = fit[fit["k"].isna()] if k is None else fit[fit["k"] == k]
        label = str(family)
        if len(fit) and np.isfinite(fit["alpha"].iloc[0]):
            f = fit.iloc[0]
            s = np.geomspace(group["S"].min(), group["S"].max(), 50)
            ax.loglog(s, f["C"] * s ** (-f["alpha"]), "-", color=colors[family], alpha=0.8)
            label += f": $\\alpha$={f['alpha']:.3f}, $R^2$={f['r2']:.3f}"
        ax.plot([], [], "o-", color=colors[family], label=label)
        plotted = plotted or bool(ok.any())
    if not plotted:
        ax.text(0.5, 0.5, "no data in range", transform=ax.transAxes, ha="center")
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%.3g"))
    ax.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%.3g"))
    ax.set_xlabel(S_LABEL)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{dataset}" + (f", k = {k}" if k is not None else ""))
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)


def fig_rbp(
    metrics: pd.DataFrame, fits: pd.DataFrame, datasets: Sequence[str], ks: Sequence[int], png: str | Path
) -> None:
    """-log RBP_k vs S, one row per k, one column per dataset (paper Figs. 3-5)."""
    ks = [k for k in ks if (metrics["k"] == k).any()] or [None]
    fig, axes = _grid(len(ks), len(datasets))
    for i, k in enumerate(ks):
        for j, dataset in enumerate(datasets):
            if k is None:
                axes[i, j].text(
                    0.5, 0.5, "no k of this figure fits the vocabulary", transform=axes[i, j].transAxes, ha="center"
                )
                continue
            _law_panel(axes[i, j], metrics, fits, dataset, "neg_log_rbp", k, f"$-\\log \\mathrm{{RBP}}_{{{k}}}$")
    fig.tight_layout()
    save(fig, png)


def fig_r2_alpha(fits: pd.DataFrame, datasets: Sequence[str], png: str | Path) -> None:
    """R^2 and alpha of the -log RBP_k law as functions of k (paper Fig. 6)."""
    colors = _colors(fits["family"].unique())
    fig, axes = _grid(2, len(datasets))
    rbp = fits[fits["metric"] == "neg_log_rbp"]
    for j, dataset in enumerate(datasets):
        for family, group in rbp[rbp["dataset"] == dataset].groupby("family"):
            group = group[np.isfinite(group["alpha"])].sort_values("k")
            axes[0, j].semilogx(group["k"], group["r2"], ".-", color=colors[family], label=family)
            axes[1, j].semilogx(group["k"], group["alpha"], ".-", color=colors[family], label=family)
        axes[0, j].set_title(dataset)
        axes[0, j].set_ylabel("$R^2$ of the fit (log space)")
        axes[1, j].set_ylabel("exponent $\\alpha$")
        for ax in axes[:, j]:
            ax.set_xlabel("$k$")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, png)


def fig_emergence(
    emergence: pd.DataFrame, fits: pd.DataFrame, datasets: Sequence[str], k: int, png: str | Path
) -> None:
    """p_{N,k} vs S: RBP_k^N (filled), empirical N-runs in top-k (hollow), fitted law (line)."""
    available = sorted(emergence["k"].unique())
    k = min(available, key=lambda a: abs(np.log(a) - np.log(k))) if available else k
    families = sorted(emergence["family"].unique())
    fig, axes = _grid(len(families), len(datasets))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, family in enumerate(families):
        for j, dataset in enumerate(datasets):
            ax = axes[i, j]
            sel = emergence[(emergence["family"] == family) & (emergence["dataset"] == dataset) & (emergence["k"] == k)]
            fit = fits[
                (fits["family"] == family)
                & (fits["dataset"] == dataset)
                & (fits["metric"] == "neg_log_rbp")
                & (fits["k"] == k)
            ]
            for c, (n, group) in enumerate(sel.groupby("N")):
                color = cycle[c % len(cycle)]
                ax.semilogx(group["S"], group["predicted"], "o", color=color)
                ax.semilogx(group["S"], group["empirical"], "s", mfc="none", color=color)
                if len(fit) and np.isfinite(fit["alpha"].iloc[0]):
                    f = fit.iloc[0]
                    s = np.geomspace(group["S"].min() / 30, group["S"].max() * 300, 200)
                    ax.semilogx(s, np.exp(-n * f["C"] * s ** (-f["alpha"])), "-", color=color, alpha=0.7)
                ax.plot([], [], "o-", color=color, label=f"N = {n}")
            ax.plot([], [], "ko", label="$\\mathrm{RBP}_k^N$")
            ax.plot([], [], "ks", mfc="none", label="empirical runs")
            ax.set_xlabel(S_LABEL)
            ax.set_ylabel(f"$p_{{N,k}}$, k = {k}")
            ax.set_title(f"{family} on {dataset}")
            ax.set_ylim(-0.02, 1.02)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    save(fig, png)


def fig_ce_vs_rbp1(metrics: pd.DataFrame, fits: pd.DataFrame, datasets: Sequence[str], png: str | Path) -> None:
    """CE and -log RBP_1 against S side by side, with their exponents (paper Fig. 8, left)."""
    fig, axes = _grid(2, len(datasets))
    for j, dataset in enumerate(datasets):
        _law_panel(axes[0, j], metrics, fits, dataset, "ce", None, "cross-entropy (nats)")
        _law_panel(axes[1, j], metrics, fits, dataset, "neg_log_rbp", 1, "$-\\log \\mathrm{RBP}_1$")
    fig.tight_layout()
    save(fig, png)


def fig_rank_histogram(
    lognormal: pd.DataFrame, hists: Mapping[tuple[str, str], np.ndarray], datasets: Sequence[str], png: str | Path
) -> None:
    """Rank distribution and its discrete lognormal fit, smallest and largest model per family."""
    fig, axes = _grid(1, len(datasets), w=5.0)
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, dataset in enumerate(datasets):
        ax = axes[0, j]
        sel = lognormal[lognormal["dataset"] == dataset].sort_values("S")
        chosen = pd.concat([g.iloc[[0, -1]] if len(g) > 1 else g for _, g in sel.groupby("family")])
        for c, row in enumerate(chosen.itertuples()):
            counts = hists[(row.model, dataset)]
            r = np.nonzero(counts)[0]
            p = counts[r] / counts.sum()
            color = cycle[c % len(cycle)]
            ax.loglog(r, p, ".", ms=2, color=color, alpha=0.5)
            grid = np.unique(np.rint(np.geomspace(1, len(counts) - 1, 300)).astype(int))
            ax.loglog(
                grid,
                np.exp(log_pmf(grid, row.mu, row.sigma, len(counts) - 1)),
                "-",
                color=color,
                label=f"{row.model}: $\\mu$={row.mu:.2f}, $\\sigma$={row.sigma:.2f}",
            )
        ax.set_xlabel("rank $R$ of the correct token")
        ax.set_ylabel("$P(R)$")
        ax.set_title(f"{dataset}: ranks (dots) and discrete lognormal fit (lines)")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    save(fig, png)


def fig_mu_sigma(lognormal: pd.DataFrame, datasets: Sequence[str], png: str | Path) -> None:
    """mu/sigma (and mu, sigma) of the lognormal fit against S (paper Fig. 8, right)."""
    colors = _colors(lognormal["family"].unique())
    fig, axes = _grid(2, len(datasets))
    for j, dataset in enumerate(datasets):
        for family, group in lognormal[lognormal["dataset"] == dataset].groupby("family"):
            group = group.sort_values("S")
            axes[0, j].semilogx(group["S"], group["mu_over_sigma"], "o-", color=colors[family], label=family)
            axes[1, j].semilogx(group["S"], group["mu"], "o-", color=colors[family], label=f"{family} $\\mu$")
            axes[1, j].semilogx(
                group["S"], group["sigma"], "s--", color=colors[family], mfc="none", label=f"{family} $\\sigma$"
            )
        axes[0, j].set_ylabel("$\\mu/\\sigma$ of the rank lognormal")
        axes[1, j].set_ylabel("$\\mu$, $\\sigma$")
        axes[0, j].set_title(dataset)
        for ax in axes[:, j]:
            ax.set_xlabel(S_LABEL)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, png)
