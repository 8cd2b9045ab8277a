"""Options and helpers shared by the CLI command groups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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
