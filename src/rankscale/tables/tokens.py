"""Which tokens a larger model gets right: the four tables of the token trajectories (docs/science.md, "Token
trajectories"), built from each family x dataset's counts (rule `trajectories`, `rankscale.trajectories`).

Almost every value is a ratio of two counts summed over documents (a share of scored tokens, a mean slope): its
interval is the cluster-robust t over the documents' own ratios, as metrics.csv's RBP_k and CE
(`rankscale.intervals.ratio_of_sums`). The slopes' spreads (sd, sd_noise, sd_excess, sd_ratio) are not ratios
but smooth functions of the sums, biased under resampling: BCa over the replicates (the dataset's document draws,
paired with every other number of the family), with its acceleration from the jackknife over documents, and
none where it cannot contain the estimate (the reason in `note`). Under `rankscale.intervals.RELIABLE_DOCUMENTS`
effective documents, or documents too uneven, `note` says the intervals covered under 93% on the run's own
documents. A family x dataset with nothing to follow (one model, arrays that do not align) gives one row with its
note.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bca import bca, leave_one_out
from rankscale.intervals import DIFFERENCE, PROBABILITY, UNBOUNDED, ModelInterval, ratio_of_sums, unreliable_design
from rankscale.tables.base import TableInputs, interval_columns, rows_frame, typed
from rankscale.trajectories import RANK_BINS, TrajectoryResult

KEY = ("family", "dataset")
WHY = "__why"  # a column's suffix carrying why its interval is empty, folded into the row's note (`finished`)
Counts = dict[str, np.ndarray]


def columns_of(name: str, value: float, found: ModelInterval) -> dict[str, Any]:
    """`name`, its interval's ends and, where it has none, why, or where it is a one-sided bound (a share at 0 or 1
    in every document: `rankscale.intervals.boundary_bound`), how it was derived (folded into the note by
    `finished`)."""
    out: dict[str, Any] = {name: value, f"{name}_ci_low": found.low, f"{name}_ci_high": found.high}
    if found.note:
        out[name + WHY] = f"{name}: {found.note}"
    return out


def ratio(result: TrajectoryResult, num: Any, den: Any, level: float, name: str,
          bounds: tuple[float, float] = PROBABILITY) -> dict[str, Any]:  # fmt: skip
    """`name` = num / den of the summed counts and its interval (`num`, `den`: callables of a counts dict, point,
    per document or replicate, giving arrays of matching shape): the cluster-robust t over the documents' own
    ratios; from a file without the documents' sums, the bias-corrected percentiles of the replicates. `bounds`:
    the values it can take (a share of tokens, by default), where the cluster-robust t's ends stop."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(num(result.point) / den(result.point))
        if result.units:
            return columns_of(name, value, ratio_of_sums(num(result.units), den(result.units), level, bounds)[0])
        reps = num(result.replicates) / den(result.replicates)
    return columns_of(name, value, bca(reps, value, np.zeros(0), level))


def smooth(result: TrajectoryResult, statistic: Callable[[Counts], Any], level: float, name: str,
           jackknife: Counts | None) -> dict[str, Any]:  # fmt: skip
    """`name` = a statistic of the summed counts that is no ratio, and its BCa interval (`jackknife`: the totals
    with each document left out, `rankscale.bca.leave_one_out`; None: acceleration 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(statistic(result.point))
        reps = np.asarray(statistic(result.replicates), dtype=np.float64)
        jack = np.asarray(statistic(jackknife), dtype=np.float64) if jackknife else np.zeros(0)
    return columns_of(name, value, bca(reps, value, jack, level))


def note_of(result: TrajectoryResult) -> str:
    """The family x dataset's notes, and why its intervals do not hold their level where its documents are too few
    or too uneven (`rankscale.intervals.unreliable_design`)."""
    notes = list(result.notes)
    if result.point:
        tokens = result.units.get("tokens")
        n = int(np.count_nonzero(tokens[:, 0])) if tokens is not None else round(result.n_eff_documents)
        if why := unreliable_design(result.n_eff_documents, n):
            notes.append(f"intervals unreliable: {why}")
    return "; ".join(notes)


def finished(row: dict[str, Any], result: TrajectoryResult) -> dict[str, Any]:
    """`row` with its note: the family x dataset's (`note_of`) and why any of its intervals is empty."""
    why = [row.pop(key) for key in [k for k in row if k.endswith(WHY)]]
    return {**row, "note": "; ".join(n for n in (note_of(result), *why) if n)}


def group_labels(result: TrajectoryResult) -> list[tuple[int, str, str]]:
    """(group, stratum kind, stratum) of every group of the counts: 0 is every token (kind `all`)."""
    return [(0, "all", "all")] + [(g + 1, s.kind, s.label) for g, s in enumerate(result.strata)]


