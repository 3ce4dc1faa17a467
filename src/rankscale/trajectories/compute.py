"""Per-token trajectories across a family's sizes and checkpoints, as per-document counts (docs/science.md,
"Token trajectories").

Every quantity is a share of scored tokens: a count over tokens divided by the token count. Counted per
document (and per document x stratum), its point value is the column sum and its bootstrap replicates are
the same counts weighted by each replicate's document draw (`rankscale.bootstrap.replicate_totals`, the draws
every summary of the dataset uses): the intervals are paired with the family's other numbers.

The size axis follows *chains*: one run per size, in S order. Where a size has several runs (seeds), chain c
takes its c-th run by seed (a size with fewer runs repeats its last), and every count is averaged over the
chains, so the net churn stays exactly the change in the chains' mean RBP_k.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rankscale.trajectories.align import Aligned, TrackedModel

RANK_EDGES = (1, 10, 100, 1000)  # the rank transitions' log bins: 1, 2-10, 11-100, 101-1000, over 1000
RANK_BINS = ("1", "2-10", "11-100", "101-1000", ">1000")
PERMUTATIONS = 5  # permutations of the sizes behind the slopes' noise estimate without seeds
SLOPE_FIELDS = ("sum", "sum_sq", "improving", "worsening", "saturated", "flat", "seed_var")


@dataclass(frozen=True)
class Pair:
    """Two aligned models compared token by token: consecutive checkpoints of a run, or two seeds of a size."""

    axis: str  # "checkpoint" or "seed"
    before: str
    after: str
    size: str  # the run (checkpoints) or the size (seeds) they belong to


@dataclass(frozen=True)
class Chains:
    """The size axis: per size (in S order) its name and S, and per chain the row of its run at each size."""

    sizes: list[str]
    S: list[int]
    rows: np.ndarray  # [chains, sizes] rows of Aligned.ranks

    @property
    def seeded(self) -> int:
        """How many sizes have several runs: the sizes whose chains differ."""
        return int(sum(len(set(self.rows[:, j])) > 1 for j in range(len(self.sizes))))


def _seed_order(m: TrackedModel) -> tuple[bool, int, str]:
    return (m.seed is None, m.seed if m.seed is not None else 0, m.name)


def size_chains(models: Sequence[TrackedModel]) -> Chains:
    """The final models grouped by size, sizes in S order, runs by seed."""
    runs: dict[str, list[int]] = {}
    for i, m in enumerate(models):
        if m.final:
            runs.setdefault(m.replica_of, []).append(i)
    sizes = sorted(runs, key=lambda s: (min(models[i].S for i in runs[s]), s))
    for s in sizes:
        runs[s].sort(key=lambda i: _seed_order(models[i]))
    n = max((len(r) for r in runs.values()), default=0)
    rows = np.array([[runs[s][min(c, len(runs[s]) - 1)] for s in sizes] for c in range(n)], dtype=np.int64)
    return Chains(sizes, [models[runs[s][0]].S for s in sizes], rows.reshape(n, len(sizes)))


def model_pairs(models: Sequence[TrackedModel]) -> list[Pair]:
    """Consecutive checkpoints of each run (by training tokens D, the final model last) and every two seeds of a
    size (the noise floor of per-token flips)."""
    pairs: list[Pair] = []
    by_run: dict[str, list[TrackedModel]] = {}
    for m in models:
        by_run.setdefault(m.size, []).append(m)
    for run in sorted(by_run):
        steps = sorted(by_run[run], key=lambda m: (m.final, m.D if m.D is not None else 0, m.name))
        pairs += [Pair("checkpoint", a.name, b.name, run) for a, b in itertools.pairwise(steps)]
    by_size: dict[str, list[TrackedModel]] = {}
    for m in models:
        if m.final:
            by_size.setdefault(m.replica_of, []).append(m)
    for size in sorted(by_size):
        seeds = sorted(by_size[size], key=_seed_order)
        pairs += [Pair("seed", a.name, b.name, size) for a, b in itertools.combinations(seeds, 2)]
    return pairs


class Walk:
    """One token trajectory pass along the sizes, size by size (memory O(tokens), whatever the number of sizes):
    each token's last size outside the top k, whether it was ever inside, whether it never left once in."""

    def __init__(self, n_tokens: int) -> None:
        self.m = 0
        self.last_miss = np.full(n_tokens, -1, dtype=np.int64)
        self.ever = np.zeros(n_tokens, dtype=bool)
        self.monotone = np.ones(n_tokens, dtype=bool)
        self.first: np.ndarray | None = None
        self.prev: np.ndarray | None = None

    def step(self, hit: np.ndarray) -> None:
        """The next size's hits (inside the top k)."""
        self.last_miss[~hit] = self.m
        self.ever |= hit
        if self.prev is None:
            self.first = hit
        else:
            self.monotone &= ~(self.prev & ~hit)
        self.prev, self.m = hit, self.m + 1

    def codes(self) -> np.ndarray:
        """Per token: j if it entered the top k at size j and stayed at every larger size (0: at every size),
        `sizes` if at none (never), `sizes + 1` if in at some size but out at the largest (unstable)."""
        codes = self.last_miss + 1
        out_at_end = self.last_miss == self.m - 1
        codes[out_at_end] = np.where(self.ever[out_at_end], self.m + 1, self.m)
        return codes


