"""Aggregation: from rank arrays of 10^6 tokens per model to the tables and fits, with and without the bootstrap.

Six synthetic models x 10^6 tokens (|V| = 50,277, Pythia's vocabulary; ranks drawn from a discrete
lognormal whose mu falls with size, ~2000 documents each; token kinds drawn at random per vocabulary id, the
default's 128-token windows), the analysis settings the workflow runs
config/config.yaml with (`rankscale.plan.summary_settings` and `table_settings`: the same k grid). Each entry of `STEPS` is timed, rounds interleaved:
`summarize` per model without the bootstrap (replicates 0) and with it (B = 1000 replicate totals,
200 replicate rank histograms), then every table of `rankscale.tables.TABLES` from the
bootstrapped summaries. Targets: one model's 10^6 tokens summarized plus every table in under
2 s without the bootstrap; the bootstrap (B = 1000) for all six models plus every table in under 10 s.

To time another step (e.g. a bootstrap), add a `Step` to `STEPS`: its `run(data, model)` does one
call (per model, or once with model None) and may leave results in `data` for later steps.

    python benchmarks/aggregation.py [--tokens 1000000] [--models 6]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import harness
import numpy as np
import yaml

from rankscale.config import validate
from rankscale.lognormal import sample_discrete_lognormal
from rankscale.plan import summary_settings, table_settings
from rankscale.rankfile import RankArrays
from rankscale.statistics import Totals
from rankscale.summary import ModelInfo, Resampling, Summary, SummarySettings, summarize
from rankscale.tables import TABLES, Replicates, TableSettings, build_table
from rankscale.token_kinds import KINDS
from rankscale.windows import WindowSpec

VOCAB = 50277


@dataclass
class Data:
    """The synthetic rank arrays and what the steps computed from them."""

    arrays: list[RankArrays]
    metas: list[dict[str, Any]]
    config: dict[str, Any]  # validated: every default filled in
    kinds: np.ndarray  # a token kind per vocabulary id (the `kind` stratum), drawn at random
    summaries: dict[int, Summary] = field(default_factory=dict)
    replicates: dict[int, Totals] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)

    @property
    def settings(self) -> SummarySettings:
        return SummarySettings.from_params(summary_settings(self.config))

    @property
    def windows(self) -> WindowSpec:
        """The default's windows (the `context` stratum)."""
        extraction = self.config["extraction"]
        return WindowSpec(extraction["max_length"], extraction["stride"], extraction["max_windows_per_doc"])

    def info(self, i: int) -> ModelInfo:
        return ModelInfo("synthetic", None, f"m{i}", True, None, f"m{i}")

    def resampling(self, i: int, replicates: int) -> Resampling:
        n_docs = int(self.arrays[i].doc.max()) + 1
        return Resampling(np.arange(n_docs), n_docs, replicates, 0, "synthetic")


@dataclass(frozen=True)
class Step:
    name: str
    label: str  # the row of the results table
    run: Callable[[Data, int | None], Any]
    per_model: bool = False  # timed once per model (reported best / worst), else once over all
    in_total: bool = True  # counts towards the headline time (per-model steps: the worst model)


def _summarize_without_bootstrap(data: Data, i: int | None) -> None:
    assert i is not None
    settings = replace(data.settings, replicates=0, distribution_replicates=0)
    summarize(data.arrays[i], data.metas[i], settings, data.resampling(i, 0), data.info(i), data.windows, data.kinds)


def _summarize(data: Data, i: int | None) -> None:
    assert i is not None
    settings = data.settings
    resampling = data.resampling(i, settings.replicates)
    summary, _, boot = summarize(data.arrays[i], data.metas[i], settings, resampling, data.info(i), data.windows,
                                 data.kinds)  # fmt: skip
    data.summaries[i] = summary
    data.replicates[i] = Totals({name[4:]: v for name, v in boot.items() if name.startswith("rep_")})


def _table(name: str) -> Callable[[Data, int | None], None]:
    def run(data: Data, _: int | None) -> None:
        settings = TableSettings.from_params(table_settings(data.config, name))
        order = sorted(data.summaries)
        summaries = [data.summaries[i] for i in order]
        replicates = Replicates(summaries, [data.replicates[i] for i in order])
        data.tables[name] = build_table(name, summaries, data.tables, settings, replicates)

    return run


def _table_order() -> list[str]:
    """Every table of rankscale.tables.TABLES, each after the tables it needs."""
    done: list[str] = []
    while len(done) < len(TABLES):
        ready = [n for n, t in TABLES.items() if n not in done and set(t.needs) <= set(done)]
        if not ready:
            raise ValueError(f"tables whose needs are never met: {sorted(set(TABLES) - set(done))}")
        done.append(ready[0])
    return done


STEPS: list[Step] = [
    Step(
        "summarize-point",
        "`summarize` without the bootstrap (histogram, totals on the k grid, runs, lognormal and alternative fits)",
        _summarize_without_bootstrap,
        per_model=True,
        in_total=False,
    ),
    Step(
        "summarize",
        "`summarize` with the bootstrap (B = 1000 replicate totals, 200 replicate histograms)",
        _summarize,
        per_model=True,
    ),
    *(Step(name, f"table `{name}` over every model (`build_table`)", _table(name)) for name in _table_order()),
]


