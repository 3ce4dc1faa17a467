"""The rank distribution and the lognormal conjecture (paper Fig. 8 b-c; the CE decomposition; the histogram)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rankscale.lognormal import log_pmf
from rankscale.plots.common import (
    S_LABEL,
    FigureData,
    FigureSettings,
    clipped_errorbar,
    colors,
    cycle_color,
    grid,
    legend_below,
    nothing_to_draw,
    readable_log_ticks,
    save,
    say_left_out,
)
from rankscale.plots.law_lines import draw_law, exponent_label
from rankscale.rankdist import FAMILIES
from rankscale.tables import LawKey, finals, select

NOT_IDENTIFIED_NOTE = "no identified lognormal (a parameter at a bound, or none fitted), left out: "


def unidentified(table: pd.DataFrame) -> list[str]:
    """The models of a per-model table (conjecture.csv, lognormal_fits.csv) whose lognormal has no mu or sigma."""
    missing = ~(np.isfinite(table["mu"].to_numpy(float)) & np.isfinite(table["sigma"].to_numpy(float)))
    return list(dict.fromkeys(table.loc[missing, "model"]))


def fig_derived_laws(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """Measured CE and -log RBP_1 against S with their laws, beside the laws the fitted lognormal implies."""
    metrics = data.tables["metrics"]
    contrasts = data.tables["exponent_contrasts"]
    families = sorted(metrics["family"].unique())
    fig, axes = grid(1, len(data.datasets), w=5.6, h=4.6)
    series = (
        ("ce", None, "o", "CE measured"),
        ("ee_lognormal", None, "D", "CE implied (lognormal entropy)"),
        ("neg_log_rbp", 1, "s", "$-\\log\\,\\mathrm{RBP}_1$ measured"),
        ("neg_log_p1_lognormal", None, "v", "$-\\log\\,\\mathrm{RBP}_1$ implied ($-\\log P(R{=}1)$)"),
    )
    for j, dataset in enumerate(data.datasets):
        ax = axes[0, j]
        ax.set_xscale("log")
        ax.set_yscale("log")
        notes = []
        left_out: list[str] = []
        for i, family in enumerate(families):
            for c, (law, k, marker, name) in enumerate(series):
                draw_law(ax, data, family, dataset, law, k, cycle_color(4 * i + c), marker, name)
            implied = LawKey(family, dataset, "ee_lognormal").points(metrics)  # NaN: the lognormal ran to a bound
            left_out += list(implied.loc[~np.isfinite(implied["value"].to_numpy(float)), "model"])
            if contrasts.empty:  # e.g. a single size: nothing fitted, nothing compared
                continue
            for law, versus, versus_k in (("ee_lognormal", "ce", None), ("neg_log_p1_lognormal", "neg_log_rbp", 1)):
                row = select(contrasts, family=family, dataset=dataset, metric=law, versus=versus, versus_k=versus_k)
                if len(row):
                    r = row.iloc[0]
                    notes.append(
                        f"{family}: $\\Delta\\alpha$ {'CE' if versus == 'ce' else 'RBP$_1$'} implied - measured = "
                        f"{r['difference']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
                    )
        ax.set_xlabel(S_LABEL)
        ax.set_ylabel("nats")
        ax.set_title(f"{dataset}: measured laws and those the lognormal implies")
        say_left_out(ax, "implied laws: " + NOT_IDENTIFIED_NOTE, left_out)
        # the exponent differences head the legend, under the panel: neither covers a point
        legend_below(ax, fontsize=6, title="\n".join(notes) or None, title_fontsize=6, alignment="left")
        ax.grid(True, which="both", alpha=0.3)
        readable_log_ticks(ax)
    save(fig, png)


def fig_mu_sigma(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """mu/sigma (top) and mu, sigma (bottom) of the fitted lognormal against S, with intervals and the
    linear trend in log S of lognormal_trends.csv (paper Fig. 8, right; Hypothesis 2)."""
    table, trends = finals(data.tables["conjecture"]), data.tables["lognormal_trends"]
    palette = colors(table["family"].unique())
    # a trends table of note rows only (one model per family, or every fit at a bound) has no slope column
    fitted = trends if {"family", "dataset", "quantity", "slope"} <= set(trends.columns) else None
    fig, axes = grid(2, len(data.datasets), w=4.6, h=4.0)  # each with its legend under it
    for j, dataset in enumerate(data.datasets):
        here = table[table["dataset"] == dataset]
        left_out = unidentified(here)
        here = here[~here["model"].isin(left_out)]
        if here.empty:
            why = "no model has an identified lognormal (" + (
                f"every fit has a parameter at a bound: {', '.join(left_out)})" if left_out else "no model)"
            )
            for ax in axes[:, j]:
                nothing_to_draw(ax, why)
            axes[0, j].set_title(dataset)
            continue
        for family, group in here.groupby("family"):
            group = group.sort_values("S")
            color = palette[family]
            ratio = group["mu"] / group["sigma"]
            axes[0, j].plot(group["S"], ratio, "o", color=color)
            trend = (
                fitted[(fitted["family"] == family) & (fitted["dataset"] == dataset)].set_index("quantity")
                if fitted is not None
                else pd.DataFrame()
            )
            s = np.geomspace(group["S"].min(), group["S"].max(), 40)
            for ax, quantity, fmt in (
                (axes[0, j], "mu_over_sigma", "-"),
                (axes[1, j], "mu", "-"),
                (axes[1, j], "sigma", "--"),
            ):
                if quantity in trend.index and np.isfinite(float(trend.loc[quantity, "slope"])):
                    t = trend.loc[quantity]
                    ax.plot(s, t["intercept"] + t["slope"] * np.log(s), fmt, color=color, alpha=0.7,
                            label=f"{family} {quantity}: slope {t['slope']:.3f} [{t['slope_ci_low']:.3f}, {t['slope_ci_high']:.3f}], $R^2$ {t['r2']:.2f}")  # fmt: skip
            for quantity, marker in (("mu", "o"), ("sigma", "s")):
                low, high = (group[f"{quantity}_ci_{end}"].to_numpy(float) for end in ("low", "high"))
                clipped_errorbar(axes[1, j], group["S"], group[quantity], low, high, marker=marker, color=color, ms=4,
                                 mfc=color if quantity == "mu" else "none")  # fmt: skip
        axes[0, j].set_ylabel("$\\mu/\\sigma$ of the rank lognormal")
        axes[1, j].set_ylabel("$\\mu$ (circles), $\\sigma$ (squares)")
        axes[0, j].set_title(dataset)
        for ax in axes[:, j]:
            say_left_out(ax, NOT_IDENTIFIED_NOTE, left_out)
        for ax in axes[:, j]:
            ax.set_xscale("log")
            ax.set_xlabel(S_LABEL)
            ax.grid(True, which="both", alpha=0.3)
            legend_below(ax, fontsize=6)
    save(fig, png)


def fig_decomposition(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """CE stacked into error entropy, self-alignment and confidence against S (arXiv 2510.04067)."""
    table, fits = finals(data.tables["conjecture"]), data.tables["powerlaw_fits"]
    parts = (("ee", "error entropy"), ("self_alignment", "self-alignment"), ("confidence", "confidence $-\\log C$"))
    rows = [(d, f) for d in data.datasets for f in sorted(table.loc[table["dataset"] == d, "family"].unique())]
    fig, axes = grid(1, len(rows), w=5.0, h=4.2)
    for j, (dataset, family) in enumerate(rows):
        ax = axes[0, j]
        group = table[(table["dataset"] == dataset) & (table["family"] == family)].sort_values("S")
        positions = np.arange(len(group))
        bottom = np.zeros(len(group))
        for c, (name, label) in enumerate(parts):
            fit = LawKey(family, dataset, name).select(fits, data.fits_form)
            alpha = exponent_label(fit) if fit is not None else ""
            values = group[name].to_numpy(float)
            ax.bar(positions, values, bottom=bottom, color=cycle_color(c), width=0.7, label=label + alpha)
            low, high = (bottom + group[f"{name}_ci_{end}"].to_numpy(float) for end in ("low", "high"))
            clipped_errorbar(ax, positions, bottom + values, low, high, marker="none", color="k", lw=0.8)
            bottom = bottom + values
        ax.plot(positions, group["ce"], "k_", ms=18, mew=2, label="cross-entropy (measured)")
        ax.set_xticks(positions, [f"{s:.2g}" for s in group["S"]], rotation=30, fontsize=7)
        ax.set_xlabel(S_LABEL)
        ax.set_ylabel("nats")
        ax.set_title(f"{family} on {dataset}")
        legend_below(ax, fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    save(fig, png)


def log_bins(vocab_size: int, per_decade: int = 8) -> np.ndarray:
    """Integer bin edges 1 = e_0 < e_1 < ... < |V| + 1, logarithmically spaced (bins never empty of ranks)."""
    edges = np.unique(
        np.rint(np.geomspace(1, vocab_size + 1, max(2, int(np.log10(vocab_size + 1) * per_decade) + 1))).astype(int)
    )
    return np.unique(np.concatenate([[1], edges, [vocab_size + 1]]))


def binned(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Mean of values[r - 1] over each bin [e_i, e_{i+1}): a density per rank."""
    sums = np.add.reduceat(values, edges[:-1] - 1)
    return sums / np.diff(edges)


