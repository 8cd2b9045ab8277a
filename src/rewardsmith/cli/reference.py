"""The command reference, docs/cli.md, generated from the Typer app itself.

`python -m rewardsmith.cli.reference > docs/cli.md` rewrites it; `tests/cli/test_reference.py`
fails when the file and the app disagree, so the page cannot drift from the commands. The
page is built from each command's parameters (names, types, defaults, help) rather than from
the rendered `--help`, which depends on the terminal's width.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

HEADER = """# Command reference

Generated from the `rewardsmith` command itself (`python -m rewardsmith.cli.reference >
docs/cli.md`); a test keeps it in step. The grammar is the same everywhere: `-o/--output` is
always a file, `--out-dir` always a folder, `--backend` always the router backend, and exit
code 2 means bad input or configuration (the message says what and where). Every command
takes `-h`/`--help`; `rewardsmith --version` prints the version. Every example runs when
pasted from the project's root (`tests/cli/test_help_examples.py` runs them).
"""


# Typer carries its own copy of Click, so the commands and parameters are read by their
# attributes (duck typing), not checked against `click` classes.
Command = Any
Param = Any


def walk(command: Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Every command under `command`, depth first, groups before their subcommands."""
    yield path, command
    if hasattr(command, "commands"):
        for name in sorted(command.commands):
            yield from walk(command.commands[name], (*path, name))


def _is_flag(param: Param) -> bool:
    return bool(getattr(param, "is_flag", False))


def _default(param: Param) -> str:
    if param.required or param.default is None or callable(param.default):
        return ""
    if _is_flag(param):
        return "on" if param.default else ""
    value = param.default
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return f"`{value}`" if str(value) != "" else ""


def _names(param: Param) -> str:
    if param.param_type_name == "argument":
        return f"`{(param.metavar or param.name).upper()}`"
    names = [*param.opts, *param.secondary_opts]
    return ", ".join(f"`{n}`" for n in names)


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _section(path: tuple[str, ...], command: Command) -> list[str]:
    name = " ".join(path)
    lines = [f"{'#' * min(len(path) + 1, 4)} `{name}`", ""]
    summary, *details = (command.help or "").strip().split("\n\n")
    if summary:
        lines += [summary.replace("\n", " "), ""]
    ctx = command.context_class(command, info_name=name)
    lines += ["```", f"{name} {' '.join(command.collect_usage_pieces(ctx))}", "```", ""]
    if details:
        lines += ["\n\n".join(details), ""]
    params = [p for p in command.params if not getattr(p, "hidden", False) and p.name != "help"]
    if params:
        lines += ["| parameter | type | default | help |", "|---|---|---|---|"]
        for p in params:
            kind = "flag" if _is_flag(p) else str(p.bare_type()).lower()
            help_cell = _cell(getattr(p, "help", "") or "")
            lines.append(f"| {_names(p)} | {kind} | {_default(p)} | {help_cell} |")
        lines.append("")
    if command.epilog:
        lines += [command.epilog.strip(), ""]
    return lines


def cli_reference(app: typer.Typer) -> str:
    """The Markdown page for `app`: one section per command, in tree order."""
    root = typer.main.get_command(app)
    lines = [HEADER]
    for path, command in walk(root, ("rewardsmith",)):
        lines += _section(path, command)
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    from rewardsmith.cli.main import app

    print(cli_reference(app), end="")


if __name__ == "__main__":
    main()
