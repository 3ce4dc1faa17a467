"""What the report is made of, without a browser: table pages, the landing page's numbers, the figure registry's
places in the report (tests/test_report_browser.py opens the real report)."""

from __future__ import annotations

import html
import math
import re
from types import SimpleNamespace

import pandas as pd
import pytest

from rankscale.manifest import report_totals
from rankscale.plots import FIGURES
from rankscale.report.captions import LITERAL
from rankscale.report.captions import rst as caption_rst
from rankscale.report.landing import Law, headlines, landing_rst, one_model_lines
from rankscale.report.pages import empty_reason, number, page
from rankscale.sections import SECTIONS, subcategory
from rankscale.tables import TABLES
from tests.conftest import REPO
from tests.report_study import SYSTEM_MESSAGE, Study, snakemake_html, write_study


def test_numbers_are_shown_at_four_digits_and_keep_the_rest() -> None:
    assert number(0.018117179116946314).text == "0.01812"
    assert float(number(0.018117179116946314).full) == 0.018117179116946314
    assert number(0.25) == number(0.25).__class__("0.25", None)  # nothing rounded away: no tooltip
    assert number(3.3061129321697453e-68).text == "3.306e-68"
    assert number(math.nan).text == "" and number(math.inf).text == "inf"


def test_a_page_holds_every_row_and_an_empty_table_says_why() -> None:
    frame = pd.DataFrame({"family": ["a", "b"], "k": pd.array([1, None], dtype="Int64"), "alpha": [0.123456, 2.0]})
    html = page("t", frame, "Caption with ``code``.", "results/x/tables/t.csv")
    assert html.count("<tr>") == 3  # the header and two rows
    assert '<td class="num" title="0.123456">0.1235</td>' in html and '<td class="num">2</td>' in html
    assert "<code>code</code>" in html and "<script" in html and "http" not in html  # offline: no CDN
    caption = TABLES["cross_family"].caption
    empty = page("cross_family", pd.DataFrame(columns=["family", "model"]), caption, "x.csv")
    assert '<th scope="col" tabindex="0">model</th>' in empty
    assert "No rows in this run. Empty when every family has two or more sizes." in empty
    assert empty_reason("No such sentence.") == "No rows in this run."


def test_figures_list_by_analysis_in_paper_order() -> None:
    names = [subcategory(s) for s in SECTIONS]
    assert sorted(names, key=str.casefold) == names  # the report sorts subcategories by name
    for section in SECTIONS:
        entries = [f for f in FIGURES.values() if f.section == section]
        labels = [f.labels()["figure"] for f in entries]
        by_number = sorted(entries, key=lambda f: (int(re.match(r"\d+", f.number).group()), f.number))
        assert sorted(labels, key=str.casefold) == [f.labels()["figure"] for f in by_number], section
    # Snakemake expands braces in a report's labels and subcategories as wildcards
    assert not any(re.search(r"[{}]", f.labels()["figure"] + f.subcategory) for f in FIGURES.values())
    assert {t.section for t in TABLES.values()} <= set(SECTIONS)
    with pytest.raises(KeyError, match="not a report section"):
        subcategory("Elsewhere")


def fits_row(family: str, dataset: str, metric: str, k: int | None, alpha: float, n: int = 3, note: str = "") -> dict:
    return {"family": family, "dataset": dataset, "metric": metric, "k": k, "n_models": n, "alpha": alpha,
            "alpha_ci_low": alpha - 0.01, "alpha_ci_high": alpha + 0.02, "r2": 0.9, "lof_q": 4.0, "lof_df": 1.0,
            "lof_p": 0.045, "noise": "documents+sizes", "note": note}  # fmt: skip


