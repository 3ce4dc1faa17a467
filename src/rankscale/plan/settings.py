"""What each analysis job is computed with: the `analysis:` and `figures:` settings it reads, canonical.

The rules pass these as params, so a job reruns exactly when a setting it reads changes (and the
aggregation benchmark measures the grid the workflow runs). Defaults come from the schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from rankscale.canon import canonical


def default_k(schema: Mapping[str, Any]) -> list[int]:
    """Every k the schema's defaults put on the k grid (`analysis.k_include`, `law_k`, `emergence_k`, the figures'
    `rbp_k`, `large_k`): a model whose |V| is below some of them leaves those out without a warning, which only a k
    the configuration itself wrote is worth."""
    found: set[int] = set()
    for section in ("analysis", "figures"):
        for name, spec in schema["properties"][section].get("properties", {}).items():
            if (name == "k_include" or name.endswith("_k")) and isinstance(spec.get("default"), list):
                found.update(int(k) for k in spec["default"])
    return sorted(found)


def figure_k(config: Mapping[str, Any]) -> set[int]:
    """Every k a figure shows: they join the summaries' k grid."""
    from rankscale.plots import FIGURES

    return {k for f in FIGURES.values() for key in f.k_settings for k in config["figures"][key]}


def summary_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """`rankscale.summary.SummarySettings` as params: the k grid (with every k a table or figure reads),
    the emergence runs, the bootstrap draws and the lognormal. The interval level and refits are the tables'."""
    analysis = config["analysis"]
    return canonical(
        {
            "k_points_per_decade": analysis["k_points_per_decade"],
            "k_include": sorted(
                set(analysis["k_include"]) | figure_k(config) | set(analysis["emergence_k"]) | set(analysis["law_k"])
            ),
            "emergence_k": analysis["emergence_k"],
            "emergence_N": analysis["emergence_N"],
            "law_k": analysis["law_k"],
            "replicates": analysis["bootstrap"]["replicates"],
            "seed": analysis["bootstrap"]["seed"],
            "truncate": analysis["lognormal"]["truncate"],
            "distribution_replicates": analysis["lognormal"]["replicates"],
            "strata": strata_settings(config),
        }
    )


def strata_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """`rankscale.strata.StrataSettings` as params: the kinds, their bins, and the k of each stratum's RBP_k."""
    analysis = config["analysis"]
    kinds = analysis["strata"]
    return {"kinds": kinds, "bins": {k: analysis["strata_bins"][k] for k in kinds if k in analysis["strata_bins"]},
            "k": sorted(analysis["law_k"])}  # fmt: skip


def trajectory_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """What a `trajectories` job counts with: the k (those of `analysis.law_k`, and at least 1, 10 and 100), the
    bootstrap draws (the summaries', so every interval is paired) and the stratum kinds."""
    analysis = config["analysis"]
    return canonical(
        {
            "ks": sorted(set(analysis["law_k"]) | {1, 10, 100}),
            "replicates": analysis["bootstrap"]["replicates"],
            "seed": analysis["bootstrap"]["seed"],
            "strata": strata_settings(config),
        }
    )


def _table_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """Every `rankscale.tables.TableSettings` field, from where it sits under `analysis:` (its field's metadata)."""
    from rankscale.tables import TableSettings

    values = {}
    for setting in fields(TableSettings):
        value: Any = config["analysis"]
        for key in setting.metadata["analysis"].split("."):
            value = value[key]
        values[setting.name] = value
    return values


def table_settings(config: Mapping[str, Any], table: str) -> dict[str, Any]:
    """The settings table `table` declares it reads (`Table.settings`), as params."""
    from rankscale.tables import TABLES

    values = _table_values(config)
    return canonical({name: values[name] for name in TABLES[table].settings})


def figure_settings(config: Mapping[str, Any], figure: str, datasets: Sequence[str], models: Sequence[str]) -> dict:
    """What figure `figure` reads: its `figures:` keys, the datasets (its columns) and, where it reads
    histograms or replicates, the models; the law form where it draws fits; the level and refits of its bands."""
    from rankscale.plots import FIGURES

    entry, analysis = FIGURES[figure], config["analysis"]
    return canonical(
        {
            **{key: config["figures"][key] for key in entry.settings},
            "datasets": list(datasets),
            "models": list(models) if entry.hists or entry.resampled else [],
            "law_form": analysis["law_form"] if entry.reads_fits else None,
            "level": analysis["bootstrap"]["level"] if entry.resampled else None,
            "refits": analysis["bootstrap"]["refits"] if entry.resampled else None,
            "seed": analysis["bootstrap"]["seed"] if entry.resampled else None,
        }
    )


def training_params(config: Mapping[str, Any], plan: Any) -> dict[str, Any]:
    """What a ladder model's weights depend on, as the ladder_train rule's params: its size's spec, the
    training every run shares with the model's own seed (not the lists of checkpoints and seeds, so adding
    one trains that one alone)."""
    ladder = config["ladder"]
    spec = next(s for s in ladder["sizes"] if s["name"] == plan.replica_of)
    shared = {k: v for k, v in ladder["train"].items() if k not in ("checkpoints", "seeds")}
    return {"size": canonical(spec), "train": canonical({**shared, "seed": plan.seed})}


def run_checkpoints(config: Mapping[str, Any]) -> list[int]:
    """The training tokens at which every run saves its state (and a checkpoint) on its way."""
    return list(config["ladder"]["train"]["checkpoints"]) if config.get("ladder") else []
