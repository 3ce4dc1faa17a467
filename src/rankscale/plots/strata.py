"""Which tokens carry the law (docs/science.md, "Strata"): the exponents of every stratum's laws side by side
(Fig. 13), and -log RBP_1 against S per frequency bin with each bin's law (Fig. 13b).

Both read strata_fits.csv, fitted in `analysis.law_form` like powerlaw_fits.csv. A figure is only told the form
where it reads powerlaw_fits.csv (`Figure.reads_fits`), so these take it from the table's parameter columns
(`strata_form`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rankscale.laws import FORMS, FitForm, Points
from rankscale.metrics import METRICS
from rankscale.plots.common import (
    S_LABEL,
    FigureData,
    FigureSettings,
    clipped_errorbar,
    cycle_color,
    figure_legend,
    grid,
    legend_below,
    nothing_to_draw,
    readable_log_ticks,
    save,
    say_left_out,
)
from rankscale.tables import finals, select
from rankscale.tables.selection import ONE_SIZE, n_sizes, without_notes

# Fig. 13's laws: (law, k, marker, name); the -log RBP_k of these k that the strata have (analysis.law_k), and CE
LAWS: tuple[tuple[str, int | None, str, str], ...] = (
    ("neg_log_rbp", 1, "o", "$-\\log \\mathrm{RBP}_{1}$"),
    ("neg_log_rbp", 10, "s", "$-\\log \\mathrm{RBP}_{10}$"),
    ("neg_log_rbp", 100, "^", "$-\\log \\mathrm{RBP}_{100}$"),
    ("ce", None, "D", "CE"),
)
SHORT = {(law, k): "CE" if k is None else f"k = {k}" for law, k, *_ in LAWS}  # in "no law: ..." notes
KIND_AXES = {  # x label of each stratum kind (rankscale.strata.STRATA); another kind is named as is
    "frequency": "target's frequency rank in the dataset (bin)",
    "context": "tokens of context before the target (bin)",
    "kind": "what the target token is",
}
SPREAD = 0.16  # horizontal distance between the laws' series at one stratum (strata are 1 apart)
NO_STRATA = "no strata (analysis.strata is empty)"


def strata_form(fits: pd.DataFrame, form: FitForm | None = None) -> FitForm:
    """The form strata_fits.csv was fitted in: `form` if the figure was told it, otherwise the law in S whose
    parameters the table holds (the one with the most, so E + C S^-alpha is not read as C S^-alpha)."""
    if form is not None:
        return form
    held = [f for f in FORMS.values() if f.variables == ("S",) and set(f.columns) <= set(fits.columns)]
    if not held:
        raise ValueError(f"strata_fits.csv holds none of the laws' parameters; columns: {list(fits.columns)}")
    return max(held, key=lambda f: len(f.columns))


def _no_law_why(fits: pd.DataFrame) -> str:
    """Why no row of `fits` holds a law: every family of one size, or the notes the table gives."""
    notes = fits["note"].dropna().astype(str) if "note" in fits else pd.Series(dtype=str)
    notes = notes[notes != ""]
    if len(notes) and (notes == ONE_SIZE).all():
        return "every family has one size, so no stratum has a law in S"
    return "no stratum has a law" + (f" ({notes.mode().iloc[0]})" if len(notes) else "")


def _say_nothing(png: Path, why: str) -> None:
    """The whole figure is one note saying why there is nothing to draw."""
    fig, axes = grid(1, 1, w=6.0, h=1.6)
    nothing_to_draw(axes[0, 0], why)
    save(fig, png)


def _fitted(fits: pd.DataFrame, exponent: str) -> pd.DataFrame:
    """The rows of `fits` that hold a law with a finite exponent."""
    rows = without_notes(fits)
    return rows[np.isfinite(rows[exponent].to_numpy(float))]


def _ordered(values: Sequence[str], first: Sequence[str]) -> list[str]:
    """The distinct `values`, those of `first` in its order, then the rest in table order."""
    present = list(dict.fromkeys(values))
    return [v for v in first if v in present] + [v for v in present if v not in first]


def _strata_panel(
    ax: Any, fits: pd.DataFrame, kind: str, laws: Sequence[tuple[str, int | None, str, str]], exponent: str
) -> None:
    """One family's exponents on one dataset for one stratum kind: a series per law, strata on x in table order;
    strata without any law are left out and, with the laws a stratum lacks, named above the panel."""
    rows = select(fits, kind=kind)
    labels = list(dict.fromkeys(rows["stratum"]))
    fitted = _fitted(rows, exponent)
    shown = [label for label in labels if label in set(fitted["stratum"])]
    missing = []
    for label in labels:
        lacking = [SHORT[law, k] for law, k, *_ in laws if select(fitted, stratum=label, metric=law, k=k).empty]
        if len(lacking) == len(laws):
            missing.append(f"{label} (every law)")
        elif lacking:
            missing.append(f"{label} ({', '.join(lacking)})")
    position = {label: i for i, label in enumerate(shown)}
    for i, (law, k, marker, name) in enumerate(laws):
        series = select(fitted, metric=law, k=k)
        series = series[series["stratum"].isin(shown)]
        x = np.array([position[s] for s in series["stratum"]], dtype=float) + (i - (len(laws) - 1) / 2) * SPREAD
        low, high = (series[f"{exponent}_ci_{end}"].to_numpy(float) for end in ("low", "high"))
        clipped_errorbar(ax, x, series[exponent].to_numpy(float), low, high, marker=marker, color=cycle_color(i),
                         ms=5, label=f"exponent of {name}")  # fmt: skip
    ax.axhline(0.0, color="0.3", lw=0.8, zorder=0)
    ax.set_xticks(
        range(len(shown)),
        shown,
        rotation=25 if kind == "kind" else 0,
        ha="right" if kind == "kind" else "center",
        rotation_mode="anchor",
    )
    ax.set_xlim(-0.5, max(len(shown), 1) - 0.5)
    ax.set_xlabel(KIND_AXES.get(kind, kind), fontsize=9)
    ax.set_ylabel("exponent $\\alpha$ of $-\\log \\mathrm{RBP}_k$ or of CE")
    ax.grid(True, axis="y", alpha=0.3)
    if not shown:
        nothing_to_draw(ax, f"no stratum of '{kind}' has a law here")
    say_left_out(ax, "no law (strata_fits.csv's note): ", missing)
    ax.title.set_fontsize(9)  # say_left_out sets the title anew, at the default size


def fig_strata(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """The exponents of -log RBP_1, RBP_10, RBP_100 and CE by stratum: a row per family and dataset with laws,
    a column per stratum kind."""
    fits = data.tables["strata_fits"]
    if fits.empty or "kind" not in fits:
        _say_nothing(png, NO_STRATA)
        return
    exponent = data.form.exponent if data.form is not None else "alpha"  # every law form in S has an alpha
    if exponent is None or exponent not in fits:
        _say_nothing(png, "strata_fits.csv has no exponent alpha to compare across strata (analysis.law_form)")
        return
    laws = [law for law in LAWS if not select(fits, metric=law[0], k=law[1]).empty]
    if not laws:
        _say_nothing(png, "strata_fits.csv has no law of -log RBP_1, RBP_10, RBP_100 or CE (analysis.law_k)")
        return
    drawn = pd.concat([select(fits, metric=law, k=k) for law, k, *_ in laws], ignore_index=True)
    fitted = _fitted(drawn, exponent)
    if fitted.empty:
        _say_nothing(png, _no_law_why(drawn))
        return
    kinds = list(dict.fromkeys(fits["kind"]))
    pairs = [
        (family, dataset)
        for family in sorted(drawn["family"].unique())
        for dataset in _ordered(drawn["dataset"], data.datasets)
        if not select(fitted, family=family, dataset=dataset).empty
    ]
    fig, axes = grid(len(pairs), len(kinds), w=4.6, h=3.9)
    for r, (family, dataset) in enumerate(pairs):
        for c, kind in enumerate(kinds):
            ax = axes[r, c]
            ax.set_title(f"{family} on {dataset}: strata by {kind}", fontsize=9)
            _strata_panel(ax, select(drawn, family=family, dataset=dataset), kind, laws, exponent)
    without = sorted(set(map(tuple, drawn[["family", "dataset"]].to_numpy())) - set(pairs))
    for family, dataset in without:  # named in the legend, not given an empty row
        why = _no_law_why(select(drawn, family=family, dataset=dataset)).replace("every family has", "family has")
        axes[0, 0].plot([], [], ls="none", label=f"{family} on {dataset}: not drawn, {why}")
    entries = {label for ax in fig.axes for label in ax.get_legend_handles_labels()[1]}
    figure_legend(fig, fontsize=8, ncol=2 if without else min(len(entries), 6))
    save(fig, png)


def _bin_colors(n: int) -> list[Any]:
    """One colour per frequency bin, in order along a sequential map (the most frequent darkest)."""
    return [plt.get_cmap("viridis")(v) for v in np.linspace(0.0, 0.85, max(n, 1))][:n]


def _frequency_panel(ax: Any, points: pd.DataFrame, fits: pd.DataFrame, form: FitForm | None) -> None:
    """One family on one dataset: -log RBP_k of each frequency bin's final models against S with their intervals,
    and each bin's fitted law over its sizes (a family of one size: points alone)."""
    metric = METRICS["rbp"]
    ax.set_xscale("log")
    ax.set_yscale("log")
    bins = list(dict.fromkeys(points["stratum"]))
    one_size = n_sizes(points["S"]) < 2
    for color, label in zip(_bin_colors(len(bins)), bins, strict=True):
        rows = points[points["stratum"] == label].sort_values("S", kind="stable")
        value = rows["value"].to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):  # -log of 0 is unbounded: not on the axes, or clipped
            y = metric.to_law(value)
            bounds = metric.to_law(rows[["ci_low", "ci_high"]].to_numpy(float))
        clipped_errorbar(ax, rows["S"], y, bounds[:, 0], bounds[:, 1], color=color, ms=5)
        fit = select(fits, stratum=label) if len(fits) else fits
        row = without_notes(fit)
        off, line = _off_axes(value), False
        if one_size:
            text = f"{label}: one size, no law" + (f"; {off}" if off else "")
        elif form is not None and len(row) and np.isfinite([float(row.iloc[0][p]) for p in form.columns]).all():
            record = row.iloc[0]
            grid_s = Points.of(np.geomspace(float(record["S_min"]), float(record["S_max"]), 60))
            ax.plot(grid_s.S, form.from_row(record).predict(grid_s), "-", color=color, lw=1.2)
            line, text = True, f"{label}: law"
            if form.exponent is not None:
                low, high = (float(record[f"{form.exponent}_ci_{end}"]) for end in ("low", "high"))
                text = f"{label}: $\\alpha$ = {float(record[form.exponent]):.3f} [{low:.3f}, {high:.3f}]"
            text += f"; {off}" if off else ""
        else:
            notes = fit["note"].dropna().astype(str) if "note" in fit else pd.Series(dtype=str)
            notes = notes[notes != ""]
            why = off or (notes.iloc[0] if len(notes) else "not fitted")
            text = f"{label}: no law, {why}"
        ax.plot([], [], "o-" if line else "o", color=color, label=text)
    if one_size:  # a log axis autoscaled around one value has no sensible range: a decade either side
        size = float(points["S"].iloc[0])
        ax.set_xlim(size / 10, size * 10)