def note_row(result: TrajectoryResult) -> dict[str, Any]:
    return {"family": result.family, "dataset": result.dataset, "note": "; ".join(result.notes)}


CHURN_COLUMNS = (
    "family", "dataset", "axis", "from", "to", "S_from", "S_to", "kind", "stratum", "k", "rbp_from", "rbp_to",
    *interval_columns("gained"), *interval_columns("lost"), *interval_columns("net"), *interval_columns("flips"),
    *interval_columns("seed_floor"), "note",
)  # fmt: skip


def _seed_floor(result: TrajectoryResult, sizes: Sequence[str], i: int, level: float) -> dict[str, Any]:
    """The mean share of tokens flipping between two seeds of these sizes (NaN where no size has two): the pairs'
    mean flips over the tokens, a ratio of sums."""
    index = [p for p, pair in enumerate(result.pairs) if pair.axis == "seed" and pair.size in sizes]
    if not index:
        return dict(zip(interval_columns("seed_floor"), (np.nan,) * 3, strict=True))

    def flips(c: Counts) -> np.ndarray:
        return np.mean([c["pairs"][..., p, i, 2] + c["pairs"][..., p, i, 3] for p in index], axis=0)

    return ratio(result, flips, lambda c: c["tokens"][..., 0], level, "seed_floor")


def _churn(r: TrajectoryResult, gained: Any, lost: Any, tokens: Any, level: float) -> dict[str, float]:
    """Gained, lost, net and flips as shares of tokens, with intervals (each argument a callable of the counts)."""
    out = ratio(r, gained, tokens, level, "gained")
    out.update(ratio(r, lost, tokens, level, "lost"))
    out.update(ratio(r, lambda c: gained(c) - lost(c), tokens, level, "net", DIFFERENCE))
    out.update(ratio(r, lambda c: gained(c) + lost(c), tokens, level, "flips"))
    return out


def _size_row(r: TrajectoryResult, i: int, j: int, group: tuple[int, str, str], level: float) -> dict[str, Any]:
    """Sizes j -> j + 1 at k index i, of one group of tokens (every token or one stratum)."""
    g, kind, stratum = group
    row = {"family": r.family, "dataset": r.dataset, "axis": "size", "from": r.sizes[j], "to": r.sizes[j + 1],
           "S_from": r.S[j], "S_to": r.S[j + 1], "kind": kind, "stratum": stratum, "k": r.ks[i]}  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        row["rbp_from"] = float(r.point["rbp"][g, i, j] / r.point["tokens"][g])
        row["rbp_to"] = float(r.point["rbp"][g, i, j + 1] / r.point["tokens"][g])
    row.update(_churn(r, lambda c: c["gained"][..., g, i, j], lambda c: c["lost"][..., g, i, j],
                      lambda c: c["tokens"][..., g], level))  # fmt: skip
    nan = dict.fromkeys(interval_columns("seed_floor"), np.nan)
    return {**row, **(_seed_floor(r, r.sizes[j : j + 2], i, level) if g == 0 else nan)}


def _pair_row(r: TrajectoryResult, i: int, p: int, level: float) -> dict[str, Any]:
    """Two checkpoints of a run, or two seeds of a size, at k index i."""
    pair = r.pairs[p]
    S = {m.name: m.S for m in r.models}
    row = {"family": r.family, "dataset": r.dataset, "axis": pair.axis, "from": pair.before, "to": pair.after,
           "S_from": S[pair.before], "S_to": S[pair.after], "kind": "all", "stratum": "all", "k": r.ks[i],
           "rbp_from": float(r.point["pairs"][p, i, 0] / r.n_tokens),
           "rbp_to": float(r.point["pairs"][p, i, 1] / r.n_tokens)}  # fmt: skip
    row.update(_churn(r, lambda c: c["pairs"][..., p, i, 2], lambda c: c["pairs"][..., p, i, 3],
                      lambda c: c["tokens"][..., 0], level))  # fmt: skip
    floor = _seed_floor(r, [pair.size], i, level) if pair.axis == "checkpoint" else {}
    return {**row, **(floor or dict.fromkeys(interval_columns("seed_floor"), np.nan))}


def churn_table(results: Sequence[TrajectoryResult], level: float) -> pd.DataFrame:
    """Gained, lost, net and flipped shares of tokens between consecutive sizes (every stratum too), consecutive
    checkpoints and two seeds of a size, at each k; beside the size axis, the seeds' flips as its noise floor."""
    rows: list[dict[str, Any]] = []
    for r in results:
        if not r.point:
            rows.append(note_row(r))
            continue
        for i in range(len(r.ks)):
            for j in range(len(r.sizes) - 1):
                rows += [finished(_size_row(r, i, j, g, level), r) for g in group_labels(r)]
            rows += [finished(_pair_row(r, i, p, level), r) for p in range(len(r.pairs))]
    return typed(rows_frame(rows, CHURN_COLUMNS).reindex(columns=list(CHURN_COLUMNS)))