def learning_codes(hit: np.ndarray) -> np.ndarray:
    """`Walk.codes` of hits [sizes, tokens]."""
    path = Walk(hit.shape[1])
    for row in hit:
        path.step(row)
    return path.codes()


def slope_weights(S: Sequence[int]) -> np.ndarray:
    """w with slope = sum_j w_j log R_j: the least-squares slope of log R on log S."""
    x = np.log(np.asarray(S, dtype=np.float64))
    xc = x - x.mean()
    return xc / float(xc @ xc)


def token_slopes(ranks: np.ndarray, rows: Sequence[int], weights: np.ndarray) -> np.ndarray:
    """Per token, sum_j weights_j log R[rows_j] (one size at a time: memory O(tokens))."""
    out = np.zeros(ranks.shape[1])
    for row, w in zip(rows, weights, strict=True):
        out += w * np.log(ranks[row].astype(np.float64))
    return out


def permutations(n: int, seed: int, count: int = PERMUTATIONS) -> list[np.ndarray]:
    """Up to `count` orders of n sizes least correlated with the true one, none with |correlation| above 0.5 (a
    permuted slope keeps that share of each token's true slope; none below 3 sizes: reversing two sizes only flips
    every slope's sign)."""
    if n < 3:
        return []
    rng = np.random.default_rng(seed)
    pool = {tuple(p) for p in (rng.permutation(n) for _ in range(400))} - {tuple(range(n))}
    corr = {p: abs(float(np.corrcoef(np.arange(n), p)[0, 1])) for p in pool}
    ranked = sorted((p for p in pool if corr[p] <= 0.5), key=lambda p: (corr[p], p))
    return [np.array(p) for p in ranked[:count]]


@dataclass(frozen=True)
class Groups:
    """Where per-token values are summed: per document (group 0: every token) and per document x stratum
    (groups 1..: the strata of every kind, in `rankscale.strata.assign`'s order)."""

    row: np.ndarray  # [tokens] each token's document row
    n_rows: int
    strata: np.ndarray  # [tokens, kinds] each token's stratum of each kind (0-based over every kind's strata)
    n_groups: int

    def sum(self, x: np.ndarray) -> np.ndarray:
        """[documents, groups] sums of x."""
        out = np.zeros((self.n_rows, self.n_groups))
        out[:, 0] = np.bincount(self.row, weights=x, minlength=self.n_rows)
        for col in range(self.strata.shape[1]):
            key = self.row * self.n_groups + self.strata[:, col] + 1
            out += np.bincount(key, weights=x, minlength=self.n_rows * self.n_groups).reshape(self.n_rows, -1)
        return out

    def count(self, codes: np.ndarray, n: int) -> np.ndarray:
        """[documents, groups, n]: how many tokens have each code 0..n-1."""
        out = np.zeros((self.n_rows, self.n_groups, n))
        out[:, 0] = np.bincount(self.row * n + codes, minlength=self.n_rows * n).reshape(self.n_rows, n)
        for col in range(self.strata.shape[1]):
            key = (self.row * self.n_groups + self.strata[:, col] + 1) * n + codes
            out += np.bincount(key, minlength=self.n_rows * self.n_groups * n).reshape(self.n_rows, self.n_groups, n)
        return out

    def all(self, x: np.ndarray) -> np.ndarray:
        """[documents] sums of x over every token."""
        return np.bincount(self.row, weights=x, minlength=self.n_rows)