def fig_rank_histogram(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """Rank distribution in logarithmic bins (density per rank) with the fitted lognormal and the best alternative,
    smallest and largest model of each family."""
    lognormal, tests = finals(data.tables["lognormal_fits"]), data.tables["rank_distribution_tests"]
    fig, axes = grid(1, len(data.datasets), w=5.2)
    for j, dataset in enumerate(data.datasets):
        ax = axes[0, j]
        sel = lognormal[lognormal["dataset"] == dataset].sort_values("S")
        if sel.empty:
            nothing_to_draw(ax, f"no model scored on {dataset}")
            continue
        chosen = pd.concat([g.iloc[[0, -1]] if len(g) > 1 else g for _, g in sel.groupby("family")])
        left_out: list[str] = []
        for c, row in enumerate(chosen.itertuples()):
            counts = data.hists[(row.model, dataset)].astype(np.float64)
            vocab = len(counts) - 1
            edges = log_bins(vocab)
            centres = np.sqrt(edges[:-1] * (edges[1:] - 1).clip(min=1))
            density = binned(counts[1:] / counts.sum(), edges)
            color = cycle_color(c)
            shown = density > 0
            ax.loglog(centres[shown], density[shown], "o", ms=3, color=color, label=f"{row.model} (ranks)")
            grid_r = np.arange(1, vocab + 1)
            if np.isfinite(row.mu) and np.isfinite(row.sigma):
                model = np.exp(log_pmf(grid_r, row.mu, row.sigma, vocab, bool(row.truncated)))
                ax.loglog(centres, binned(model, edges), "-", color=color,
                          label=f"lognormal $\\mu$={row.mu:.2f}, $\\sigma$={row.sigma:.2f}")  # fmt: skip
            else:
                left_out.append(f"{row.model} lognormal")
            alt = tests[(tests["model"] == row.model) & (tests["dataset"] == dataset)]
            params = [np.array([float(v) for v in str(p).split()]) for p in alt["alternative_params"]]
            identified = np.array([bool(np.isfinite(p).all()) for p in params], dtype=bool)
            left_out += [f"{row.model} {name}" for name in alt.loc[~identified, "alternative"]]
            if identified.any():  # the best of the fits inside their bounds: one at a bound is a limit
                best = alt[identified].sort_values("loglik_alternative").iloc[-1]
                family = FAMILIES[best["alternative"]]
                theta = params[alt.index.get_loc(best.name)]
                theta = theta if family.name == "zipf" else np.log(theta)
                note = best["note"] if "note" in best.index and isinstance(best["note"], str) else ""
                versus = "against the lognormal's limit: no verdict" if note else f"t {best['t']:+.1f} by documents"
                ax.loglog(centres, binned(np.exp(family.log_pmf(grid_r, theta, vocab)), edges), ":", color=color,
                          label=f"best alternative: {best['alternative']} ({versus})")  # fmt: skip
        ax.set_xlabel("rank $R$ of the correct token")
        ax.set_ylabel("$P(R)$ per rank, logarithmic bins")
        ax.set_title(dataset)
        say_left_out(ax, "fits at a bound (limits, not results), not drawn: ", left_out)
        legend_below(ax, fontsize=6, ncol=2)
        ax.grid(True, which="both", alpha=0.3)
    save(fig, png)
