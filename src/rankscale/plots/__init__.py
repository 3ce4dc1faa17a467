"""Figures mirroring the paper's, from the result tables; each saved as PNG + PDF.

Each figure is declared in `rankscale.plots.entries.<topic>` (the tables and `figures:` settings it reads, its
caption, and its plot function as "module:function"), drawn by a function of the topic module
`rankscale.plots.<topic>`; the `figure` rule draws every registered figure in its own job, which imports that
topic module alone (matplotlib with it): planning reads the declarations only. `plots.common` is the toolkit
the topic modules share. CONTRIBUTING.md, "A new figure", says how to add one.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from rankscale.plots.declaration import Figure, FigureSettings
from rankscale.registry import Registry

# the topics, in the order their figures are listed; each declares its figures in rankscale.plots.entries.<topic>
# (imported by name, so that `rankscale.plots.<topic>` stays the topic's implementation module)
TOPICS = ("laws", "extrapolation", "emergence", "lognormal", "training", "seeds", "strata", "tokens", "calibration")
MODULES = tuple(importlib.import_module(f"rankscale.plots.entries.{topic}") for topic in TOPICS)
FIGURES: Registry[Figure] = Registry("figure", (f for module in MODULES for f in module.FIGURES), lambda f: f.name)


def _has_checkpoints(models: Sequence[Mapping[str, Any]]) -> bool:
    return any(not m["final"] for m in models)


def _has_seeds(models: Sequence[Mapping[str, Any]]) -> bool:
    runs = [(m["family"], m["replica_of"]) for m in models if m["final"]]
    return len(runs) > len(set(runs))


# what a figure's `needs` asks of a run's models, and why it is left out of a run without
NEEDS = {
    "checkpoints": (_has_checkpoints, "no model is a checkpoint saved before the end of its training "
                    "(ladder.train.checkpoints, or models with D and size)"),
    "seeds": (_has_seeds, "no size was trained with more than one seed (ladder.train.seeds, or seed and "
              "replica_of on models)"),
}  # fmt: skip


def left_out(models: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The figures a run of these models (`ModelPlan.info()` of each) leaves out, each with why: a figure of
    checkpoints or seeds where there are none would be drawn empty."""
    return {name: NEEDS[f.needs][1] for name, f in FIGURES.items() if f.needs and not NEEDS[f.needs][0](models)}




def __getattr__(name: str) -> Any:
    """`FigureData` and `save`, from `plots.common` (matplotlib) when asked for (PEP 562): `import rankscale.plots`
    stays light."""
    if name in ("FigureData", "save"):
        from rankscale.plots import common

        return getattr(common, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FIGURES", "Figure", "FigureData", "FigureSettings", "left_out", "save"]
