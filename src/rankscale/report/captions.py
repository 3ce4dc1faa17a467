"""Captions as the report's reStructuredText: the one place a caption is escaped for docutils.

A table's or figure's caption (`Table.caption`, `Figure.caption`) is plain text with ``literal`` spans: the
table's own page shows it as such (`rankscale.report.pages.caption_html`). Snakemake's report reads it as
reStructuredText, where plain text is markup: `|z0|` is a substitution reference, `word_` a hyperlink, `*x*`
emphasis, a line starting `- ` a list, and each unresolved one prints an ERROR block into the report. So the
caption rules (workflow/rules/analysis.smk, figures.smk) hand the report `rst(caption)`: every markup character
escaped, the ``literal`` spans kept as literals.
"""

from __future__ import annotations

import re
import string

# a literal span: two backquotes, text that neither starts nor ends with a space, two backquotes
LITERAL = re.compile(r"``(\S(?:.*?\S)??)``")
MARKUP = frozenset(string.punctuation)  # every ASCII punctuation character: each starts some rST construct


def escaped(text: str) -> str:
    """`text` as reStructuredText that reads as itself: each ASCII punctuation character backslash-escaped (an
    escaped character is never markup)."""
    return "".join(f"\\{c}" if c in MARKUP else c for c in text)


def rst(caption: str) -> str:
    """A caption as reStructuredText: plain text escaped, each ``literal`` span kept, between escaped spaces
    (which docutils drops) so that it is a literal whatever touches it ("``k``s", "(``k``)"); whitespace runs and
    line breaks one space, as a caption is one paragraph (an indented line would start a block quote)."""
    caption = " ".join(caption.split())
    parts, end = [], 0
    for match in LITERAL.finditer(caption):
        parts += [escaped(caption[end : match.start()]), rf"\ ``{match.group(1)}``\ "]
        end = match.end()
    parts.append(escaped(caption[end:]))
    return "".join(parts)
