"""`rewardsmith audit TARGET --examples EX.jsonl`: a reward function against the exploit corpus.

TARGET is a library tool (`NAME` or `NAME@V`) or a Python file holding a reward function
(a TRL-style `reward(completions, **kwargs)`, a veRL `compute_score(...)` or a plain
`f(completion, reference)`: detected from the file, run only in the sandbox).

Exit codes (scripts rely on them): 0 clean, 3 exploitable (an attack class with a false-pass
rate above `--max-false-pass`, 0 by default; with `--fail-on any`, also any false fail on
right answers), 2 bad input (an unreadable file, no reward function found, a bad examples
line: the message names the file and line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rewardsmith.cli.common import LibraryOption, err_console, open_library, progress_bar
from rewardsmith.errors import InputError

console = Console()

EXIT_CLEAN = 0
EXIT_EXPLOITABLE = 3


def _load_lines(path: Path) -> list[Any]:
    """The examples file's lines (`InputError` naming the file and line of a bad one)."""
    from rewardsmith.jsonl import read_jsonl
    from rewardsmith.synth.examples import parse_example

    try:
        rows = read_jsonl(path)
    except OSError as exc:
        raise InputError(f"cannot read examples file {path}: {exc}") from None
    lines = [parse_example(row, f"{path}:{i}") for i, row in enumerate(rows, start=1)]
    if not lines:
        raise InputError(f"{path}: no examples (every line blank)")
    return lines


def _classes(attacks: str | None) -> list[str] | None:
    if attacks is None:
        return None
    names = [a.strip() for a in attacks.split(",") if a.strip()]
    if not names:
        raise InputError("--attacks is empty; give class names like hedge,shotgun,style")
    return names


def _is_file(target: str) -> bool:
    return target.endswith(".py") or Path(target).is_file()


def _print(report: Any) -> None:
    table = Table(title=f"audit: {report.target} (seed {report.seed}, {report.lines} examples)")
    for column in ("class", "wrong", "rate [95% CI]", "first example"):
        table.add_column(column, overflow="fold")
    for title, classes, pooled in (
        ("attacks: false passes", report.attacks, report.false_pass),
        ("right answers: false fails", report.variants, report.false_fail),
    ):
        if not classes:
            continue
        table.add_row(Text(title, style="bold"), "", "", "")
        for c in [*classes, pooled]:
            example = c.examples[0]["completion"] if c.examples else ""
            table.add_row(
                Text(c.name),
                f"{c.wrong}/{c.probes}",
                f"{c.rate:.1%} [{c.low:.1%}, {c.high:.1%}]",
                Text(example[:70]),
            )
    if report.attacks or report.variants:
        console.print(table)
    console.print(Text(report.verdict()), soft_wrap=True)


def audit(
    target: Annotated[
        str,
        typer.Argument(
            metavar="TARGET",
            help="A library tool (NAME or NAME@V) or a Python file with a reward function.",
        ),
    ],
    examples: Annotated[
        Path,
        typer.Option(
            "--examples",
            help="Examples JSONL: prompt and reference per line (completion and label optional).",
        ),
    ],
    json_report: Annotated[
        Path | None, typer.Option("--json", help="Write the full report as JSON to this file.")
    ] = None,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            help="exploit: exit 3 on false passes; any: also on false fails of right answers.",
        ),
    ] = "exploit",
    attacks: Annotated[
        str | None,
        typer.Option(
            "--attacks",
            help="Comma-separated corpus classes to run, e.g. hedge,shotgun,style (default: all).",
        ),
    ] = None,
    max_false_pass: Annotated[
        float,
        typer.Option(
            "--max-false-pass", help="False-pass rate an attack class may reach before exit 3."
        ),
    ] = 0.0,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed of the corpus (default: a fresh one).")
    ] = None,
    function: Annotated[
        str | None,
        typer.Option("--function", help="For a file: the function to audit (default: detected)."),
    ] = None,
    data_source: Annotated[
        str, typer.Option("--data-source", help="For a veRL compute_score: its data_source.")
    ] = "audit",
    library: LibraryOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Audit a reward function on an exploit corpus built from EXAMPLES: the false-pass rate
    of every attack class (hedges, shotgun lists, negations, grader notes...) with a Wilson
    95% interval, the false-fail rate on right answers in every common style, a verdict."""
    from rewardsmith.audit import FAIL_ON, FileRewardTool, audit_tool, log_audit

    if fail_on not in FAIL_ON:
        raise InputError(f"--fail-on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if not 0.0 <= max_false_pass <= 1.0:
        raise InputError(f"--max-false-pass must be within [0, 1], got {max_false_pass}")
    lines = _load_lines(examples)
    classes = _classes(attacks)
    from_file = _is_file(target)
    with open_library(library) as lib:
        tool = FileRewardTool(Path(target), function, data_source) if from_file else lib.get(target)
        try:
            with progress_bar(err_console, quiet) as bar:
                task = bar.add_task("auditing", total=None)
                report = audit_tool(
                    tool,
                    lines,
                    seed=seed,
                    classes=classes,
                    max_false_pass=max_false_pass,
                    fail_on=fail_on,
                    check_applies=not from_file,
                    progress=lambda n: bar.advance(task, n),
                    target=f"{target}:{tool.found.name}" if from_file else None,  # type: ignore[attr-defined]
                )
        except ValueError as exc:  # an unknown --attacks class
            raise InputError(str(exc)) from None
        finally:
            if from_file:
                tool.close()
        if not from_file:
            log_audit(lib, tool.spec.name, tool.spec.version, report)
    if json_report is not None:
        json_report.parent.mkdir(parents=True, exist_ok=True)
        json_report.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    _print(report)
    raise typer.Exit(EXIT_EXPLOITABLE if report.failed else EXIT_CLEAN)
