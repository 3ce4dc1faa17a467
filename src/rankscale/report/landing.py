"""The report's landing page: what the run found, then the manifest of what produced it.

Snakemake's report opens on the workflow's description (the `report:` directive: Jinja, then reStructuredText).
Its `--report-metadata` cannot carry text (Snakemake 9 renders each string value into its docutils parts,
shown as WHOLE / ENCODING / ERRORS / VERSION blocks), so the landing page is a description of its own: written
beside the manifest when a run succeeds (Snakefile `onsuccess`), from the tables and the manifest, and named by
the `report:` directive (workflow/report/no_results.rst until a run has succeeded). Numbers are shown at three
significant digits; the tables hold every digit.

docutils refuses a source line longer than its `line_length_limit` (10,000 characters) and shows an error in its
place, so the page's raw HTML is written a table row (a list item, a clause) to a line: a line's length is bounded
by what one row says, never by how many models, datasets or laws a study has.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rankscale.atomic import atomic_path
from rankscale.laws.few_documents import MIN_DOCUMENTS
from rankscale.layout import RunFiles
from rankscale.manifest import report_fields
from rankscale.report.heavy_documents import TABLES as HEAVY_TABLES
from rankscale.report.heavy_documents import heavy_documents
from rankscale.tables.base import read_table

ANCHOR = "rankscale-landing"  # the id of the page's root element (its style is scoped to it)

DESCRIPTION = """\
rankscale measures how language models rank the correct next token and how that ranking scales with model size S
(non-embedding parameters), after "Relative-Based Scaling Law for Neural Language Models" (arXiv 2510.20387).
RBP_k is the fraction of scored tokens whose rank is at most k (RBP_1: greedy-decoding accuracy); CE is the
cross-entropy. Each law ``-log RBP_k = C S^-alpha`` (and CE's) is fitted per model family and dataset in
log-log space.
"""

STYLE = f"""
div.items-center:has(#{ANCHOR}) {{ align-items: flex-start; }}
ul > .prose:has(#{ANCHOR}) {{ max-width: 64rem; }}
ul:has(#{ANCHOR}) > li {{ display: inline-block; padding: 0 0.2rem; font-size: 0.85rem; color: #334155; }}
ul:has(#{ANCHOR}) > li.uppercase {{ text-transform: none; font-weight: 600; margin-left: 0.5rem; }}
ul:has(#{ANCHOR}) > li.uppercase::after {{ content: ":"; }}
#{ANCHOR} h2 {{ font-size: 1.15rem; font-weight: 600; margin: 1.2rem 0 0.4rem; }}
#{ANCHOR} table {{ border-collapse: collapse; margin: 0.3rem 0; font-variant-numeric: tabular-nums; }}
#{ANCHOR} th, #{ANCHOR} td {{ border: 1px solid #cbd5e1; padding: 0.2rem 0.5rem; text-align: left;
  vertical-align: top; }}
#{ANCHOR} th {{ background: #f1f5f9; font-weight: 600; }}
#{ANCHOR} td.n {{ text-align: right; white-space: nowrap; }}
#{ANCHOR} .ci {{ color: #475569; font-size: 0.85em; }}
#{ANCHOR} p, #{ANCHOR} li {{ margin: 0.3rem 0; }}
#{ANCHOR} .none {{ font-weight: 600; }}
"""


def shown(value: float, digits: int = 3) -> str:
    """A number as the landing page shows it (the tables hold every digit); blank when missing."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}g}"


@dataclass(frozen=True)
class Estimate:
    """A value with its interval (`low`, `high`; NaN where the table leaves it empty)."""

    value: float
    low: float
    high: float

    def html(self, cls: str) -> str:
        interval = f'<br><span class="ci">[{shown(self.low)}, {shown(self.high)}]</span>'
        return f'<td class="n {cls}">{shown(self.value)}{interval if not math.isnan(self.low) else ""}</td>'


@dataclass(frozen=True)
class Law:
    """One fitted law of powerlaw_fits.csv: its exponent, R² and lack-of-fit test, or why it has none."""

    alpha: Estimate
    r2: float
    lof_q: float
    lof_df: float
    lof_p: float
    lof_n_eff: float  # the documents' effective number that decided whether the lack of fit is testable
    noise: str
    note: str

    @classmethod
    def of(cls, row: pd.Series) -> Law:
        def get(column: str) -> float:
            return float(row[column]) if column in row and not pd.isna(row[column]) else math.nan

        return cls(Estimate(get("alpha"), get("alpha_ci_low"), get("alpha_ci_high")), get("r2"), get("lof_q"),
                   get("lof_df"), get("lof_p"), get("lof_n_eff"), str(row.get("noise") or ""),
                   str(row.get("note") or ""))  # fmt: skip

    def cells(self, name: str) -> str:
        if self.note and self.note != "nan":
            return f'<td colspan="3" class="{name}-note">{html.escape(self.note)}</td>'
        lof = f"Q = {shown(self.lof_q)} on {shown(self.lof_df)} df<br>{self.lof_verdict()}"
        return (self.alpha.html(f"{name}-alpha") + f'<td class="n {name}-r2">{shown(self.r2)}</td>'
                + f'<td class="n {name}-lof">{lof if not math.isnan(self.lof_q) else ""}</td>')  # fmt: skip

    def lof_verdict(self) -> str:
        """The lack of fit's p, or why it has none: under `MIN_DOCUMENTS` effective documents it is not testable."""
        if not math.isnan(self.lof_p):
            return f"p = {shown(self.lof_p, 2)}"
        if self.lof_n_eff < MIN_DOCUMENTS:
            return f"not testable (n_eff {self.lof_n_eff:.1f} &lt; {MIN_DOCUMENTS:g})"
        return "not testable"


@dataclass(frozen=True)
class Headline:
    """One family on one dataset: its laws of -log RBP_1 and CE, and their exponents' paired difference."""

    family: str
    dataset: str
    n_models: int
    rbp1: Law | None
    ce: Law | None
    contrast: Estimate | None
    contrast_p: float

    def row(self) -> str:
        missing = '<td colspan="3">not fitted</td>'
        contrast = (
            self.contrast.html("contrast") + f'<td class="n contrast-p">{shown(self.contrast_p, 2)}</td>'
            if self.contrast is not None
            else '<td colspan="2"></td>'
        )
        return (f'<tr data-family="{html.escape(self.family)}" data-dataset="{html.escape(self.dataset)}">'
                f"<td>{html.escape(self.family)}</td><td>{html.escape(self.dataset)}</td>"
                f'<td class="n">{self.n_models}</td>'
                + (self.rbp1.cells("rbp1") if self.rbp1 else missing) + (self.ce.cells("ce") if self.ce else missing)
                + contrast + "</tr>")  # fmt: skip


def _k_is(frame: pd.DataFrame, k: int | None) -> pd.Series:
    return frame["k"].isna() if k is None else frame["k"].eq(k).fillna(False).astype(bool)


def headlines(fits: pd.DataFrame, contrasts: pd.DataFrame) -> list[Headline]:
    """Per family and dataset with a law (two or more sizes): -log RBP_1's and CE's laws and the paired
    difference of their exponents (exponent_contrasts.csv, -log RBP_1 versus CE)."""
    if fits.empty or "n_models" not in fits:
        return []
    out = []
    for (family, dataset), group in fits.groupby(["family", "dataset"], sort=True):
        if int(group["n_models"].max()) < 2:
            continue  # a family of one model: a line of its own (one_model_lines)
        rbp1 = group[group["metric"].eq("neg_log_rbp") & _k_is(group, 1)]
        ce = group[group["metric"].eq("ce") & _k_is(group, None)]
        contrast, p_value = None, math.nan
        if not contrasts.empty and "versus" in contrasts:
            pair = contrasts[contrasts["family"].eq(family) & contrasts["dataset"].eq(dataset)
                             & contrasts["metric"].eq("neg_log_rbp") & _k_is(contrasts, 1)
                             & contrasts["versus"].eq("ce") & contrasts["versus_k"].isna()]  # fmt: skip
            if len(pair) and not pd.isna(pair["difference"].iloc[0]):
                row = pair.iloc[0]
                contrast = Estimate(float(row["difference"]), float(row["ci_low"]), float(row["ci_high"]))
                p_value = float(row["p_value"])
        out.append(Headline(str(family), str(dataset), int(group["n_models"].max()),
                            Law.of(rbp1.iloc[0]) if len(rbp1) else None, Law.of(ce.iloc[0]) if len(ce) else None,
                            contrast, p_value))  # fmt: skip
    return out


def one_model_lines(cross_family: pd.DataFrame) -> list[str]:
    """One line per family of one model: where its model sits against the other families' laws (observed /
    predicted, with its interval), for cross-entropy and -log RBP_1 on each dataset."""
    if cross_family.empty or "ratio" not in cross_family:
        return []
    lines = []
    for (family, model), rows in cross_family.groupby(["family", "model"], sort=True):
        parts = []
        for row in rows.itertuples(index=False):
            if row.metric not in ("ce", "neg_log_rbp") or (row.metric == "neg_log_rbp" and row.k != 1):
                continue
            what = "CE" if row.metric == "ce" else "−log RBP₁"
            if pd.isna(row.ratio):
                parts.append(f"{row.dataset}, {what}: {getattr(row, 'note', '') or 'no law to compare with'}")
            else:
                parts.append(
                    f"{row.dataset}, {what} against the {row.law_family} law: {shown(row.ratio)} "
                    f"[{shown(row.ratio_ci_low)}, {shown(row.ratio_ci_high)}], p = {shown(row.p_value, 2)}"
                )
        if parts:  # a clause to a line: a study has as many as datasets
            clauses = ";\n".join(html.escape(part) for part in parts)
            lines.append(f"<b>{html.escape(str(family))}</b> (one model, {html.escape(str(model))}): observed / "
                         f"predicted —\n{clauses}")  # fmt: skip
    return lines


@dataclass(frozen=True)
class ModelRow:
    """One model on one dataset, as metrics.csv has it: its size, RBP_1 and CE with their intervals, its documents."""

    family: str
    model: str
    dataset: str
    S: int
    rbp1: Estimate
    ce: Estimate
    n_documents: int

    def row(self) -> str:
        return (f'<tr data-model="{html.escape(self.model)}" data-dataset="{html.escape(self.dataset)}">'
                f"<td>{html.escape(self.family)}</td><td>{html.escape(self.model)}</td>"
                f"<td>{html.escape(self.dataset)}</td><td class=\"n\">{self.S:,}</td>"
                + self.rbp1.html("rbp1") + self.ce.html("ce") + f'<td class="n">{self.n_documents}</td></tr>')  # fmt: skip


def model_rows(metrics: pd.DataFrame) -> list[ModelRow]:
    """Per model and dataset (metrics.csv, in its order: family, dataset, S): RBP_1 and CE with their intervals."""
    if metrics.empty or "metric" not in metrics:
        return []
    rbp1 = metrics[metrics["metric"].eq("rbp") & _k_is(metrics, 1)].set_index(["model", "dataset"])
    ce = metrics[metrics["metric"].eq("ce")].set_index(["model", "dataset"])
    out = []
    for key, row in ce.iterrows():
        if key not in rbp1.index:
            continue
        r = rbp1.loc[key]
        out.append(ModelRow(str(row["family"]), str(key[0]), str(key[1]), int(row["S"]),
                            Estimate(float(r["value"]), float(r["ci_low"]), float(r["ci_high"])),
                            Estimate(float(row["value"]), float(row["ci_low"]), float(row["ci_high"])),
                            int(row["n_documents"])))  # fmt: skip
    return out


def models_html(metrics: pd.DataFrame) -> str:
    """The per-model table: what each law is fitted through."""
    rows = model_rows(metrics)
    if not rows:
        return '<p class="none">No model has been scored.</p>'
    head = ["family", "model", "dataset", "S", "RBP₁", "CE (nats)", "documents"]
    return _table(head, [r.row() for r in rows], "models") + (
        "<p>S: non-embedding parameters; RBP₁: the share of scored tokens the model ranks first; CE: cross-entropy "
        "per token. Every k, bits per byte and more: metrics.csv.</p>"
    )


def claims_html(claims: pd.DataFrame) -> str:
    """The paper's claims against this run (paper_claims.csv): per family and dataset, each claim, its value with
    its interval and whether it holds."""
    if claims.empty or "holds" not in claims:
        return '<p class="none">No claim checked: paper_claims.csv has no rows.</p>'
    rows = []
    for row in claims.itertuples(index=False):
        value = Estimate(float(row.value), float(row.ci_low), float(row.ci_high))
        note = "" if pd.isna(row.note) else str(row.note)
        rows.append(
            f'<tr data-claim="{html.escape(str(row.claim))}" data-family="{html.escape(str(row.family))}" '
            f'data-dataset="{html.escape(str(row.dataset))}"><td>{html.escape(str(row.family))}</td>'
            f"<td>{html.escape(str(row.dataset))}</td><td>{html.escape(str(row.paper))}</td>"
            f'<td class="n">{"" if pd.isna(row.k) else int(row.k)}</td>{value.html("claim-value")}'
            f'<td class="holds">{html.escape(str(row.holds))}</td><td>{html.escape(note)}</td></tr>'
        )
    head = ["family", "dataset", "the paper's claim", "k", "this run", "holds", "note"]
    return _table(head, rows, "claims") + (
        "<p>A claim holds where its whole interval lies on its side of the threshold, fails where it lies wholly "
        "beyond it, and is undecided where the interval straddles it (paper_claims.csv).</p>"
    )


def _table(head: Sequence[str], rows: Sequence[str], cls: str) -> str:
    """A table a row to a line (docutils' line length limit: the module's docstring)."""
    header = f'<table class="{cls}"><thead><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr></thead><tbody>'
    return "\n".join([header, *rows, "</tbody></table>"])


def _read(path: Path) -> pd.DataFrame:
    return read_table(path) if path.is_file() else pd.DataFrame()


def results_html(run: RunFiles, level: float) -> str:
    """The headline results from the run's tables (results/<run>/tables)."""

    def table(name: str) -> pd.DataFrame:
        return _read(Path(run.table(name)))

    found = headlines(table("powerlaw_fits"), table("exponent_contrasts"))
    singles = one_model_lines(table("cross_family"))
    if not found and not singles:
        return '<p class="none">No family has a law yet: every family has fewer than two sizes.</p>'
    noise = sorted({law.noise for h in found for law in (h.rbp1, h.ce) if law and law.noise})
    head = ["family", "dataset", "sizes", "alpha of −log RBP₁", "R²", "lack of fit", "alpha of CE", "R²",
            "lack of fit", "alpha(−log RBP₁) − alpha(CE)", "p"]  # fmt: skip
    parts = [_table(head, [h.row() for h in found], "headline")] if found else []
    parts.append(
        f"<p>Intervals: {level:.0%}, from the bootstrap; they include {', '.join(noise) or 'documents'} "
        "(column <i>noise</i>). Lack of fit: the sizes' residual sum of squares against a sign-flip null "
        "drawn from the documents' own influence on the points (Hotelling's T² where the documents' sums are not "
        f"loaded); under {MIN_DOCUMENTS:g} effective documents it is not testable, whichever test (no p: the cell "
        "gives the documents' effective number n_eff); a small p says the sizes "
        "scatter around the law beyond what documents explain. The contrast is "
        "paired (the same document draws) and its p tests a difference of zero. Every law, k and interval: "
        "Tables, 01. Laws in S (powerlaw_fits, exponent_contrasts).</p>"
    )
    if singles:
        parts.append("<p>Families of one model (no law of their own; cross_family.csv):</p><ul>\n"
                     + "\n".join(f'<li class="one-model">{line}</li>' for line in singles) + "\n</ul>")  # fmt: skip
    return "\n".join(parts)


def heavy_documents_html(run: RunFiles) -> str:
    """A paragraph per dataset of few heavy documents (`rankscale.report.heavy_documents`): which of its numbers the
    tables flag, and why; "" where there is none."""
    found = heavy_documents({name: _read(Path(run.table(name))) for name in HEAVY_TABLES})
    if not found:
        return ""
    return "<h2>Datasets of few heavy documents</h2>\n" + "\n".join(h.html() for h in found) + "\n"


def manifest_html(manifest: Path) -> str:
    """The manifest as a two-column table (rankscale.manifest.report_fields)."""
    rows = [
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in report_fields(manifest).items()
    ]
    return _table(["field", "value"], rows, "manifest")


def left_out_html(left_out: Mapping[str, str]) -> str:
    """The figures this study leaves out (`rankscale.plots.left_out`), each with why."""
    if not left_out:
        return ""
    items = "\n".join(f'<li class="left-out" data-figure="{html.escape(name)}"><b>{html.escape(name)}</b>: '
                      f"{html.escape(why)}</li>" for name, why in sorted(left_out.items()))  # fmt: skip
    return f"<p>Figures left out, as they do not apply to this study:</p><ul>\n{items}\n</ul>\n"


def landing_rst(out: Path, level: float, left_out: Mapping[str, str] | None = None) -> str:
    """The landing page of the run in `out` (results/<run>): reStructuredText for Snakemake's report, whose
    body is raw HTML, kept away from the report's Jinja (`raw` blocks). `left_out`: the figures the study leaves
    out, and why."""
    run = RunFiles(out)
    body = (f'<div id="{ANCHOR}"><style>{STYLE}</style>\n<h2>What this run found ({html.escape(str(out))})</h2>\n'
            f"{results_html(run, level)}\n"
            f"{heavy_documents_html(run)}"
            f"<h2>Models</h2>\n{models_html(_read(Path(run.table('metrics'))))}\n"
            f"<h2>The paper's claims, checked</h2>\n{claims_html(_read(Path(run.table('paper_claims'))))}\n"
            "<p>Figures and tables: Results, in the menu on the left; each grouped by analysis in the paper's order. "
            "A table opens as a page that sorts (click a header) and searches; its columns are described in "
            "docs/outputs.md.</p>\n"
            f"{left_out_html(left_out or {})}"
            f"<h2>What produced it (manifest.json)</h2>\n{manifest_html(Path(run.manifest))}\n</div>")  # fmt: skip
    indented = "\n".join(f"   {line}" if line else "" for line in body.splitlines())
    return "{% raw %}\n" + DESCRIPTION + "\n.. raw:: html\n\n" + indented + "\n\n{% endraw %}\n"


def write_landing(out: Path, level: float, left_out: Mapping[str, str] | None = None) -> bool:
    """Write results/<run>/report/landing.rst unless it already says the same; whether it was written."""
    path = Path(RunFiles(out).landing)
    text = landing_rst(out, level, left_out)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    with atomic_path(path, suffix=".rst") as tmp:
        tmp.write_text(text, encoding="utf-8")
    return True
