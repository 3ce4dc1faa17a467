"""A study the size of a real one, built from known numbers, and reStructuredText rendered as Snakemake's report
renders it: for the landing-page and caption tests (tests/test_report_pages.py) and the browser's
(tests/test_report_browser.py), which need the report's size and docutils' verdict, not a workflow run."""

from __future__ import annotations

import io
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rankscale.layout import RunFiles
from rankscale.manifest import Manifest, RuleTimes, write
from rankscale.tables import write_table
from rankscale.tables.claims import CLAIMS, Value, claims_table


@dataclass(frozen=True)
class Study:
    """The shape of a synthetic study: `families` of `sizes` models each, plus `singles` families of one model,
    all scored on every dataset."""

    families: int = 20
    sizes: int = 10
    singles: int = 2
    datasets: tuple[str, ...] = ("humaneval", "pydoc", "legal")

    @property
    def models(self) -> int:
        return self.families * self.sizes + self.singles

    @property
    def rows(self) -> int:
        """Rows of the landing page's models table: one per model and dataset."""
        return self.models * len(self.datasets)

    @property
    def laws(self) -> int:
        """Rows of its headline table: one per family with a law (two or more sizes) and dataset."""
        return self.families * len(self.datasets)

    @property
    def claims(self) -> int:
        """Rows of its claims table: every claim per family and dataset (not testable for a family of one)."""
        return (self.families + self.singles) * len(self.datasets) * len(CLAIMS)


def _model_frame(study: Study) -> pd.DataFrame:
    """metrics.csv's rows the landing page reads: RBP_1, RBP_10 and CE per model and dataset, with intervals."""
    rng = np.random.default_rng(0)
    rows = []
    families = [(f"family{f:02d}", study.sizes) for f in range(study.families)]
    families += [(f"single{s}", 1) for s in range(study.singles)]
    for family, sizes in families:
        for dataset in study.datasets:
            for i in range(sizes):
                S = int(1e6 * 2.0**i)
                base = {"family": family, "model": f"{family}-s{i}", "dataset": dataset, "S": S,
                        "n_documents": 40 + i, "n_tokens": 20_000}  # fmt: skip
                rbp1 = 0.2 + 0.02 * i + 0.01 * rng.random()
                for metric, k, value in (("rbp", 1, rbp1), ("rbp", 10, 0.5 + 0.01 * i), ("ce", None, 4.0 - 0.1 * i)):
                    width = 0.01 * value * (1 + rng.random())
                    rows.append({**base, "metric": metric, "k": k, "value": value, "ci_low": value - width,
                                 "ci_high": value + width})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["k"] = frame["k"].astype("Int64")
    return frame


def _law(family: str, dataset: str, metric: str, k: int | None, n: int, alpha: float) -> dict:
    one = n < 2
    nan = math.nan
    return {"family": family, "dataset": dataset, "metric": metric, "k": k, "n_models": n,
            "alpha": nan if one else alpha, "alpha_ci_low": nan if one else alpha - 0.01,
            "alpha_ci_high": nan if one else alpha + 0.012, "r2": nan if one else 0.99, "r2_ci_low": nan if one else 0.97,
            "r2_ci_high": nan if one else 0.999, "lof_q": nan if one else 3.2, "lof_df": nan if one else n - 2.0,
            "lof_p": nan if one else 0.52, "noise": "" if one else "documents+sizes",
            "note": "fewer than two sizes: no law" if one else ""}  # fmt: skip


def _fits_frame(study: Study) -> pd.DataFrame:
    """powerlaw_fits.csv's laws of -log RBP_1 and CE per family and dataset (none for a family of one model)."""
    rows = []
    for f in range(study.families + study.singles):
        family, n = (f"family{f:02d}", study.sizes) if f < study.families else (f"single{f - study.families}", 1)
        for dataset in study.datasets:
            rows += [_law(family, dataset, "neg_log_rbp", 1, n, 0.05 + 0.001 * f), _law(family, dataset, "ce", None, n,
                                                                                          0.04 + 0.001 * f)]  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["k"] = frame["k"].astype("Int64")
    return frame