def test_a_law_under_the_floor_says_it_is_not_testable() -> None:
    """pydoc's laws (6.6 effective documents) have Q and no p: the cell says why, with n_eff, instead of "p = "."""
    pydoc = Law.of(pd.Series({**fits_row("f", "pydoc", "ce", None, 0.04), "lof_p": math.nan, "lof_n_eff": 6.5722}))
    cell = pydoc.cells("ce")
    assert "Q = 4 on 1 df<br>not testable (n_eff 6.6 &lt; 20)" in cell and "p =" not in cell
    tested = Law.of(pd.Series({**fits_row("f", "humaneval", "ce", None, 0.04), "lof_n_eff": 132.4}))
    assert "Q = 4 on 1 df<br>p = 0.045" in tested.cells("ce")
    assert Law.of(pd.Series(fits_row("f", "d", "ce", None, 0.04, note="x") | {"lof_p": math.nan})).lof_verdict() == (
        "not testable"  # a table from before the column: no n_eff to give
    )


def test_headlines_are_the_tables_rows() -> None:
    fits = pd.DataFrame([fits_row("f", "d", "neg_log_rbp", 1, 0.05), fits_row("f", "d", "neg_log_rbp", 10, 0.9),
                         fits_row("f", "d", "ce", None, 0.04), fits_row("one", "d", "ce", None, math.nan, n=1,
                                                                         note="fewer than two sizes")])  # fmt: skip
    fits["k"] = fits["k"].astype("Int64")
    contrasts = pd.DataFrame([{"family": "f", "dataset": "d", "metric": "neg_log_rbp", "k": 1, "versus": "ce",
                               "versus_k": None, "difference": 0.01, "ci_low": -0.02, "ci_high": 0.03, "p_value": 0.5}])  # fmt: skip
    contrasts[["k", "versus_k"]] = contrasts[["k", "versus_k"]].astype("Int64")
    [found] = headlines(fits, contrasts)  # the family of one model has no law: not a headline row
    assert (found.family, found.n_models) == ("f", 3)
    assert found.rbp1.alpha.value == 0.05 and found.ce.alpha.value == 0.04  # k = 1, not k = 10
    assert found.contrast.value == 0.01 and found.contrast_p == 0.5
    cross = pd.DataFrame([{"family": "one", "model": "m", "dataset": "d", "law_family": "f", "metric": "ce", "k": None,
                           "ratio": 1.0234, "ratio_ci_low": 0.99, "ratio_ci_high": 1.05, "p_value": 0.2}])  # fmt: skip
    [line] = one_model_lines(cross)
    assert "one" in line and "1.02 [0.99, 1.05]" in line and "against the f law" in line


def test_landing_before_and_after_a_run(tmp_path) -> None:
    assert report_totals(tmp_path / "manifest.json") == {}
    text = landing_rst(tmp_path, 0.95)  # no tables, no manifest: says so, does not fail
    assert "No family has a law yet" in text and "does not exist yet" in text
    assert text.startswith("{% raw %}") and text.rstrip().endswith("{% endraw %}")  # the report's Jinja leaves it


def test_landing_lists_models_claims_and_the_figures_left_out(tmp_path) -> None:
    (tmp_path / "tables").mkdir()
    base = {"family": "f", "dataset": "d", "n_documents": 40}
    metrics = pd.DataFrame(
        [{**base, "model": "small", "S": 1000, "metric": "rbp", "k": 1, "value": 0.1, "ci_low": 0.09, "ci_high": 0.11},
         {**base, "model": "small", "S": 1000, "metric": "rbp", "k": 10, "value": 0.4, "ci_low": 0.3, "ci_high": 0.5},
         {**base, "model": "small", "S": 1000, "metric": "ce", "k": None, "value": 5.5, "ci_low": 5.4, "ci_high": 5.6},
         {**base, "model": "big", "S": 123456, "metric": "rbp", "k": 1, "value": 0.2, "ci_low": 0.19, "ci_high": 0.21},
         {**base, "model": "big", "S": 123456, "metric": "ce", "k": None, "value": 5.1, "ci_low": 5.0, "ci_high": 5.2}]
    )  # fmt: skip
    metrics.to_csv(tmp_path / "tables/metrics.csv", index=False)
    claims = pd.DataFrame([{"family": "f", "dataset": "d", "claim": "r2_k1", "paper": "R² ≈ 0.99 at k = 1", "k": 1,
                            "value": 0.995, "ci_low": 0.985, "ci_high": 0.999, "holds": "yes", "note": ""}])  # fmt: skip
    claims.to_csv(tmp_path / "tables/paper_claims.csv", index=False)
    text = landing_rst(tmp_path, 0.95, {"fig12_seeds": "no size was trained with more than one seed"})
    small = text[text.index('data-model="small"') : text.index("</tr>", text.index('data-model="small"'))]
    assert "1,000" in small and "0.1<br>" in small and "[0.09, 0.11]" in small and "5.5<br>" in small
    assert ">40<" in small  # its documents
    big = text[text.index('data-model="big"') :]
    assert "123,456" in big and "[0.19, 0.21]" in big
    row = text[text.index('data-claim="r2_k1"') :]
    assert "0.995" in row and "[0.985, 0.999]" in row and '<td class="holds">yes</td>' in row
    assert 'data-figure="fig12_seeds"' in text and "no size was trained with more than one seed" in text


