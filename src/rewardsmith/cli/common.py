"""Options and helpers shared by the CLI command groups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from rewardsmith.library.store import Library

# Warnings go to stderr, so stdout stays the table a user (or a script) reads.
err_console = Console(stderr=True)

LibraryOption = Annotated[
    Path | None,
    typer.Option(
        "--library",
        help="Tool library file (default: $REWARDSMITH_HOME/library.db or ~/.rewardsmith/library.db).",
        dir_okay=False,
    ),
]


def open_library(path: Path | None) -> Library:
    return Library(path)


def progress_bar(console: Console, quiet: bool) -> Progress:
    """The progress bar every long command shows (hidden with --quiet, gone when done)."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=quiet,
        transient=True,
    )


def warn(message: str) -> None:
    """One `warning: ...` line on stderr (plain text: markup characters print as written)."""
    err_console.print(
        Text.assemble(("warning: ", "bold yellow"), message), highlight=False, soft_wrap=True
    )


def warn_empty_input(input_path: Path, output: Path) -> None:
    """What `score` and `route` say about an input without a single sample: they exit 0 and
    write nothing (an existing OUTPUT is left as it was)."""
    warn(f"{input_path} has no samples (no non-blank lines); nothing was written to {output}")