def _contrasts_frame(fits: pd.DataFrame) -> pd.DataFrame:
    """exponent_contrasts.csv's paired differences alpha(-log RBP_1) - alpha(CE), per family and dataset with a law."""
    laws = fits[fits["metric"].eq("neg_log_rbp") & fits["n_models"].ge(2)]
    frame = pd.DataFrame([{"family": r.family, "dataset": r.dataset, "metric": "neg_log_rbp", "k": 1, "versus": "ce",
                           "versus_k": None, "difference": 0.01, "ci_low": -0.005, "ci_high": 0.025, "p_value": 0.21}
                          for r in laws.itertuples()])  # fmt: skip
    frame[["k", "versus_k"]] = frame[["k", "versus_k"]].astype("Int64")
    return frame


def _cross_family_frame(study: Study) -> pd.DataFrame:
    """cross_family.csv: each model of a family of one against family00's laws, on every dataset."""
    rows = [{"family": f"single{s}", "model": f"single{s}-s0", "dataset": dataset, "law_family": "family00",
             "metric": metric, "k": k, "ratio": 1.02, "ratio_ci_low": 0.98, "ratio_ci_high": 1.07, "p_value": 0.3,
             "note": ""}
            for s in range(study.singles) for dataset in study.datasets
            for metric, k in (("ce", None), ("neg_log_rbp", 1))]  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["k"] = frame["k"].astype("Int64")
    return frame


def write_study(out: Path, study: Study, manifest: bool = True) -> Study:
    """The tables the landing page reads, for `study`, in `out` (results/<run>), and a manifest unless told not to
    (a copy of a real run keeps its own)."""
    run = RunFiles(out)
    fits = _fits_frame(study)
    facts = {(f, d): {"vocab_size": 50_000, "growth": Value(0.1, 0.05, 0.15, 100),
                      "rbp1_minus_ce": Value(0.01, -0.005, 0.025, 1)}
             for f, d in fits[["family", "dataset"]].itertuples(index=False)}  # fmt: skip
    frames = {"metrics": _model_frame(study), "powerlaw_fits": fits, "exponent_contrasts": _contrasts_frame(fits),
              "paper_claims": claims_table(fits, facts), "cross_family": _cross_family_frame(study)}  # fmt: skip
    Path(run.tables).mkdir(parents=True, exist_ok=True)
    for name, frame in frames.items():
        write_table(name, frame, run.table(name))
    if manifest:
        rules = {"extract": RuleTimes(study.rows, 12_345.6), "summarize": RuleTimes(study.rows, 678.9)}
        write(Manifest("0" * 40, False, "0123456789abcdef", {"python": "3.11", "torch": "2.13.0"},
                       {"name": "host", "platform": "Linux", "cpus": 2}, {"cuda:0": study.rows},
                       {"torch": ["2.13.0"]}, rules), Path(run.manifest))  # fmt: skip
    return study


# What docutils says of a source it reads: "<string>:30: (ERROR/3) Line 30 exceeds the line-length-limit."
MESSAGE = re.compile(r"\((?:DEBUG|INFO|WARNING|ERROR|SEVERE)/\d\)")
SYSTEM_MESSAGE = "System Message"  # how docutils' HTML shows a message it reports in the page


def snakemake_html(rst: str, **context: object) -> tuple[str, list[str]]:
    """`rst` (a Jinja template, filled in with `context`) as Snakemake's report renders a caption or its landing page
    (snakemake/report/__init__.py: Jinja with trim_blocks and lstrip_blocks, then docutils'
    `publish_parts(text, writer_name="html")` with docutils' default settings), and every message docutils had
    about it, of any level: written to a buffer instead of stderr, which changes what is reported, not how the
    source is read."""
    from docutils.core import publish_parts
    from jinja2 import Environment

    text = Environment(trim_blocks=True, lstrip_blocks=True).from_string(rst).render(**context)
    said = io.StringIO()
    with warnings.catch_warnings():  # Snakemake's call: docutils would have it name `writer=` instead
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        parts = publish_parts(text, writer_name="html", settings_overrides={"warning_stream": said, "report_level": 1})
    return parts["html_body"], [line for line in said.getvalue().splitlines() if line.strip()]


def docutils_messages(text: str) -> list[str]:
    """Each docutils message in `text` (Snakemake's output, a report's HTML), with what surrounds it."""
    found = re.finditer(rf"{MESSAGE.pattern}|{SYSTEM_MESSAGE}", text)
    return [text[max(m.start() - 100, 0) : m.end() + 200] for m in found]
