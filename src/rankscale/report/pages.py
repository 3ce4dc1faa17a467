"""Each table as a page the report can show: one self-contained HTML file, sortable and searchable offline.

Snakemake's report opens an HTML result in a frame but offers a CSV only as a download, so a reader could not
see a table. The page is made from the CSV as written (the source of truth, at full precision, which keeps its
path): numbers at four significant digits, each cell's full value in its tooltip and behind the sorting; a
table with no rows shows its header and why it is empty. A few lines of plain JavaScript sort and filter: no
library, no network at view time, and twenty tables add little to the report (a data-table library's bundle,
embedded in every page, would add megabytes).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rankscale.atomic import atomic_path
from rankscale.tables.base import read_table

SIGNIFICANT = 4  # digits a number is shown with (the CSV and each cell's tooltip keep all of them)
DOCS = "docs/outputs.md"  # where every table's columns are described

SCRIPT = """
(() => {
  const table = document.querySelector("table.data"), body = table.tBodies[0];
  const rows = Array.from(body.rows).filter((r) => !r.classList.contains("empty"));
  const heads = Array.from(table.tHead.rows[0].cells), search = document.getElementById("search");
  const count = document.getElementById("count");
  const key = (row, i, num) => {
    const cell = row.cells[i], v = cell.title || cell.textContent;
    return num ? (v === "" ? NaN : Number(v)) : v;
  };
  const compare = (x, y, num, up) => {  // empty cells last, either way
    if (num ? Number.isNaN(x) : x === "") return (num ? Number.isNaN(y) : y === "") ? 0 : 1;
    if (num ? Number.isNaN(y) : y === "") return -1;
    const d = num ? x - y : x.localeCompare(y, undefined, { numeric: true });
    return up ? d : -d;
  };
  heads.forEach((th, i) => {
    const sort = () => {
      const up = th.getAttribute("aria-sort") !== "ascending", num = th.classList.contains("num");
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      rows.sort((a, b) => compare(key(a, i, num), key(b, i, num), num, up)).forEach((r) => body.appendChild(r));
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); } });
  });
  const filter = () => {
    const q = search.value.trim().toLowerCase();
    let shown = 0;
    rows.forEach((r) => { r.hidden = q !== "" && !r.textContent.toLowerCase().includes(q); shown += !r.hidden; });
    count.textContent = `${shown} of ${rows.length} rows`;
  };
  search.addEventListener("input", filter);
  filter();
})();
"""

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1e293b; background: #fff; }
header { padding: 12px 16px 8px; border-bottom: 1px solid #e2e8f0; }
h1 { font-size: 18px; margin: 0 0 4px; }
.meta { color: #475569; margin: 0 0 8px; }
input[type=search] { font: inherit; padding: 4px 8px; width: 24em; border: 1px solid #94a3b8; border-radius: 4px; }
#count { color: #475569; margin-left: 8px; }
details { margin: 8px 0 0; color: #334155; max-width: 72em; }
summary { cursor: pointer; color: #1d4ed8; }
.scroll { overflow: auto; max-height: calc(100vh - 150px); }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e2e8f0; white-space: nowrap; text-align: left; }
th { position: sticky; top: 0; background: #f1f5f9; cursor: pointer; user-select: none; }
th.num, td.num { text-align: right; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
tbody tr:nth-child(even) { background: #f8fafc; }
tr.empty td { color: #475569; font-style: italic; white-space: normal; }
code { font-size: 90%; background: #f1f5f9; padding: 0 2px; }
"""


@dataclass(frozen=True)
class Cell:
    """What a cell shows and, when the display rounds it, the full value (its tooltip and sort key)."""

    text: str
    full: str | None = None


def number(value: float) -> Cell:
    """A float at `SIGNIFICANT` significant digits; the full value kept when rounding changed it."""
    if not np.isfinite(value):
        return Cell(
            "" if np.isnan(value) else ("inf" if value > 0 else "-inf"), None if np.isnan(value) else repr(value)
        )
    text = f"{value:.{SIGNIFICANT}g}"
    return Cell(text, None if float(text) == value else repr(float(value)))