def synthetic(n: int, mu: float, sigma: float, n_docs: int, seed: int) -> RankArrays:
    """Lognormal ranks, log-probs falling with log rank, ~n_docs documents."""
    rng = np.random.default_rng(seed)
    rank = sample_discrete_lognormal(mu, sigma, VOCAB, n, seed=seed).astype(np.uint32)
    logprob = -(0.9 * np.log(rank) + rng.exponential(0.3, n)).astype(np.float32)
    lengths = rng.multinomial(n, np.full(n_docs, 1 / n_docs))
    doc = np.repeat(np.arange(n_docs), lengths).astype(np.uint32)
    pos = (np.arange(n) - np.repeat(np.cumsum(lengths) - lengths, lengths) + 1).astype(np.uint32)
    target = rng.integers(0, VOCAB, n).astype(np.uint32)
    return RankArrays(rank=rank, logprob=logprob, doc=doc, pos=pos, target=target)


def build(tokens: int, models: int) -> Data:
    config = validate(yaml.safe_load((harness.REPO / "config" / "config.yaml").read_text()))
    sizes = np.logspace(7, 10, models)
    arrays = [synthetic(tokens, 3.0 - 0.3 * i, 2.6 - 0.05 * i, 2000, i) for i in range(models)]
    metas = [
        {"vocab_size": VOCAB, "model": f"m{i}", "dataset": "synthetic", "S": int(s), "ties": "ge", "sha256": "0" * 64}
        for i, s in enumerate(sizes)
    ]
    kinds = np.random.default_rng(0).integers(0, len(KINDS), VOCAB).astype(np.uint8)
    return Data(arrays, metas, config, kinds)


def main(argv: list[str] | None = None) -> str:
    p = harness.parser(__doc__)
    p.add_argument("--tokens", type=int, default=10**6, help="scored tokens per synthetic model")
    p.add_argument("--models", type=int, default=6)
    b = harness.start("aggregation", p, argv)
    a = b.args
    if a.quick:
        a.tokens, a.models, a.repeats = 10**5, 3, 1
    data = build(a.tokens, a.models)
    calls: dict[str, Callable[[], Any]] = {}
    for step in STEPS:
        for i in range(a.models) if step.per_model else [None]:
            calls[f"{step.name} {i}" if step.per_model else step.name] = lambda s=step, i=i: s.run(data, i)
    times, _ = harness.interleave(calls, a.repeats, b.device, a.quiet_wait)
    rows, best = [], {}
    for step in STEPS:
        if step.per_model:
            best[step.name] = [times[f"{step.name} {i}"].best for i in range(a.models)]
            rows.append(
                f"| {step.label}, {a.tokens:,} tokens: best / worst model | {min(best[step.name]):.3f} / {max(best[step.name]):.3f} |"
            )
        else:
            best[step.name] = [times[step.name].best]
            rows.append(f"| {step.label} | {times[step.name].best:.3f} |")
    tables = sum(sum(best[step.name]) for step in STEPS if not step.per_model)
    point = max(best["summarize-point"]) + tables
    bootstrap = sum(w - p for w, p in zip(best["summarize"], best["summarize-point"], strict=True)) + tables
    everything = sum(best["summarize"]) + tables
    fits = data.tables["powerlaw_fits"]
    k1 = fits[(fits["metric"] == "neg_log_rbp") & (fits["k"] == 1)].iloc[0]
    lines = [
        f"{a.models} synthetic models × {a.tokens:,} tokens, |V| = {VOCAB:,}, ranks from `sample_discrete_lognormal`, "
        f"~2000 documents each; analysis settings of config/config.yaml. {len(fits)} fit rows (k = 1: alpha = "
        f"{k1['alpha']:.3f} [{k1['alpha_ci_low']:.3f}, {k1['alpha_ci_high']:.3f}], R² = {k1['r2']:.3f}). Seconds, "
        f"best of {a.repeats} interleaved rounds after a warm-up.",
        "",
        "| step | seconds |",
        "|---|---|",
        *rows,
        f"| **one model's tokens summarized without the bootstrap + every table** | **{point:.2f}** |",
        f"| **the bootstrap of all {a.models} models (with - without) + every table** | **{bootstrap:.2f}** |",
        f"| all {a.models} summaries with the bootstrap + every table | {everything:.2f} |",
        "",
        f"**Targets**: < 2 s without the bootstrap: {point:.2f} s ({'met' if point < 2 else 'missed'}); "
        f"B = 1000 for {a.models} models and every table < 10 s: {bootstrap:.2f} s ({'met' if bootstrap < 10 else 'missed'}).",
    ]
    return b.finish(
        b.section("aggregation"), f"Aggregation and fits for {a.tokens:,} tokens per model", "\n".join(lines)
    )


if __name__ == "__main__":
    main()