def per_document(aligned: Aligned, groups: Groups, ks: Sequence[int], seed: int) -> dict[str, np.ndarray]:
    """Every count of the analysis, per document (axis 0): the size axis averaged over chains, the pairs, the
    transitions and the slopes. Memory: the aligned ranks plus O(tokens) per count."""
    chains = size_chains(aligned.models)
    n_chains, m = chains.rows.shape
    ranks, g, K = aligned.ranks, groups.n_groups, len(ks)
    out = {"tokens": groups.sum(np.ones(ranks.shape[1]))}
    out["learning"] = np.zeros((groups.n_rows, g, K, m + 2))
    out["rbp"] = np.zeros((groups.n_rows, g, K, m))
    out["gained"] = np.zeros((groups.n_rows, g, K, max(m - 1, 0)))
    out["lost"] = np.zeros_like(out["gained"])
    out["monotone"] = np.zeros((groups.n_rows, g, K))
    out["already"] = np.zeros((groups.n_rows, g, K))
    out["transitions"] = np.zeros((groups.n_rows, max(m - 1, 0), len(RANK_BINS) ** 2))
    for rows in chains.rows:
        for i, k in enumerate(ks):
            path = Walk(ranks.shape[1])
            for j, row in enumerate(rows):
                hit = ranks[row] <= k
                out["rbp"][:, :, i, j] += groups.sum(hit)
                if path.prev is not None:
                    out["gained"][:, :, i, j - 1] += groups.sum(~path.prev & hit)
                    out["lost"][:, :, i, j - 1] += groups.sum(path.prev & ~hit)
                path.step(hit)
            out["learning"][:, :, i] += groups.count(path.codes(), m + 2)
            out["monotone"][:, :, i] += groups.sum(path.monotone)
            out["already"][:, :, i] += groups.sum(path.first & path.prev)
        before = np.searchsorted(np.asarray(RANK_EDGES), ranks[rows[0]], side="left")
        for j in range(m - 1):
            after = np.searchsorted(np.asarray(RANK_EDGES), ranks[rows[j + 1]], side="left")
            key = groups.row * len(RANK_BINS) ** 2 + before * len(RANK_BINS) + after
            before = after
            out["transitions"][:, j] += np.bincount(key, minlength=groups.n_rows * len(RANK_BINS) ** 2).reshape(
                groups.n_rows, -1
            )
    for name in ("learning", "rbp", "gained", "lost", "monotone", "already", "transitions"):
        out[name] /= max(n_chains, 1)
    pairs = model_pairs(aligned.models)
    index = {mod.name: r for r, mod in enumerate(aligned.models)}
    out["pairs"] = np.zeros((groups.n_rows, len(pairs), K, 4))  # in before, in after, gained, lost
    for p, pair in enumerate(pairs):
        for i, k in enumerate(ks):
            a, b = ranks[index[pair.before]] <= k, ranks[index[pair.after]] <= k
            for c, x in enumerate((a, b, ~a & b, a & ~b)):
                out["pairs"][:, p, i, c] = groups.all(x)
    out.update(slope_counts(ranks, chains, groups, seed) if m >= 2 else {})
    return out


def slope_counts(ranks: np.ndarray, chains: Chains, groups: Groups, seed: int) -> dict[str, np.ndarray]:
    """Per document: the slopes' sums (`SLOPE_FIELDS`, averaged over chains; `seed_var`: each token's variance
    of its slope across chains), and per permutation of the sizes the sums of the permuted slopes and squares."""
    weights = slope_weights(chains.S)
    n_chains, m = chains.rows.shape
    fields = np.zeros((groups.n_rows, len(SLOPE_FIELDS)))
    total, total_sq = np.zeros(ranks.shape[1]), np.zeros(ranks.shape[1])
    for rows in chains.rows:
        s = token_slopes(ranks, rows, weights)
        total += s
        total_sq += s * s
        same = np.ones(ranks.shape[1], dtype=bool)
        for row in rows[1:]:
            same &= ranks[row] == ranks[rows[0]]
        saturated = same & (ranks[rows[0]] == 1)
        for c, x in enumerate((s, s * s, (s < 0) & ~same, (s > 0) & ~same, saturated, same & ~saturated)):
            fields[:, c] += groups.all(x)
    fields /= n_chains
    if n_chains > 1:
        fields[:, SLOPE_FIELDS.index("seed_var")] = groups.all((total_sq - total * total / n_chains) / (n_chains - 1))
    orders = permutations(m, seed)
    perm = np.zeros((groups.n_rows, len(orders), 2))
    for q, order in enumerate(orders):
        s = token_slopes(ranks, chains.rows[0], weights[order])
        perm[:, q, 0], perm[:, q, 1] = groups.all(s), groups.all(s * s)
    return {"slopes": fields, "permuted": perm}


def slope_quantiles(aligned: Aligned, levels: Sequence[float]) -> list[float]:
    """Quantiles of the first chain's per-token slopes (its runs of the lowest seeds)."""
    chains = size_chains(aligned.models)
    if chains.rows.shape[1] < 2:
        return [float("nan")] * len(levels)
    s = token_slopes(aligned.ranks, chains.rows[0], slope_weights(chains.S))
    return [float(q) for q in np.quantile(s, levels)]
