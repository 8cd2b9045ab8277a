"""Options and helpers shared by the CLI command groups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from rewardsmith.library.store import Library

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
