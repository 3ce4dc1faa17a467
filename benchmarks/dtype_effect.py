"""What bfloat16 does to the results: the same models scored in float32 and in bfloat16, compared paired.

Two finished workflow runs that differ in `extraction.dtype` alone (config/pretrained.yaml and config/bfloat16.yaml)
score the same weights on the same documents, and the bootstrap draws depend on (seed, dataset, documents) alone
(`rankscale.summary.Resampling`), so replicate b of a model in float32 and in bfloat16 resamples the same documents:
their difference, replicate by replicate, is a paired bootstrap of the dtype's effect. Per model and dataset this
reports Δ RBP_k and Δ CE (bfloat16 − float32) with that paired interval (expanded for few documents as metrics.csv's
are), beside the float32 value's own interval: a Δ wider than that interval moves the result by more than its
noise. It reports the share of scored tokens whose rank changes, and per family Δ alpha of the laws (−log RBP_1,
−log RBP_10, CE) as exponent_contrasts.csv compares two laws of the same models (`exponent_contrast`: the law of
y_bf16 / y_f32, documents and the sizes' scatter), with the documents-only interval beside it.

    python benchmarks/dtype_effect.py --float32 config/pretrained.yaml --bfloat16 config/bfloat16.yaml [--write]

Run from the checkout whose results/ holds both runs (`snakemake --configfile` each first).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from rankscale.bootstrap import interval  # noqa: E402
from rankscale.config import load_yaml, validate  # noqa: E402
from rankscale.laws import FORMS, FitForm, Points  # noqa: E402
from rankscale.laws.few_documents import Documents  # noqa: E402
from rankscale.layout import Layout  # noqa: E402
from rankscale.metrics import METRICS  # noqa: E402
from rankscale.plan import build_plan, layout  # noqa: E402
from rankscale.rankfile import load_rank_arrays  # noqa: E402
from rankscale.summary import Summary, SummaryPaths, load_replicates, load_unit_totals, read_summary  # noqa: E402
from rankscale.tables import Replicates, finals  # noqa: E402
from rankscale.tables.lawkit import exponent_contrast  # noqa: E402
from rankscale.tables.laws import fits_table  # noqa: E402
from rankscale.tables.metrics import metrics_table  # noqa: E402
from rankscale.tables.noise import Noise, law_documents, law_replicates  # noqa: E402

QUANTITIES = (("rbp", 1), ("rbp", 10), ("rbp", 100), ("ce", None))  # per model: RBP_k and CE
LAWS = (("rbp", 1), ("rbp", 10), ("ce", None))  # per family: the laws of -log RBP_1, -log RBP_10 and CE
SECTION = "dtype-effect-cpu"


@dataclass(frozen=True)
class Delta:
    """b − a of one quantity of one model on one dataset, paired over the same document draws, beside a's own
    interval (both percentile intervals of the same replicates, expanded for few documents as metrics.csv's)."""

    a: float
    a_low: float
    a_high: float
    difference: float
    low: float
    high: float

    @property
    def width(self) -> float:
        """The width of a's own interval: how far a result can move within its document noise."""
        return self.a_high - self.a_low

    @property
    def exceeds(self) -> bool:
        """|b − a| is larger than a's own interval: the change is larger than the result's noise."""
        return abs(self.difference) > self.width

    @property
    def excludes_zero(self) -> bool:
        """The paired interval excludes 0: b and a differ beyond the document noise of the difference."""
        return self.low > 0 or self.high < 0


def paired_delta(a: float, b: float, reps_a: np.ndarray, reps_b: np.ndarray, level: float,
                 n_eff: float = math.inf) -> Delta:  # fmt: skip
    """b − a with the percentile interval of its replicate-by-replicate differences (replicate i of both drew the
    same documents), and a's own interval from reps_a; `n_eff`: the documents' effective number (`interval`)."""
    n = min(len(reps_a), len(reps_b))
    a_reps, b_reps = np.asarray(reps_a, dtype=np.float64)[:n], np.asarray(reps_b, dtype=np.float64)[:n]
    low, high = interval(b_reps - a_reps, level, b - a, n_eff=n_eff)
    a_low, a_high = interval(a_reps, level, a, n_eff=n_eff)
    return Delta(a, float(a_low), float(a_high), b - a, float(low), float(high))


@dataclass(frozen=True)
class Run:
    """One finished run's final models (the laws in S use those alone): its validated configuration, file layout,
    summaries and their replicates, and their metrics.csv rows as the workflow's table builder makes them."""

    config: dict
    files: Layout
    summaries: dict[tuple[str, str], Summary]
    replicates: Replicates
    metrics: pd.DataFrame
    missing: list[str]  # summaries not there (left out where `skip_missing`)

    @classmethod
    def of(cls, configfile: Path, root: Path, only: Sequence[str] = (), datasets: Sequence[str] = (),
           skip_missing: bool = False) -> Run:  # fmt: skip
        """`only`, `datasets`: these models and datasets alone (default: every final model, every dataset)."""
        config = validate(load_yaml(configfile))
        plans = build_plan(config, validated=True)
        files = layout(config, plans, [configfile], REPO / "config/config.yaml")
        summaries, totals, units, missing = {}, [], [], []
        for model in (name for name, plan in plans.items() if plan.final and (not only or name in only)):
            for dataset in sorted(d for d in config["datasets"] if not datasets or d in datasets):
                path = root / files.summary(model, dataset)
                if not path.is_file() and skip_missing:
                    missing.append(f"{model} on {dataset}")
                    continue
                if not path.is_file():
                    raise SystemExit(f"{configfile}: no summary {path}: run `snakemake --configfile {configfile}`")
                summary = read_summary(path)
                summaries[(model, dataset)] = summary
                totals.append(load_replicates(summary, SummaryPaths.beside(path)))
                units.append(load_unit_totals(summary, SummaryPaths.beside(path)))
        replicates = Replicates(list(summaries.values()), totals, units)
        level = float(config["analysis"]["bootstrap"]["level"])
        metrics = metrics_table(summaries.values(), replicates, level)
        return cls(config, files, summaries, replicates, metrics, missing)

    @property
    def level(self) -> float:
        return float(self.config["analysis"]["bootstrap"]["level"])

    def setting(self, name: str) -> int:
        return int(self.config["analysis"]["bootstrap"][name])

    def value(self, model: str, dataset: str, name: str, k: int | None) -> float:
        summary = self.summaries[(model, dataset)]
        values = np.atleast_1d(METRICS[name].compute(summary.totals()))
        return float(values[0] if k is None else values[list(summary.k).index(k)])

    def fits(self, form: FitForm) -> pd.DataFrame:
        """powerlaw_fits.csv's rows of the laws compared here, built as the workflow builds them."""
        m = self.metrics
        rows = m[(m["metric"] == "ce") | ((m["metric"] == "rbp") & m["k"].isin([k for n, k in LAWS if n == "rbp"]))]
        return fits_table(rows, form, self.replicates, self.level, self.setting("refits"), self.setting("seed"))


@dataclass(frozen=True)
class ModelRow:
    model: str
    dataset: str
    S: int
    n_tokens: int
    rank_changed: float  # share of scored tokens whose rank differs
    top1_changed: float  # share whose rank-1 status (greedy hit) differs
    deltas: dict[str, Delta]  # by quantity label


def quantity_label(name: str, k: int | None) -> str:
    return "CE" if name == "ce" else f"RBP_{k}"


def compare_models(a: Run, b: Run, root: Path) -> list[ModelRow]:
    """Every model x dataset of both runs: the same scored tokens (checked), their rank changes and paired deltas."""
    rows = []
    for model, dataset in sorted(set(a.summaries) & set(b.summaries)):
        sa, sb = a.summaries[(model, dataset)], b.summaries[(model, dataset)]
        ranks_a, _ = load_rank_arrays(
            root / a.files.ranks(model, dataset), root / a.files.ranks(model, dataset, "json")
        )
        ranks_b, _ = load_rank_arrays(
            root / b.files.ranks(model, dataset), root / b.files.ranks(model, dataset, "json")
        )
        for field in ("doc", "pos", "target"):
            if not np.array_equal(getattr(ranks_a, field), getattr(ranks_b, field)):
                raise SystemExit(f"{model} on {dataset}: the two runs scored different tokens ({field} differs)")
        deltas = {}
        for name, k in QUANTITIES:
            deltas[quantity_label(name, k)] = paired_delta(
                a.value(model, dataset, name, k), b.value(model, dataset, name, k),
                a.replicates.at(model, dataset, name, k), b.replicates.at(model, dataset, name, k),
                a.level, sa.n_eff_documents,
            )  # fmt: skip
        changed = float(np.mean(ranks_a.rank != ranks_b.rank))
        top1 = float(np.mean((ranks_a.rank == 1) != (ranks_b.rank == 1)))
        rows.append(ModelRow(model, dataset, sa.S, sa.n_tokens, changed, top1, deltas))
        assert sb.S == sa.S
    return rows


@dataclass(frozen=True)
class LawDelta:
    """b's exponent minus a's over the same models, with both intervals."""

    difference: float
    low: float  # documents and the sizes' scatter of the ratio law (exponent_contrast)
    high: float
    low_documents: float  # the document draws alone
    high_documents: float
    noise: str


def law_delta(form: FitForm, points: Points, y: tuple[np.ndarray, np.ndarray], reps: tuple[np.ndarray, np.ndarray],
              noise: Noise, keys: Sequence[str], refits: int, level: float,
              documents: tuple[Documents | None, Documents | None] = (None, None)) -> LawDelta:  # fmt: skip
    """alpha(b) − alpha(a) of two laws of the same models (`y` and `reps`: a's then b's, replicates paired), as
    exponent_contrasts.csv compares two laws: `exponent_contrast` of (b, a). Beside it, the same refitted on the
    document draws alone: for the power law, the exponent of y_b / y_a on each replicate."""
    assert form.exponent is not None
    (ya, yb), (ra, rb) = y, reps
    n = min(len(ra), len(rb))
    laws = (form.fit(points, yb), form.fit(points, ya))
    contrast = exponent_contrast(form, points, laws, (yb, ya), (rb[:n], ra[:n]), noise, keys, refits,
                                 (documents[1], documents[0]))  # fmt: skip
    row = contrast.row(level)
    ratio = form.fit(points, yb / ya)
    alone = form.fit_replicates(points, contrast.noise.documents, ratio, refits)[form.exponent]
    low_d, high_d = interval(alone, level, row["difference"])
    return LawDelta(row["difference"], row["ci_low"], row["ci_high"], float(low_d), float(high_d), row["noise"])


@dataclass(frozen=True)
class LawRow:
    family: str
    dataset: str
    law: str
    alpha: float  # a's exponent
    own_low: float  # a's exponent interval, as its powerlaw_fits.csv gives it (documents and sizes)
    own_high: float
    delta: LawDelta


def law_group(run: Run, family: str, dataset: str, name: str, k: int | None) -> pd.DataFrame:
    rows = finals(run.metrics)
    rows = rows[(rows["family"] == family) & (rows["dataset"] == dataset) & (rows["metric"] == name)]
    rows = rows[rows["k"].isna()] if k is None else rows[rows["k"] == k]
    return rows.sort_values("S", kind="stable")


def compare_laws(a: Run, b: Run, form: FitForm) -> list[LawRow]:
    """Δ alpha (b − a) of every family's laws with at least three sizes, beside a's exponent interval."""
    assert form.exponent is not None
    e = form.exponent
    fits = a.fits(form)
    refits, seed = a.setting("refits"), a.setting("seed")
    out = []
    for (family, dataset), _ in finals(a.metrics).groupby(["family", "dataset"], sort=True):
        for name, k in LAWS:
            ga, gb = law_group(a, family, dataset, name, k), law_group(b, family, dataset, name, k)
            if len(ga) < 3 or list(ga["model"]) != list(gb["model"]):
                continue
            points = Points.of(ga["S"].to_numpy(dtype=np.float64))
            ya, yb = (METRICS[name].to_law(g["value"].to_numpy(dtype=np.float64)) for g in (ga, gb))
            reps = (law_replicates(ga, a.replicates), law_replicates(gb, b.replicates))
            noise = Noise.of(ga, min(len(r) for r in reps), seed)  # the same models: the same seed draws
            documents = (law_documents(ga, a.replicates), law_documents(gb, b.replicates))
            delta = law_delta(form, points, (ya, yb), reps, noise, (family, dataset), refits, a.level, documents)
            own = fits[
                (fits["family"] == family) & (fits["dataset"] == dataset) & (fits["metric"] == METRICS[name].law)
            ]
            own = own[own["k"].isna()] if k is None else own[own["k"] == k]
            out.append(LawRow(family, dataset, f"-log RBP_{k}" if k else "CE", float(form.fit(points, ya).row()[e]),
                              float(own[f"{e}_ci_low"].iloc[0]), float(own[f"{e}_ci_high"].iloc[0]), delta))  # fmt: skip
    return out


def fmt(x: float, digits: int = 4) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.{digits}f}"