def cells(column: pd.Series) -> tuple[bool, list[Cell]]:
    """Whether a column sorts as numbers, and its cells: integers as they are, floats rounded, missing as blank."""
    if pd.api.types.is_bool_dtype(column):
        return False, [Cell(str(bool(v))) for v in column]
    if pd.api.types.is_integer_dtype(column):
        return True, [Cell("" if pd.isna(v) else str(int(v))) for v in column]
    if pd.api.types.is_float_dtype(column):
        return True, [number(float(v)) for v in column]
    return False, [Cell("" if pd.isna(v) else str(v)) for v in column]


def empty_reason(caption: str) -> str:
    """Why a table can have no rows, as its caption says ("Empty when ..."); a plain line where it does not."""
    found = re.search(r"Empty when [^.]*\.", caption)
    return f"No rows in this run. {found.group(0) if found else ''}".strip()


def caption_html(caption: str) -> str:
    """The caption's reStructuredText as HTML: escaped, ``literals`` as code."""
    return re.sub(r"``(.+?)``", r"<code>\1</code>", html.escape(caption, quote=False))


def _row(row: Sequence[Cell], numeric: Sequence[bool]) -> str:
    tds = []
    for cell, num in zip(row, numeric, strict=True):
        attrs = (' class="num"' if num else "") + (f' title="{html.escape(cell.full)}"' if cell.full else "")
        tds.append(f"<td{attrs}>{html.escape(cell.text)}</td>")
    return "<tr>" + "".join(tds) + "</tr>"


def page(name: str, frame: pd.DataFrame, caption: str, source: str) -> str:
    """Table `name` (`frame`, as read from `source`) as one self-contained HTML page."""
    columns = [cells(frame[c]) for c in frame.columns]
    numeric = [num for num, _ in columns]
    num_class = ' class="num"'
    heads = "".join(
        f'<th scope="col" tabindex="0"{num_class if num else ""}>{html.escape(str(c))}</th>'
        for c, num in zip(frame.columns, numeric, strict=True)
    )
    if len(frame):
        body = "\n".join(_row(row, numeric) for row in zip(*(c for _, c in columns), strict=True))
    else:
        span = max(len(frame.columns), 1)
        body = f'<tr class="empty"><td colspan="{span}">{html.escape(empty_reason(caption))}</td></tr>'
    rows = f"{len(frame)} row{'s' if len(frame) != 1 else ''}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(name)}</title><style>{STYLE}</style></head>
<body>
<header>
<h1>{html.escape(name)}</h1>
<p class="meta">{rows} &middot; {len(frame.columns)} columns &middot; from <code>{html.escape(source)}</code>, which holds
every digit (numbers here: {SIGNIFICANT} significant digits; hover a cell for its full value). Every column is
described in <code>{DOCS}</code>. Click a column's header to sort by it.</p>
<input type="search" id="search" placeholder="Search rows" aria-label="Search rows"><span id="count"></span>
<details><summary>About this table</summary><p>{caption_html(caption)}</p></details>
</header>
<div class="scroll"><table class="data"><thead><tr>{heads}</tr></thead>
<tbody>
{body}
</tbody></table></div>
<script>{SCRIPT}</script>
</body></html>
"""


def write_page(name: str, csv: str | Path, path: str | Path, caption: str) -> None:
    """The page of table `name`, made from its CSV `csv` as written, to `path` (atomically)."""
    html_text = page(name, read_table(csv), caption, str(csv))
    with atomic_path(path, suffix=".html") as tmp:
        tmp.write_text(html_text, encoding="utf-8")


def labels(name: str, csv: str | Path) -> dict[str, str]:
    """The report's entry for a table: its name and number of rows (an empty table shows before it opens). One
    label only: Snakemake's report would turn a second one into a toggle (`rankscale.plots.declaration.Figure.labels`)."""
    rows = len(read_table(csv)) if Path(csv).is_file() else 0
    return {"table": f"{name} ({rows} row{'' if rows == 1 else 's'})"}
