"""The tables of rankscale.tables.tokens, declared: names, inputs, settings, captions and where each implementation lives, importing none of it (planning reads these)."""

from __future__ import annotations

from rankscale.sections import STRATA
from rankscale.tables.declaration import Table


def _entry(name: str, caption: str) -> Table:
    """A table of the token trajectories: its builder is `build_<name>` of rankscale.tables.tokens."""
    return Table(name=name, section=STRATA, build=f"rankscale.tables.tokens:build_{name}", summaries=False,
                 trajectories=True, settings=("level",), caption=caption)  # fmt: skip


EMPTY = "Empty when no family was scored; a family with one model or arrays that do not align gets a row with its note."

TABLES = [
    _entry(
        "token_churn",
        (
            "Per family, dataset and k: the share of scored tokens **gained** (outside the top k at the smaller size, "
            "inside at the larger), **lost** (the reverse), **net** (= the change in RBP_k exactly) and **flips** "
            "(gained + lost) between consecutive sizes (``axis`` size; per stratum too: ``kind``, ``stratum``), "
            "consecutive checkpoints of a run (``checkpoint``) and two seeds of a size (``seed``). ``seed_floor``: the "
            "flips between seeds of the same size(s), the noise floor of per-token flips. 95% intervals from the "
            f"document bootstrap. {EMPTY}"
        ),
    ),
    _entry(
        "token_learning",
        (
            "When a token enters the top k along the sizes and stays: per family, dataset, stratum and k, ``rbp`` "
            "(RBP_k at each size) beside ``kept_by`` (inside at that size and every larger one), ``learned_at`` (entered "
            "there and kept); ``always``, ``never``, ``unstable`` (in at some size, out at the largest), ``monotone``; "
            "``kept_of_gains`` (the share of gains between consecutive sizes kept to the largest size), "
            "``lost_per_gained``, ``already_at_smallest`` (of the tokens the largest size ranks in the top k, the "
            f"share already there at the smallest). {EMPTY}"
        ),
    ),
    _entry(
        "token_slopes",
        (
            "Per family and dataset, the least-squares slope of log R on log S of every scored token across the sizes: "
            "mean, sd and quantiles, the shares improving, worsening, saturated (rank 1 at every size) and flat, and "
            "``sd_noise``, the spread noise alone gives (seeds where a size has several, else permutations of the "
            "sizes: ``noise_source``); ``sd_excess`` is the spread beyond it: zero for a pure shift of log R. "
            f"{EMPTY}"
        ),
    ),
    _entry(
        "rank_transitions",
        (
            "Between consecutive sizes of each family and dataset, the transition matrix of rank on log bins (1, 2-10, "
            "11-100, 101-1000, >1000): ``share`` of scored tokens in each cell, ``conditional`` the share of the "
            f"``bin_from`` row's tokens. 95% intervals from the document bootstrap. {EMPTY}"
        ),
    ),
]