def model_table(rows: Sequence[ModelRow]) -> str:
    lines = ["| model | dataset | quantity | float32 [95% CI] | Δ bf16 − f32 [paired 95% CI] | abs(Δ) / f32 CI width | "
             "Δ > f32 CI width | paired CI excludes 0 |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        for label, d in r.deltas.items():
            ratio = abs(d.difference) / d.width if d.width > 0 else math.inf
            lines.append(f"| {r.model} | {r.dataset} | {label} | {fmt(d.a)} [{fmt(d.a_low)}, {fmt(d.a_high)}] | "
                         f"{d.difference:+.5f} [{d.low:+.5f}, {d.high:+.5f}] | {ratio:.2f} | "
                         f"{'**yes**' if d.exceeds else 'no'} | {'yes' if d.excludes_zero else 'no'} |")  # fmt: skip
    return "\n".join(lines)


def ranks_table(rows: Sequence[ModelRow]) -> str:
    lines = [
        "| model | S | dataset | scored tokens | ranks changed | rank-1 status changed |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.S:,} | {r.dataset} | {r.n_tokens:,} | {r.rank_changed:.1%} | {r.top1_changed:.2%} |"
        )
    return "\n".join(lines)


def laws_table(rows: Sequence[LawRow]) -> str:
    lines = ["| family | dataset | law | alpha f32 [95% CI, powerlaw_fits] | Δ alpha bf16 − f32 | "
             "95% CI (documents + sizes) | 95% CI (documents) | abs(Δ) / f32 CI width |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        d, width = r.delta, r.own_high - r.own_low
        lines.append(f"| {r.family} | {r.dataset} | {r.law} | {fmt(r.alpha)} [{fmt(r.own_low)}, {fmt(r.own_high)}] | "
                     f"{d.difference:+.5f} | [{d.low:+.5f}, {d.high:+.5f}] | [{d.low_documents:+.5f}, "
                     f"{d.high_documents:+.5f}] | {abs(d.difference) / width:.3f} |")  # fmt: skip
    return "\n".join(lines)


def report(models: Sequence[ModelRow], laws: Sequence[LawRow], a: Path, b: Path, missing: Sequence[str]) -> str:
    left_out = f" Not compared (a run's summary missing: `--skip-missing`): {', '.join(missing)}." if missing else ""
    deltas = [d for r in models for d in r.deltas.values()]
    over = sum(d.exceeds for d in deltas)
    significant = sum(d.excludes_zero for d in deltas)
    return (
        f"Each model scored by two workflow runs that differ in `extraction.dtype` alone: `{a}` (float32) and `{b}` "
        "(bfloat16 weights and activations, float32 head: `head_dtype: float32`, the default). The same documents, "
        "the same bootstrap draws (B from `analysis.bootstrap`), so each Δ's interval is the percentile interval of "
        "its replicate-by-replicate differences (paired), expanded for few documents as metrics.csv's are; the "
        f"float32 value's own interval is metrics.csv's.{left_out}\n\n"
        f"**Per model.** {over} of {len(deltas)} deltas are larger than the float32 value's own interval; "
        f"{significant} of {len(deltas)} paired intervals exclude 0.\n\n"
        f"{model_table(models)}\n\n**Ranks that change.**\n\n{ranks_table(models)}\n\n"
        "**Laws** (final models, power law; Δ alpha's interval as exponent_contrasts.csv's: the law of "
        "y_bf16 / y_f32 on the paired replicates, with its own scatter of sizes, beside the document draws alone).\n\n"
        f"{laws_table(laws)}\n"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--float32", type=Path, required=True, help="the float32 run's configuration file")
    p.add_argument("--bfloat16", type=Path, required=True, help="the bfloat16 run's configuration file")
    p.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout that holds both runs' results")
    p.add_argument("--models", nargs="*", default=[], help="compare these models alone (default: every final model)")
    p.add_argument("--datasets", nargs="*", default=[], help="these datasets alone (default: every dataset)")
    p.add_argument(
        "--skip-missing", action="store_true", help="leave out what either run has not summarized, saying so"
    )
    p.add_argument("--write", action="store_true", help="replace this module's section of benchmarks/RESULTS.md")
    args = p.parse_args(argv)
    started, load = time.perf_counter(), os.getloadavg()[0]
    a, b = (Run.of(c, args.root, args.models, args.datasets, args.skip_missing) for c in (args.float32, args.bfloat16))
    form = FORMS[a.config["analysis"]["law_form"]]
    missing = sorted(set(a.missing) | set(b.missing))
    body = report(compare_models(a, b, args.root), compare_laws(a, b, form), args.float32, args.bfloat16, missing)

    import harness  # the machine facts and the RESULTS.md writer every benchmark shares
    import torch

    facts = harness.machine_facts(torch.device("cpu"))
    text = (f"## bfloat16 against float32 on the CPU\n\n{body}\nMachine (both runs' extraction): "
            f"{'; '.join(f'{k} {v}' for k, v in facts.items())}. Load average (1 min) {load:.1f}; this comparison took "
            f"{time.perf_counter() - started:.0f} s; {time.strftime('%Y-%m-%d %H:%M')}, commit {harness.commit()}.\n\n"
            f"```bash\nsnakemake --cores 2 --configfile {args.float32}\nsnakemake --cores 2 --configfile {args.bfloat16}\n"
            f"{harness.command_line('dtype_effect', list(sys.argv[1:] if argv is None else argv))}\n```")  # fmt: skip
    print(text, flush=True)
    if args.write:
        harness.write_section(harness.RESULTS, SECTION, text)


if __name__ == "__main__":
    main()
