"""The `rewardsmith` command: one Typer app, a module per command group."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer
from rich.text import Text

from rewardsmith.cli import audit as audit_cmd
from rewardsmith.cli import bench as bench_cmd
from rewardsmith.cli import convert as convert_cmd
from rewardsmith.cli import grpo as grpo_cmd
from rewardsmith.cli import report as report_cmd
from rewardsmith.cli import rm as rm_cmd
from rewardsmith.cli import rollouts as rollouts_cmd
from rewardsmith.cli import route as route_cmd
from rewardsmith.cli import score as score_cmd
from rewardsmith.cli import search as search_cmd
from rewardsmith.cli import serve as serve_cmd
from rewardsmith.cli import synth as synth_cmd
from rewardsmith.cli import tools as tools_cmd
from rewardsmith.cli.examples import add_examples
from rewardsmith.cli.terminal import PlainConsole, PlainFormatter
from rewardsmith.errors import RewardsmithError

app = typer.Typer(
    name="rewardsmith",
    help="A reward engine for RL on language models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # every command and group inherits -h (Click passes help_option_names down)
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"rewardsmith {version('rewardsmith')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            print("rewardsmith (not installed: no version metadata)")
        raise typer.Exit()


@app.callback()
def root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """A reward engine for RL on language models."""


app.command("score")(score_cmd.score)
app.command("convert")(convert_cmd.convert)
app.command("serve")(serve_cmd.serve)
app.command("report")(report_cmd.report)
app.command("audit")(audit_cmd.audit)
app.command("rescore")(rollouts_cmd.rescore)
app.command("compare")(rollouts_cmd.compare)
app.command("profile")(rollouts_cmd.profile)
app.add_typer(tools_cmd.app, name="tools")
app.add_typer(rm_cmd.app, name="rm")
app.add_typer(grpo_cmd.app, name="grpo")
app.add_typer(route_cmd.app, name="route")
app.add_typer(bench_cmd.app, name="bench")
app.add_typer(synth_cmd.app, name="synth")
app.add_typer(search_cmd.app, name="search")
add_examples(app)

err_console = PlainConsole(stderr=True)


def main() -> None:
    """Entry point: run the app, turning rewardsmith errors into a message and exit code 2."""
    handler = logging.StreamHandler()
    handler.setFormatter(PlainFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    try:
        app(args=serve_cmd.expand_ray_flag(sys.argv[1:]))
    except RewardsmithError as exc:
        # The message is plain text: markup characters in it (`[/]`, paths) print as written.
        err_console.print(Text.assemble(("error: ", "bold red"), str(exc)), highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
