"""Options and helpers shared by the CLI command groups."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.errors import ConfigError, InputError, MissingDependencyError
from rewardsmith.library.store import Library

# Warnings go to stderr, so stdout stays the table a user (or a script) reads.
err_console = PlainConsole(stderr=True)

LibraryOption = Annotated[
    Path | None,
    typer.Option(
        "--library",
        help="Tool library file (default: $REWARDSMITH_HOME/library.db or ~/.rewardsmith/library.db).",
        dir_okay=False,
    ),
]


LLMUrlOption = Annotated[
    str | None,
    typer.Option(
        "--llm-url",
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (default: "
        "$REWARDSMITH_LLM_BASE_URL, then $OPENAI_BASE_URL).",
    ),
]
LLMModelOption = Annotated[
    str | None,
    typer.Option(
        "--llm-model",
        help="Model name (default: $REWARDSMITH_LLM_MODEL, else the first model the server lists).",
    ),
]
LLMKeyOption = Annotated[
    str | None,
    typer.Option(
        "--llm-key",
        help="API key (default: $REWARDSMITH_LLM_API_KEY, then $OPENAI_API_KEY).",
    ),
]
FallbackOption = Annotated[
    str | None,
    typer.Option(
        "--fallback",
        help="'embedded': when the llm backend cannot be used (no endpoint, unreachable, key "
        "refused), route with the embedded backend instead of stopping (exit 2).",
    ),
]


def apply_llm_flags(url: str | None, model: str | None, key: str | None) -> None:
    """Make `--llm-url/--llm-model/--llm-key` the `REWARDSMITH_LLM_*` variables of this process,
    so every LLM client it (or a worker process it starts) builds uses them: flags override
    the variables, which override `OPENAI_*` (`rewardsmith.llm.client`)."""
    from rewardsmith.llm.client import API_KEY_ENV, BASE_URL_ENV, MODEL_ENV

    for name, value in ((BASE_URL_ENV, url), (MODEL_ENV, model), (API_KEY_ENV, key)):
        if value:
            os.environ[name] = value


def llm_fallback(fallback: str | None) -> bool:
    """True when `--fallback embedded` was given; any other value is a `ConfigError`."""
    if fallback is None:
        return False
    if fallback != "embedded":
        raise ConfigError(f"--fallback must be 'embedded', got {fallback!r}")
    return True


def open_library(path: Path | None) -> Library:
    return Library(path)


def progress_bar(console: Console, quiet: bool) -> Progress:
    """The progress bar every long command shows (hidden with --quiet, gone when done); `score`
    and `route` draw it on stderr (`err_console`), so stdout stays their table."""
    return Progress(
        TextColumn("{task.description}", style="progress.description", markup=False),
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


def write_plot(
    plot: Callable[[dict[str, Any], Path], Path], data: dict[str, Any], path: Path
) -> None:
    """Draw `data` with `plot` to `path` and say where; a plot that cannot be drawn (no
    matplotlib, nothing to plot) is a warning: the results themselves were written."""
    try:
        plot(data, path)
    except (MissingDependencyError, InputError) as exc:
        warn(f"no plot: {exc}")
        return
    err_console.print(f"plot: {path}", highlight=False, soft_wrap=True)


def warn_long_warmup(warmup_steps: int, steps: int) -> None:
    """A warning when linear warmup covers the whole run: the learning rate would still be
    ramping up (from 0) when the run ends, so the run trains far less than asked."""
    if steps > 0 and warmup_steps >= steps:
        peak = steps / warmup_steps if warmup_steps else 1.0
        warn(
            f"--warmup-steps {warmup_steps} >= the run's {steps} steps: the learning rate only "
            f"ramps from 0 and reaches {peak:.0%} of --lr at the last step; lower "
            f"--warmup-steps (e.g. {max(0, steps // 10)}) or raise the steps"
        )