LEARNING_COLUMNS = ("family", "dataset", "kind", "stratum", "k", "quantity", "size", "S", "value", "ci_low",
                    "ci_high", "note")  # fmt: skip


def learning_rows(r: TrajectoryResult, g: int, kind: str, stratum: str, i: int, level: float) -> list[dict]:
    """One stratum's (g) learning quantities at k index i: per size, then per family x dataset."""
    m = len(r.sizes)
    tokens = lambda c: c["tokens"][..., g]  # noqa: E731
    learned = lambda c, j: c["learning"][..., g, i, j]  # noqa: E731
    base = {"family": r.family, "dataset": r.dataset, "kind": kind, "stratum": stratum, "k": r.ks[i]}
    rows = []

    def add(quantity: str, num: Any, den: Any = tokens, size: str | None = None, model_S: int | None = None,
            bounds: tuple[float, float] = PROBABILITY) -> None:  # fmt: skip
        value = ratio(r, num, den, level, "value", bounds)
        rows.append({**base, "quantity": quantity, "size": size, "S": model_S, "value": value["value"],
                     "ci_low": value["value_ci_low"], "ci_high": value["value_ci_high"],
                     **{k: v for k, v in value.items() if k.endswith(WHY)}})  # fmt: skip

    for j in range(m):
        add("rbp", lambda c, j=j: c["rbp"][..., g, i, j], size=r.sizes[j], model_S=r.S[j])
        add("kept_by", lambda c, j=j: sum(learned(c, q) for q in range(j + 1)), size=r.sizes[j], model_S=r.S[j])
        add("learned_at", lambda c, j=j: learned(c, j), size=r.sizes[j], model_S=r.S[j])
    add("always", lambda c: learned(c, 0))
    add("never", lambda c: learned(c, m))
    add("unstable", lambda c: learned(c, m + 1))
    add("monotone", lambda c: c["monotone"][..., g, i])
    if m >= 2:
        gains = lambda c: c["gained"][..., g, i, :].sum(axis=-1)  # noqa: E731
        add("kept_of_gains", lambda c: sum(learned(c, q) for q in range(1, m)), gains)
        add("lost_per_gained", lambda c: c["lost"][..., g, i, :].sum(axis=-1), gains, bounds=(0.0, math.inf))
        add("already_at_smallest", lambda c: c["already"][..., g, i], lambda c: c["rbp"][..., g, i, m - 1])
    return rows


def learning_table(results: Sequence[TrajectoryResult], level: float) -> pd.DataFrame:
    """When each token enters the top k along the sizes and stays (per stratum too), RBP_k beside the share
    learned and kept by each size, and how much of the improvement is kept learning rather than flipping."""
    rows: list[dict[str, Any]] = []
    for r in results:
        if not r.point or len(r.sizes) < 2:
            rows.append(note_row(r))
            continue
        for i in range(len(r.ks)):
            for g, kind, stratum in group_labels(r):
                rows += [finished(row, r) for row in learning_rows(r, g, kind, stratum, i, level)]
    frame = typed(rows_frame(rows, LEARNING_COLUMNS).reindex(columns=list(LEARNING_COLUMNS)))
    return frame.astype({"S": "Int64"})


SLOPE_COLUMNS = (
    "family", "dataset", "n_sizes", "n_chains", "n_tokens", *interval_columns("mean"), *interval_columns("sd"),
    "q05", "q25", "q50", "q75", "q95", *interval_columns("improving"), *interval_columns("worsening"),
    *interval_columns("saturated"), *interval_columns("flat"), *interval_columns("sd_noise"), "noise_source",
    *interval_columns("sd_excess"), *interval_columns("sd_ratio"), "note",
)  # fmt: skip
FIELDS = ("sum", "sum_sq", "improving", "worsening", "saturated", "flat", "seed_var")


def _noise_var(r: TrajectoryResult, c: dict[str, np.ndarray]) -> np.ndarray:
    """The per-token slope variance noise alone gives: across seeds' chains, else across permutations of sizes."""
    n = c["tokens"][..., 0]
    if r.n_chains > 1:
        return c["slopes"][..., FIELDS.index("seed_var")] / n
    if r.n_permutations:
        perm = c["permuted"]
        return np.mean(perm[..., 1] / n[..., None] - (perm[..., 0] / n[..., None]) ** 2, axis=-1)
    return np.full(np.shape(n), np.nan)


