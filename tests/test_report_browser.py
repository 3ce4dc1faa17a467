"""The report as a reader sees it: the smoke run's `snakemake --report`, opened in headless Chromium, and the same
report with the landing page of a study of hundreds of models (tests/report_study.py).

Debian's `chromium` driven by Playwright (PyPI), launched from the system's executable: Playwright's own browser
download cannot be fetched here (.ci/browser.sh installs both). Every page the test checks is saved as a
screenshot under its temporary directory, which it prints (`pytest -s`) and records as the test's
`screenshots` property; RANKSCALE_REPORT_SCREENSHOTS=docs also copies the landing page and one figure page there
(docs/outputs.md shows them). Without a browser the tests skip, unless RANKSCALE_REQUIRE_BROWSER=1 (CI).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rankscale.plots import FIGURES
from rankscale.sections import SECTIONS, subcategory
from rankscale.tables import TABLES
from tests.conftest import copy_run, copy_workflow, snakemake, study_figures
from tests.report_study import Study, docutils_messages, write_study

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("RANKSCALE_REQUIRE_BROWSER") == "1"
VIEWPORT = {"width": 1400, "height": 900}


def launch() -> Any:
    """Playwright's Chromium on the system browser, or a skip (a failure where the browser is required)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = "playwright is not installed" if sync_playwright is None else None
    missing = missing or (None if CHROMIUM else "no chromium executable on PATH")
    if missing:
        message = f"{missing}: run .ci/browser.sh (apt-get install chromium; pip install playwright)"
        if REQUIRED:
            pytest.fail(f"RANKSCALE_REQUIRE_BROWSER=1 but {message}")
        pytest.skip(message)
    return sync_playwright


