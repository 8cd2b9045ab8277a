"""`rewardsmith report RUNDIR`: one Markdown page for a training or evaluation folder (see
`rewardsmith.report.markdown` for what it recognizes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardsmith.cli.terminal import PlainConsole

console = PlainConsole()


def report(
    rundir: Annotated[
        Path,
        typer.Argument(
            metavar="RUNDIR",
            help="A `grpo train` / `rm train` output folder, or a folder holding `rm eval` / "
            "`grpo eval` results saved with -o.",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Where to write the page (default: RUNDIR/report.md)."),
    ] = None,
) -> None:
    """Write one Markdown page (settings, metric tables, plots) for RUNDIR (a `search run`
    folder has its own: `rewardsmith search report RUNDIR`)."""
    from rewardsmith.report.markdown import write_report

    path = write_report(rundir, output)
    console.print(f"wrote {path}", highlight=False, soft_wrap=True)
