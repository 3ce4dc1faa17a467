"""Leave-one-out over every size of a finished run: each final model held out in turn (the smallest and interior
ones too, not only the largest as extrapolation.csv does), the law refitted to the others, and extrapolation.csv's
own interval (`rankscale.tables.extrapolation.HeldOut.check`) judged on the held-out value. The coverage is split
by whether REML put the fitted sizes' tau^2 at 0: the regime where Satterthwaite's degrees of freedom grew too
large (77% of such points covered on a default run) against the one where they collapsed.

    python benchmarks/leave_one_out.py DIR [--run default] [--level 0.95]

DIR: a finished run's directory (its results/<run>/tables/metrics.csv and results/summary/); every family with at
least four sizes, every dataset, CE and -log RBP_k at every k of metrics.csv, power law.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rankscale.laws import FORMS, Points
from rankscale.layout import Layout, RunFiles, fill
from rankscale.metrics import METRICS
from rankscale.summary import SummaryPaths, load_replicates, read_summary
from rankscale.tables import Replicates, finals, read_table
from rankscale.tables.extrapolation import HeldOut


@dataclass(frozen=True)
class Judged:
    """One held-out point: which law, whether the interval held it, and the fitted sizes' tau^2."""

    family: str
    dataset: str
    metric: str
    k: float
    model: str
    covered: bool
    tau2: float


def replicates_of(run_dir: Path, metrics: pd.DataFrame) -> Replicates:
    """The summaries (and their replicates) of the models x datasets of `metrics`, from DIR/results/summary."""
    wanted = set(zip(metrics["model"], metrics["dataset"], strict=True))
    found = {}
    for path in sorted(run_dir.glob(f"{fill(Layout.SUMMARY, model='*', summary='*')}.json")):
        summary = read_summary(path)
        key = (summary.model, summary.dataset)
        if key in wanted:
            if key in found:
                raise SystemExit(f"{run_dir}: several summaries of {key} (several configurations ran there)")
            found[key] = (summary, path)
    missing = wanted - set(found)
    if missing:
        raise SystemExit(f"{run_dir}: no summary for {sorted(missing)[:3]}")
    items = list(found.values())
    return Replicates([s for s, _ in items], [load_replicates(s, SummaryPaths.beside(p)) for s, p in items])


def leave_one_out(metrics: pd.DataFrame, replicates: Replicates, level: float, seed: int) -> list[Judged]:
    form = FORMS["power_law"]
    rows = metrics[metrics["metric"].isin(["ce", "rbp"])]
    judged = []
    for (family, dataset, name, k), group in rows.groupby(["family", "dataset", "metric", "k"], dropna=False):
        group = group.sort_values("S", kind="stable").reset_index(drop=True)
        if group["S"].nunique() < 4 or group["S"].nunique() < len(group):  # three fitted sizes at least; no seeds
            continue
        metric = METRICS[name]
        for i in range(len(group)):
            order = [j for j in range(len(group)) if j != i] + [i]
            reordered = group.iloc[order].reset_index(drop=True)
            y = metric.to_law(reordered["value"].to_numpy(dtype=np.float64))
            if not np.all(np.isfinite(np.log(y))):
                continue
            n_fit = len(group) - 1
            law = form.fit(Points.of(reordered["S"].to_numpy(dtype=np.float64)[:n_fit]), y[:n_fit])
            check = HeldOut.of(form, law, reordered, n_fit, y, replicates, seed)
            if check.level is None:
                continue
            out = check.check(n_fit, level, metric)
            judged.append(Judged(family, dataset, name, k, str(group["model"].iloc[i]), out["covered"], out["tau2"]))
    return judged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--run", default="default")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    metrics = finals(read_table(args.run_dir / RunFiles(fill(Layout.RUN, run=args.run)).table("metrics")))
    judged = pd.DataFrame([j.__dict__ for j in leave_one_out(metrics, replicates_of(args.run_dir, metrics),
                                                             args.level, args.seed)])  # fmt: skip
    for label, part in (("all", judged), ("tau^2 = 0", judged[judged["tau2"] <= 0]),
                        ("tau^2 > 0", judged[judged["tau2"] > 0])):  # fmt: skip
        n, hits = len(part), int(part["covered"].sum())
        share = hits / n if n else float("nan")
        missed = part[~part["covered"].astype(bool)]
        units = lambda frame: len(frame.groupby(["dataset", "model"]))  # noqa: E731  # a model's points move together
        print(f"{label}: {hits} / {n} covered ({share:.1%} +/- {np.sqrt(share * (1 - share) / max(n, 1)):.1%}, "
              f"binomial SE as if independent); {units(part)} held-out models x datasets, the misses in "
              f"{units(missed)}")  # fmt: skip


if __name__ == "__main__":
    main()