@dataclass
class Reader:
    """One browser page on a report, the errors its scripts logged, and where its screenshots go."""

    page: Any
    shots: Path
    errors: list[str] = field(default_factory=list)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
        self.page.screenshot(path=str(path))
        return path

    def menu(self, label: str) -> None:
        """Click an entry of the left-hand menu (a category or a subcategory) by its exact text."""
        self.page.locator(
            "ul > li > a", has=self.page.locator("span", has_text=re.compile(f"^{re.escape(label)}$"))
        ).click()

    def entries(self) -> list[list[str]]:
        """The label columns of the result list now shown."""
        self.page.locator("table.table-auto tbody tr").first.wait_for()
        return self.page.locator("table.table-auto tbody tr").evaluate_all(
            "rows => rows.map(r => Array.from(r.cells).slice(0, -1).map(c => c.textContent))"
        )

    def open_entry(self, i: int) -> None:
        self.page.locator("table.table-auto tbody tr").nth(i).locator("td").last.locator("a").first.click()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_playwright = launch()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def report(smoke_run: Path) -> Path:
    """The smoke run's report (beside the one tests/test_workflow.py makes, so neither overwrites the other)."""
    path = smoke_run / "results/smoke/report-browser.html"
    # written in place, never moved: other tests copy the shared smoke directory meanwhile (tests/conftest.copy_run)
    report_path = str(path.relative_to(smoke_run))
    result = snakemake(smoke_run, "--cores", "1", "--configfile", "config/smoke.yaml", "--report", report_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_docutils_message(result, path)
    return path


def assert_no_docutils_message(result: Any, report: Path) -> None:
    """Neither `snakemake --report` nor the report it wrote carries a docutils message: each is an ERROR block
    where a caption or the landing page should be ("Undefined substitution referenced", "Line 30 exceeds the
    line-length-limit")."""
    said = docutils_messages(result.stdout + result.stderr)
    assert not said, said
    shown = docutils_messages(report.read_text(errors="replace"))
    assert not shown, shown


@dataclass(frozen=True)
class LargeReport:
    path: Path
    study: Study
    result: Any  # what `snakemake --report` said


@pytest.fixture(scope="module")
def large_report(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> LargeReport:
    """A report whose landing page is that of a study of 202 models on 3 datasets: a copy of the smoke run whose
    tables the landing page reads are a synthetic study's (tests/report_study.py); `--report` writes the landing
    page from them, as it does for any run."""
    work = copy_run(smoke_run, tmp_path_factory.mktemp("large") / "run")
    study = write_study(work / "results/smoke", Study(), manifest=False)  # the run's own manifest stays
    result = snakemake(
        work, "--cores", "1", "--configfile", "config/smoke.yaml", "--report", "results/smoke/report.html"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return LargeReport(work / "results/smoke/report.html", study, result)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report-screenshots")
    print(f"\nreport screenshots: {path}")
    return path


def open_reader(browser: Any, url: str, shots: Path) -> Reader:
    page = browser.new_page(viewport=VIEWPORT)
    reader = Reader(page, shots)
    page.on("pageerror", lambda exc: reader.errors.append(f"page error: {exc}"))
    page.on("console", lambda msg: reader.errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    page.goto(url)
    # the landing page, the line of a report before any run, or docutils' message where either should be
    page.wait_for_selector("#rankscale-landing, #app p strong, .system-message", timeout=30_000)
    return reader


def close_to(shown: str, value: float, digits: int = 3) -> bool:
    """`shown` is `value` at `digits` significant digits (the landing page's precision)."""
    if math.isnan(value):
        return shown == ""
    return float(shown) == pytest.approx(value, rel=0.51 * 10 ** (1 - digits), abs=1e-300)


def numbers(text: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)


def test_landing_page_shows_what_the_run_found_and_what_produced_it(browser, report, shots, smoke_run, request):
    request.node.user_properties.append(("screenshots", str(shots)))
    reader = open_reader(browser, report.as_uri(), shots)
    page = reader.page
    body = page.locator("body").inner_text()
    assert "ENCODING" not in body and "WHOLE" not in body, "Snakemake's docutils parts are back on the landing page"
    # the manifest: its fields by name, with the values of manifest.json
    manifest = json.loads((smoke_run / "results/smoke/manifest.json").read_text())
    rows = page.locator("table.manifest tbody tr").evaluate_all(
        "rows => rows.map(r => [r.cells[0].textContent, r.cells[1].textContent])"
    )
    fields = dict(rows)
    assert {"commit", "configuration digest", "host", "devices", "versions (snakemake's process)"} <= set(fields)
    assert fields["configuration digest"] == manifest["config_digest"]
    assert fields["host"].startswith(manifest["host"]["name"]) and fields["devices"] == "cpu: 6 rank arrays"
    assert f"torch {manifest['versions']['torch']}" in fields["versions (snakemake's process)"]
    for rule, times in manifest["rules"].items():
        assert fields[f"wall time: {rule}"] == f"{times['wall_s']:.1f} s in {times['jobs']} jobs"
    # the headline numbers are the tables'
    tables = smoke_run / "results/smoke/tables"
    fits = pd.read_csv(tables / "powerlaw_fits.csv", dtype={"k": "Int64"})
    contrasts = pd.read_csv(tables / "exponent_contrasts.csv", dtype={"k": "Int64", "versus_k": "Int64"})
    checked = 0
    for (family, dataset), group in fits[fits["n_models"] >= 2].groupby(["family", "dataset"]):
        row = page.locator(f'table.headline tr[data-family="{family}"][data-dataset="{dataset}"]')
        for name, law in (("rbp1", group[(group["metric"] == "neg_log_rbp") & (group["k"] == 1)].iloc[0]),
                          ("ce", group[(group["metric"] == "ce") & group["k"].isna()].iloc[0])):  # fmt: skip
            alpha = numbers(row.locator(f"td.{name}-alpha").inner_text())
            assert [
                close_to(s, law[c]) for s, c in zip(alpha, ("alpha", "alpha_ci_low", "alpha_ci_high"), strict=True)
            ] == [True] * 3
            assert close_to(row.locator(f"td.{name}-r2").inner_text(), law["r2"])
            lof_text = row.locator(f"td.{name}-lof").inner_text()
            shown_lof = numbers(lof_text)
            assert close_to(shown_lof[0], law["lof_q"]) and close_to(shown_lof[1], law["lof_df"])
            if pd.notna(law["lof_p"]):  # under 20 effective documents the lack of fit is not testable: no p
                assert len(shown_lof) == 3 and close_to(shown_lof[2], law["lof_p"], 2)
            else:  # it says so, with the documents' effective number
                assert "not testable" in lof_text and shown_lof[2:] == [f"{law['lof_n_eff']:.1f}", "20"], lof_text
        pair = contrasts[(contrasts["family"] == family) & (contrasts["dataset"] == dataset)
                         & (contrasts["metric"] == "neg_log_rbp") & (contrasts["k"] == 1)
                         & (contrasts["versus"] == "ce") & contrasts["versus_k"].isna()].iloc[0]  # fmt: skip
        shown = numbers(row.locator("td.contrast").inner_text())
        assert [close_to(s, pair[c]) for s, c in zip(shown, ("difference", "ci_low", "ci_high"), strict=True)] == [
            True
        ] * 3
        assert close_to(row.locator("td.contrast-p").inner_text(), pair["p_value"], 2)
        checked += 1
    assert checked == 2  # the ladder on humaneval and on pydoc
    # every model on every dataset: S, RBP_1 and CE with their intervals (metrics.csv)
    metrics = pd.read_csv(tables / "metrics.csv", dtype={"k": "Int64"})
    assert page.locator("table.models tbody tr").count() == metrics["model"].nunique() * metrics["dataset"].nunique()
    for row in metrics[(metrics["metric"] == "rbp") & (metrics["k"] == 1)].itertuples():
        cells = page.locator(f'table.models tr[data-model="{row.model}"][data-dataset="{row.dataset}"]')
        shown = numbers(cells.locator("td.rbp1").inner_text())
        assert [close_to(s, v) for s, v in zip(shown, (row.value, row.ci_low, row.ci_high), strict=True)] == [True] * 3
    # the paper's claims, one row each (paper_claims.csv), with whether each holds
    claims = pd.read_csv(tables / "paper_claims.csv")
    assert page.locator("table.claims tbody tr").count() == len(claims)
    for row in claims.itertuples():
        cells = page.locator(f'table.claims tr[data-claim="{row.claim}"][data-dataset="{row.dataset}"]')
        assert cells.locator("td.holds").inner_text() == row.holds
    # the figures the smoke run leaves out (no checkpoints, no seeds), each with why
    assert page.locator("li.left-out").count() == 3
    print(f"landing page: {reader.shot('landing')}")
    assert not reader.errors, reader.errors


def test_the_landing_page_of_hundreds_of_models_shows_every_row(browser, large_report, shots):
    """The landing page of a study larger than the smoke run opens whole: no docutils message in its place, every
    model on every dataset, every law and every claim."""
    study = large_report.study
    reader = open_reader(browser, large_report.path.as_uri(), shots)
    page = reader.page
    reader.shot("landing-large")
    said = docutils_messages(page.locator("body").inner_text())
    assert not said, said
    page.locator("#rankscale-landing").wait_for()
    assert page.locator("table.models tbody tr").count() == study.rows
    assert page.locator("table.headline tbody tr").count() == study.laws
    assert page.locator("table.claims tbody tr").count() == study.claims
    assert page.locator("li.one-model").count() == study.singles
    last = page.locator('table.models tr[data-model="single1-s0"][data-dataset="legal"]')
    assert last.locator("td").first.inner_text() == "single1"  # the table's last row, whole
    assert not reader.errors, reader.errors
    assert_no_docutils_message(large_report.result, large_report.path)


def test_every_figure_opens_in_paper_order(browser, report, shots):
    drawn = {name: FIGURES[name] for name in study_figures()}  # the smoke run leaves out Figs. 10-12
    reader = open_reader(browser, report.as_uri(), shots)
    reader.menu("Figures")
    listed = reader.page.locator("ul > li > a > span").all_inner_texts()
    expected = [subcategory(s) for s in SECTIONS if any(f.section == s for f in drawn.values())]
    assert listed == expected  # the analyses, in the paper's order
    opened = 0
    for section in expected:
        reader.menu(section)
        in_paper_order = sorted((f for f in drawn.values() if f.subcategory == section), key=paper_order)
        assert reader.entries() == [[f"Fig. {f.number}: {f.title}"] for f in in_paper_order]
        for i, figure in enumerate(in_paper_order):
            reader.open_entry(i)
            image = reader.page.locator("div.p-3 > img")
            image.wait_for()
            assert image.evaluate("img => img.complete && img.naturalWidth") > 0, figure.name
            path = reader.shot(f"figure-{figure.number}")
            if figure.name == "fig3_rbp1":
                copy_for_docs(path, "report-figure.png")
            opened += 1
        reader.page.locator("nav a", has_text=re.compile("^Figures$")).click()
    assert opened == len(drawn)
    assert not reader.errors, reader.errors


def paper_order(figure: Any) -> tuple[int, str]:
    number = re.match(r"(\d+)(.*)", figure.number)
    assert number is not None
    return int(number.group(1)), number.group(2)


def test_every_table_opens_sorts_and_searches(browser, report, shots, smoke_run):
    reader = open_reader(browser, report.as_uri(), shots)
    reader.menu("Tables")
    sections = reader.page.locator("ul > li > a > span").all_inner_texts()
    assert sections == [subcategory(s) for s in SECTIONS if any(t.section == s for t in TABLES.values())]
    opened = 0
    for section in sections:
        reader.menu(section)
        names = sorted(n for n, t in TABLES.items() if subcategory(t.section) == section)
        for i, (entry,) in enumerate(reader.entries()):
            name = names[i]
            csv = pd.read_csv(smoke_run / f"results/smoke/tables/{name}.csv")
            assert entry == f"{name} ({len(csv)} row{'' if len(csv) == 1 else 's'})"
            reader.open_entry(i)
            frame = reader.page.frame_locator("iframe")
            assert frame.locator("h1").inner_text() == name
            assert frame.locator("thead th").all_inner_texts() == list(csv.columns)
            if len(csv):
                assert frame.locator("tbody tr").count() == len(csv)
                first = frame.locator("tbody tr").first.locator("td").all_inner_texts()
                assert first[0] == str(csv.iloc[0, 0])
            else:  # its header, and why it is empty
                assert frame.locator("tbody tr.empty").inner_text().startswith("No rows in this run.")
            reader.shot(f"table-{name}")
            if name == "powerlaw_fits":
                check_sorting_and_search(reader, frame, csv)
            opened += 1
        reader.page.locator("nav a", has_text=re.compile("^Tables$")).click()
    assert opened == len(TABLES)
    assert not reader.errors, reader.errors


def check_sorting_and_search(reader: Reader, frame: Any, csv: pd.DataFrame) -> None:
    """Click alpha's header: rows by alpha, ascending then descending (full precision); search narrows them."""
    header = frame.locator("thead th", has_text=re.compile("^alpha$"))
    column = list(csv.columns).index("alpha")
    values = sorted(csv["alpha"].dropna())
    blank = [math.nan] * int(csv["alpha"].isna().sum())  # fits with a note: no alpha, listed last either way
    for direction, expected in (("ascending", values + blank), ("descending", values[::-1] + blank)):
        header.click()
        assert header.get_attribute("aria-sort") == direction
        cells = frame.locator(f"tbody tr td:nth-child({column + 1})").evaluate_all(
            "cells => cells.map(c => (c.title || c.textContent) === '' ? NaN : Number(c.title || c.textContent))"
        )
        assert cells == pytest.approx(expected, rel=1e-12, nan_ok=True)
        reader.shot(f"table-powerlaw_fits-alpha-{direction}")
    frame.locator("#search").fill("pydoc")
    shown = len(csv[csv.astype(str).apply(lambda r: r.str.contains("pydoc")).any(axis=1)])
    assert frame.locator("#count").inner_text() == f"{shown} of {len(csv)} rows" and 0 < shown < len(csv)
    reader.shot("table-powerlaw_fits-search")


def copy_for_docs(path: Path, name: str) -> None:
    """RANKSCALE_REPORT_SCREENSHOTS=DIR: keep this screenshot as DIR/name (docs/outputs.md shows two)."""
    if target := os.environ.get("RANKSCALE_REPORT_SCREENSHOTS"):
        shutil.copyfile(path, Path(target) / name)


def test_landing_screenshot_for_the_docs(browser, report, shots):
    """The landing page at the size docs/outputs.md shows it (its top: the headline results)."""
    reader = open_reader(browser, report.as_uri(), shots)
    copy_for_docs(reader.shot("landing-top"), "report-landing.png")
    assert not reader.errors, reader.errors


def test_a_report_before_any_run_says_so(tmp_path):
    """Nothing has run: `--report` refuses in one line that says how to make something to report, no traceback
    (an empty report was written before: tests/test_run_report.py has the refusal after a run too)."""
    workdir = copy_workflow(tmp_path / "fresh")
    result = snakemake(workdir, "--cores", "1", "--configfile", "config/smoke.yaml", "--report", "report.html")
    assert result.returncode == 1, result.stderr[-3000:]
    assert "nothing to report: no run of this configuration has succeeded" in result.stderr
    assert "Traceback" not in result.stderr and not (workdir / "report.html").exists()
