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

`neutralize` (`rewardsmith.plaintext`) writes a control or invisible formatting character as
its escape (`\\x1b`, `\\u202e`), so it stays visible; newlines and tabs stay.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from rewardsmith.plaintext import neutralize

__all__ = ["PlainConsole", "PlainFormatter", "neutralize"]


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