def shown_text(body: str) -> str:
    """What a reader sees of rendered HTML: its text, entities decoded, whitespace runs one space."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", body)).split())


def as_plain_text(caption: str) -> str:
    """A caption as it should read: its words, ``literal`` spans without their backquotes."""
    return " ".join(LITERAL.sub(r"\1", caption).split())


def report_caption(kind: str, caption: str) -> tuple[str, list[str]]:
    """`caption` through the report's caption template of a table or figure (workflow/report/<kind>.rst), with the
    params the rules give it (workflow/rules/analysis.smk, figures.smk), as Snakemake's report renders it."""
    template = (REPO / f"workflow/report/{kind}.rst").read_text()
    params = SimpleNamespace(caption=caption, report_caption=caption_rst(caption))
    return snakemake_html(template, snakemake=SimpleNamespace(params=params))


def test_every_caption_reads_as_itself_in_the_report() -> None:
    """Every table's and figure's caption, rendered as Snakemake's report renders it, draws no docutils message
    (the report showed ERROR blocks for |z0| and |V|, read as substitutions) and shows its own words."""
    checked = 0
    for kind, registry in (("table", TABLES), ("figure", FIGURES)):
        for name, entry in registry.items():
            body, said = report_caption(kind, entry.caption)
            assert not said and SYSTEM_MESSAGE not in body, (name, said)
            assert shown_text(body) == as_plain_text(entry.caption), name
            assert body.count("docutils literal") == len(LITERAL.findall(entry.caption)), name
            checked += 1
    assert checked == len(TABLES) + len(FIGURES)


@pytest.mark.parametrize(
    "caption",
    ["|V| and |z0| > 0.25", "word_ `x` *e* **s** [1]_ :math:`x` _`t`", "- not a list", "1. not a list either",
     ".. not a comment", "text :: and ::", "``k``s, (``k``) and ``a b``", "http://example.org and <x@y.z>",
     "a\n   indented line\n\nand a blank one", "back\\slash \\ and ``lone"],
)  # fmt: skip
def test_a_caption_s_markup_characters_are_text(caption: str) -> None:
    """What a caption may hold reads as written: no substitution, link, emphasis, list, comment, block quote."""
    body, said = report_caption("figure", caption)
    assert not said and SYSTEM_MESSAGE not in body, said
    assert shown_text(body) == as_plain_text(caption)
    # one paragraph of text and literals: no list, definition, link or emphasis
    assert body.count("<p>") == 1 and set(re.findall(r"<(\w+)", body)) <= {"div", "p", "tt", "span"}, body


def test_a_landing_page_of_hundreds_of_models_reads_without_a_docutils_message(tmp_path) -> None:
    """A study of 202 models on 3 datasets: every line of its landing page's source stays far below docutils'
    line length limit (the models table was one line of 11,471 characters in the default run, and the page showed
    "Line 30 exceeds the line-length-limit" instead of itself), and the page renders whole."""
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    out = tmp_path / "results/large"
    study = write_study(out, Study())
    assert study.models >= 200 and len(study.datasets) == 3
    text = landing_rst(out, 0.95, {"fig12_seeds": "no size was trained with more than one seed"})
    limit = get_default_settings(Parser).line_length_limit
    longest = max(text.splitlines(), key=len)
    assert len(longest) < limit / 10, f"{len(longest)} characters: {longest[:200]}"
    body, said = snakemake_html(text)
    assert not said and SYSTEM_MESSAGE not in body, said
    assert body.count("<tr data-model=") == study.rows
    assert body.count("<tr data-claim=") == study.claims
    assert body.count('<li class="one-model">') == study.singles
    assert body.count('<td class="n contrast-p">') == study.laws


