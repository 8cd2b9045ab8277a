"""Strings from data reach the terminal as plain text: rich markup prints as written, and
control characters (escape sequences, carriage returns, bidi overrides) print as visible
escapes, in tables, warnings, errors and log lines alike."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from rewardsmith.cli.main import app
from rewardsmith.cli.terminal import PlainConsole, PlainFormatter, neutralize

runner = CliRunner()

# What a hostile `task` field (or tool name, path, model answer) may carry.
HOSTILE = [
    # rich markup: would print a red fake line
    ("[bold red]mean reward 1.000[/]", "[bold red]mean reward 1.000[/]"),
    # cursor up two lines and a carriage return: would overwrite the real summary line
    ("x\x1b[2A\rwrote 0 lines", "x\\x1b[2A\\x0dwrote 0 lines"),
    # an OSC sequence setting the window title, with its BEL
    ("\x1b]0;pwned\x07", "\\x1b]0;pwned"),
    # right-to-left override: shows the text reversed
    ("gsm8k\u202eKO", "gsm8k\\u202eKO"),
]


@pytest.mark.parametrize(("raw", "shown"), HOSTILE)
def test_score_table_prints_a_task_field_as_written(tmp_path: Path, raw: str, shown: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"completion": "#### 4", "reference": "4", "task": raw}) + "\n")
    result = runner.invoke(
        app,
        ["score", str(src), "-o", str(tmp_path / "o.jsonl"), "-t", "gsm8k"],
        env={"REWARDSMITH_HOME": str(tmp_path), "COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert shown in result.output
    assert "\x1b" not in result.output and "\r" not in result.output
    assert "\u202e" not in result.output


@pytest.mark.parametrize(("raw", "shown"), HOSTILE)
def test_every_way_of_printing_neutralizes(raw: str, shown: str) -> None:
    out = io.StringIO()
    console = PlainConsole(file=out, width=200, force_terminal=False)
    table = Table()
    table.add_column("cell")
    table.add_row(raw)
    console.print(table)
    console.print(raw)
    console.print(Text.assemble(("warning: ", "yellow"), raw))
    printed = out.getvalue()
    assert printed.count(shown) >= 2  # a `Text` drops some controls itself (\r, BEL)
    assert all(c not in printed for c in "\x1b\r\x07\u202e")


def test_log_lines_are_neutralized() -> None:
    record = logging.LogRecord("x", logging.WARNING, "f", 1, "bad %s", ("\x1b[2J",), None)
    assert PlainFormatter("%(message)s").format(record) == "bad \\x1b[2J"


def test_newlines_and_tabs_stay() -> None:
    assert neutralize("a\tb\nc") == "a\tb\nc"
