"""What the CLI prints is plain text, whatever the data says.

Strings from data (a sample's `task`, a tool's name or description, paths, error messages
that quote input, model answers in warnings) reach the terminal through tables, warnings,
errors and logs. Two things in them could act instead of print: rich *markup* (`[bold red]`,
`[link=...]`), which a `Console` parses in every plain string it prints, and *control
characters* (ESC sequences that move the cursor or rewrite a line, a carriage return, bidi
overrides that reorder what is shown), which a terminal obeys. So:

- every console is a `PlainConsole`: markup, emoji codes and highlighting are off (the CLI
  styles with `Text` and `style=`, never with markup in strings), and every character of
  text it writes passes through `neutralize` last, whatever built it (a table cell, a
  `Text`, a JSON view);
- the log handler's formatter (`PlainFormatter`) does the same for log lines.

`neutralize` writes a control or invisible formatting character as its escape (`\\x1b`,
`\\u202e`), so it stays visible; newlines and tabs stay.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

# C0 controls but tab and newline, DEL, C1 controls, and the invisible format characters that
# reorder or hide text (zero-width, bidi embeddings, overrides and isolates, the BOM).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralize(text: str) -> str:
    """`text` with every control and invisible formatting character written as its escape."""
    return _UNSAFE.sub(_escape, text)


class PlainConsole(Console):
    """A `Console` that prints data as plain text (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        kwargs.setdefault("emoji", False)
        kwargs.setdefault("highlight", False)
        super().__init__(**kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        # before layout, so widths are measured on what will be shown
        return super().render_str(neutralize(text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # last, for text that reached the buffer another way (`Text` built from data);
        # control segments are rich's own cursor moves (progress bars) and pass as they are
        return super()._render_buffer(
            s if s.control else Segment(neutralize(s.text), s.style, s.control) for s in buffer
        )


class PlainFormatter(logging.Formatter):
    """A log formatter whose lines carry no control characters from the data they quote."""

    def format(self, record: logging.LogRecord) -> str:
        return neutralize(super().format(record))