def _slope_row(r: TrajectoryResult, level: float) -> dict[str, Any]:
    def n(c: dict[str, np.ndarray]) -> np.ndarray:
        return c["tokens"][..., 0]

    def field(name: str) -> Any:
        return lambda c: c["slopes"][..., FIELDS.index(name)]

    def var(c: dict[str, np.ndarray]) -> np.ndarray:
        return field("sum_sq")(c) / n(c) - (field("sum")(c) / n(c)) ** 2

    def sd(c: dict[str, np.ndarray]) -> np.ndarray:
        return np.sqrt(np.maximum(var(c), 0))

    def noise(c: dict[str, np.ndarray]) -> np.ndarray:
        return np.sqrt(_noise_var(r, c))

    row: dict[str, Any] = {"family": r.family, "dataset": r.dataset, "n_sizes": len(r.sizes),
                           "n_chains": r.n_chains, "n_tokens": r.n_tokens, **r.quantiles}  # fmt: skip
    row.update(ratio(r, field("sum"), n, level, "mean", UNBOUNDED))
    jackknife = leave_one_out(r.units) if r.units else None
    row.update(smooth(r, sd, level, "sd", jackknife))
    for name in ("improving", "worsening", "saturated", "flat"):
        row.update(ratio(r, field(name), n, level, name))
    row.update(smooth(r, noise, level, "sd_noise", jackknife))
    row.update(smooth(r, lambda c: np.sqrt(np.maximum(var(c) - _noise_var(r, c), 0)), level, "sd_excess", jackknife))
    row.update(smooth(r, lambda c: sd(c) / noise(c), level, "sd_ratio", jackknife))
    row["noise_source"] = (
        f"seeds ({r.n_chains} runs at {r.seeded_sizes} of {len(r.sizes)} sizes)"
        if r.n_chains > 1
        else f"{r.n_permutations} permutations of the sizes"
        if r.n_permutations
        else "none (two sizes)"
    )
    return finished(row, r)


def slopes_table(results: Sequence[TrajectoryResult], level: float) -> pd.DataFrame:
    """The least-squares slope of log R on log S of every token: its mean, spread and quantiles, the shares
    improving, worsening, saturated (rank 1 at every size) and flat, and the spread noise alone would give."""
    rows = [_slope_row(r, level) if "slopes" in r.point else note_row(r) for r in results]
    return rows_frame(rows, SLOPE_COLUMNS).reindex(columns=list(SLOPE_COLUMNS))


TRANSITION_COLUMNS = ("family", "dataset", "from", "to", "S_from", "S_to", "bin_from", "bin_to",
                      *interval_columns("share"), *interval_columns("conditional"), "note")  # fmt: skip


def transitions_table(results: Sequence[TrajectoryResult], level: float) -> pd.DataFrame:
    """Between consecutive sizes, the share of tokens moving from each log bin of rank to each (`share`), and
    the share of a bin's tokens that move to each (`conditional`, each row of the matrix sums to 1)."""
    rows: list[dict[str, Any]] = []
    nb = len(RANK_BINS)
    for r in results:
        if "transitions" not in r.point or len(r.sizes) < 2:
            rows.append(note_row(r))
            continue
        for j in range(len(r.sizes) - 1):
            for a, b in ((a, b) for a in range(nb) for b in range(nb)):
                cell = lambda c, j=j, a=a, b=b: c["transitions"][..., j, a * nb + b]  # noqa: E731
                row_sum = lambda c, j=j, a=a: c["transitions"][..., j, a * nb : (a + 1) * nb].sum(axis=-1)  # noqa: E731
                row = {"family": r.family, "dataset": r.dataset, "from": r.sizes[j], "to": r.sizes[j + 1],
                       "S_from": r.S[j], "S_to": r.S[j + 1], "bin_from": RANK_BINS[a], "bin_to": RANK_BINS[b]}  # fmt: skip
                row.update(ratio(r, cell, lambda c: c["tokens"][..., 0], level, "share"))
                row.update(ratio(r, cell, row_sum, level, "conditional"))
                rows.append(finished(row, r))
    return rows_frame(rows, TRANSITION_COLUMNS).reindex(columns=list(TRANSITION_COLUMNS))


def build_token_churn(inputs: TableInputs) -> pd.DataFrame:
    """token_churn.csv from its job's inputs (its entry: rankscale.tables.entries.tokens)."""
    return churn_table(inputs.tracked(), **inputs.declared())


def build_token_learning(inputs: TableInputs) -> pd.DataFrame:
    """token_learning.csv from its job's inputs (its entry: rankscale.tables.entries.tokens)."""
    return learning_table(inputs.tracked(), **inputs.declared())


def build_token_slopes(inputs: TableInputs) -> pd.DataFrame:
    """token_slopes.csv from its job's inputs (its entry: rankscale.tables.entries.tokens)."""
    return slopes_table(inputs.tracked(), **inputs.declared())


def build_rank_transitions(inputs: TableInputs) -> pd.DataFrame:
    """rank_transitions.csv from its job's inputs (its entry: rankscale.tables.entries.tokens)."""
    return transitions_table(inputs.tracked(), **inputs.declared())