def test_a_dataset_of_few_heavy_documents_says_what_it_flags_and_why(tmp_path) -> None:
    """A dataset under 10 effective documents (its fewest over its models) gets a paragraph with its own counts of
    flagged rows, in the run summary and on the landing page; one at 10 or above gets none."""
    from rankscale.report.heavy_documents import HEAVY_DOCUMENTS, heavy_documents
    from rankscale.run_summary import RunSummary

    def metric_rows(dataset: str, n_eff: list[float], reliable: list[bool]) -> list[dict]:
        return [{"family": "f", "model": f"m{i}", "dataset": dataset, "S": 10 * (i + 1), "n_documents": 27 + i,
                 "n_eff_documents": e, "metric": "ce", "k": None, "value": 5.0, "ci_low": 4.9, "ci_high": 5.1,
                 "ci_reliable": r} for i, (e, r) in enumerate(zip(n_eff, reliable, strict=True))]  # fmt: skip

    metrics = pd.DataFrame(metric_rows("few", [12.0, 6.55, 8.0], [True, False, False])
                           + metric_rows("edge", [HEAVY_DOCUMENTS, 40.0], [False, True])
                           + metric_rows("many", [30.0], [True]))  # fmt: skip
    strata = pd.DataFrame({"dataset": ["few"] * 5 + ["many"] * 2, "ci_reliable": [False] * 4 + [True] + [False] * 2})
    fits = pd.DataFrame({"dataset": ["few"] * 4 + ["many"], "alpha": [0.1, 0.2, 0.3, math.nan, 0.1],
                         "lof_p": [math.nan, math.nan, 0.3, math.nan, 0.5]})  # fmt: skip
    [found] = heavy_documents({"metrics": metrics, "strata": strata, "powerlaw_fits": fits})
    assert (found.dataset, found.n_eff, found.n_documents) == ("few", 6.55, 28)  # the model of the fewest
    assert [(f.table, f.flagged, f.rows) for f in found.unreliable] == [("metrics", 2, 3), ("strata", 4, 5)]
    assert (found.untestable.flagged, found.untestable.rows) == (2, 3)  # of the laws with an exponent
    said = found.text()
    assert said.startswith("few: 6.5 effective documents of 28 (under 10: few heavy documents). ")
    assert "2 of 3 in metrics.csv, 4 of 5 in strata.csv" in said and "not testable: 2 of 3 in powerlaw_fits.csv" in said
    assert "covered 88-91%" in said and "Not flagged: the laws' exponent intervals" in said
    assert heavy_documents({"metrics": metrics[metrics["dataset"] != "few"]}) == []
    assert heavy_documents({"metrics": pd.DataFrame({"dataset": ["x"], "value": [1.0]})}) == []  # no documents known

    out = tmp_path / "results/run"
    (out / "tables").mkdir(parents=True)
    for name, frame in (("metrics", metrics), ("strata", strata), ("powerlaw_fits", fits)):
        frame.to_csv(out / f"tables/{name}.csv", index=False)
    summary = RunSummary.of(out, 0.95, [], "snakemake --report x")
    assert [h.dataset for h in summary.heavy] == ["few"] and f"  {said}" in summary.text().splitlines()
    text = landing_rst(out, 0.95)
    assert text.count('class="heavy-documents"') == 1 and 'data-dataset="few"' in text
    assert shown_text(text[text.index('class="heavy-documents"') :].split("</p>")[0]).endswith(
        "Flagged: intervals marked unreliable (ci_reliable False): 2 of 3 in metrics.csv, 4 of 5 in strata.csv; laws "
        "whose lack of fit is not testable: 2 of 3 in powerlaw_fits.csv. Why: " + found.text().split("Why: ")[1]
    )