def _off_axes(value: np.ndarray) -> str:
    """Which of a bin's points have no place on log axes, and why: no scored token in the bin, RBP_1 = 0 (-log
    unbounded) or RBP_1 = 1 (-log of it 0); '' if every point is drawn."""
    n, parts = len(value), []
    for what, mask in (
        ("no scored token", ~np.isfinite(value)),
        ("RBP$_1$ = 0", value == 0),
        ("RBP$_1$ = 1", value == 1),
    ):
        if m := int(mask.sum()):
            parts.append(f"{what} at {'every size' if m == n else f'{m} of {n} sizes'}")
    return ", ".join(parts) + " (not drawn)" if parts else ""


def fig_frequency(data: FigureData, settings: FigureSettings, png: Path) -> None:
    """-log RBP_1 against S per frequency bin, with each bin's law: a column per dataset, a row per family."""
    strata, fits = data.tables["strata"], data.tables["strata_fits"]
    k = 1
    if strata.empty or "kind" not in strata:
        _say_nothing(png, NO_STRATA)
        return
    frequency = select(finals(strata), kind="frequency")
    if frequency.empty:
        _say_nothing(png, "no frequency strata (analysis.strata has no 'frequency')")
        return
    points = select(frequency, metric="rbp", k=k)
    if points.empty:
        ks = sorted({int(v) for v in frequency["k"].dropna()})
        _say_nothing(png, f"the strata have no RBP_1 (their k, analysis.law_k: {ks})")
        return
    laws = select(fits, kind="frequency", metric="neg_log_rbp", k=k) if not fits.empty and "kind" in fits else fits
    form = strata_form(laws, data.form) if not without_notes(laws).empty else None  # no law: no form needed
    families = sorted(points["family"].unique())
    datasets = _ordered(points["dataset"], data.datasets)
    fig, axes = grid(len(families), len(datasets), w=5.2, h=4.2)
    for r, family in enumerate(families):
        for c, dataset in enumerate(datasets):
            ax = axes[r, c]
            here = select(points, family=family, dataset=dataset)
            if here.empty:
                nothing_to_draw(ax, f"{family} has no model on {dataset}")
                continue
            fitted = select(laws, family=family, dataset=dataset) if not laws.empty else laws
            _frequency_panel(ax, here, fitted, form)
            one = n_sizes(here["S"]) < 2
            ax.set_title(f"{family} on {dataset}" + (": one size, no law" if one else ""), fontsize=9)
            ax.set_xlabel(S_LABEL)
            ax.set_ylabel(METRICS["rbp"].axis_label(k) + " of the bin's tokens")
            ax.grid(True, which="both", alpha=0.3)
            legend_below(ax, fontsize=7, title="frequency rank bin", title_fontsize=7)
            readable_log_ticks(ax)
    save(fig, png)
