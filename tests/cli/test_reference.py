"""One CLI grammar, an example in every command's help, and docs/cli.md generated from the app
(regenerate with `python -m rewardsmith.cli.reference > docs/cli.md`)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from rewardsmith.cli.examples import EXAMPLES
from rewardsmith.cli.main import app
from rewardsmith.cli.reference import cli_reference, walk

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
ROOT = typer.main.get_command(app)
LEAVES = [
    (" ".join(path[1:]), command)
    for path, command in walk(ROOT, ("rewardsmith",))
    if not hasattr(command, "commands")
]


def options(command: Any) -> dict[str, Any]:
    return {
        name: p
        for p in command.params
        if p.param_type_name == "option"
        for name in [*p.opts, *p.secondary_opts]
    }


def test_docs_cli_md_is_generated_from_the_app() -> None:
    assert DOCS.read_text(encoding="utf-8") == cli_reference(app), (
        "docs/cli.md is stale: python -m rewardsmith.cli.reference > docs/cli.md"
    )


@pytest.mark.parametrize(("name", "command"), LEAVES, ids=[n for n, _ in LEAVES])
def test_every_command_shows_an_example_that_uses_its_own_flags(name: str, command: Any) -> None:
    assert name in EXAMPLES, f"add an example for `rewardsmith {name}` to cli/examples.py"
    assert "$ rewardsmith" in (command.epilog or "")
    known = options(command)
    for example in EXAMPLES[name]:
        words = shlex.split(example)
        # `route INPUT` runs `route run` by default
        flags = [w.split("=")[0] for w in words if w.startswith("-")]
        unknown = [f for f in flags if f not in known]
        assert unknown == [], f"{example!r} uses flags `{name}` does not have"


@pytest.mark.parametrize(("name", "command"), LEAVES, ids=[n for n, _ in LEAVES])
def test_one_grammar(name: str, command: Any) -> None:
    known = options(command)
    # -o is always a file (--output); folders are --out-dir; -b is always --backend
    if "-o" in known:
        assert "--output" in known["-o"].opts, f"{name}: -o must mean --output (a file)"
    if "--out-dir" in known:
        assert "-o" not in known["--out-dir"].opts
    if "-b" in known:
        assert "--backend" in known["-b"].opts, f"{name}: -b must mean --backend"
    if "--router" in known:
        assert "--backend" in known["--router"].opts, f"{name}: --router is --backend's alias"
