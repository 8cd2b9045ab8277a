"""Text from data, made inert for where it is shown: a terminal (`neutralize`) or a Markdown
page (`md_text`, `md_code`).

A run folder, a sample or a model answer can carry text that acts where it lands instead of
being shown: escape sequences a terminal obeys (moving the cursor, rewriting a line), bidi
overrides that reorder what a reader sees, Markdown and HTML that a viewer renders (a link,
an image fetched from elsewhere, a table broken by a `|`, a heading). These functions keep
every character visible and take away its effect.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls but tab and newline, DEL, C1 controls, and the invisible format characters that
# reorder or hide text (zero-width, bidi embeddings, overrides and isolates, the BOM).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
# Characters that make Markdown (GFM) inline syntax out of text: links and images (`[`, `]`),
# table cells (`|`), code spans, emphasis, escapes; `<`, `>` and `&` (HTML, autolinks) become
# entities instead. `_` stays: in identifiers (`best_of_n`) it is text, and at worst italics.
_MD_SPECIAL = re.compile(r"([\\`*\[\]|])")
_HTML = str.maketrans({"<": "&lt;", ">": "&gt;", "&": "&amp;"})
_LINE_BREAKS = re.compile(r"[\r\n]+")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralize(text: str) -> str:
    """`text` with every control and invisible formatting character written as its escape
    (`\\x1b`, `\\u202e`); newlines and tabs stay."""
    return _UNSAFE.sub(_escape, text)


def md_text(value: Any) -> str:
    """`value` as one line of Markdown that renders as exactly its text: no link, image,
    HTML, emphasis, code or table cell boundary can come from it."""
    text = neutralize(_LINE_BREAKS.sub(" ", str(value)))
    return _MD_SPECIAL.sub(r"\\\1", text.translate(_HTML))


def md_code(value: Any) -> str:
    """`value` as an inline code span that nothing in it can close (its fence is longer than
    any run of backticks inside), on one line."""
    text = neutralize(_LINE_BREAKS.sub(" ", str(value)))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"
