"""`rewardsmith tools list|show|add|retire|history`: look at and manage the tool library."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from rewardsmith.cli.common import LibraryOption, open_library
from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import REWARD_FUNCTION_FACTORY
from rewardsmith.library.store import parse_tool_ref
from rewardsmith.types import ToolSpec

app = typer.Typer(help="The tool library: list, show, add, retire, history.", no_args_is_help=True)
console = Console()

# Descriptions are cut in the list view; `tools show` prints them whole.
LIST_DESCRIPTION_CHARS = 30
# `"kind": "reward_function"` in a tool file: a generated `def reward(...)`, stored as a tool
# of kind "code" built by REWARD_FUNCTION_FACTORY (its 4-stage check runs when it is added).
REWARD_FUNCTION_KIND = "reward_function"


@app.command("list")
def list_tools(
    library: LibraryOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Include retired tools.")] = False,
) -> None:
    """List the tools in the library (latest version of each)."""
    with open_library(library) as lib:
        records = lib.records(include_retired=all_)
        table = Table(title=f"tools in {lib.path}")
        table.add_column("tool", no_wrap=True, min_width=20)
        table.add_column("kind", no_wrap=True, min_width=9)
        table.add_column("origin", no_wrap=True, min_width=7)
        table.add_column("description", no_wrap=True)
        for r in records:
            s = r.spec
            desc = s.description
            if len(desc) > LIST_DESCRIPTION_CHARS:
                desc = desc[: LIST_DESCRIPTION_CHARS - 1] + "…"
            name = s.ref + (" (retired)" if r.retired else "")
            table.add_row(name, s.kind, s.provenance, desc)
        console.print(table)


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="NAME or NAME@VERSION")],
    library: LibraryOption = None,
) -> None:
    """Show one tool: spec, config, versions and its latest audit's rates."""
    from rewardsmith.audit import latest_audit

    tool_name, version = parse_tool_ref(name)
    with open_library(library) as lib:
        record = lib.record(tool_name, version)
        versions = [r.spec.version for r in lib.versions(tool_name)]
        audit = latest_audit(lib, tool_name, record.spec.version)
    out = {
        **record.spec.to_dict(),
        "config": record.config,
        "created_at": record.created_at,
        "retired": record.retired,
        "versions": versions,
        "audit": _audit_summary(audit),
    }
    console.print_json(json.dumps(out))


def _audit_summary(detail: dict | None) -> dict | str:
    """The latest `rewardsmith audit` of this version, its rates as "wrong/probes [CI]"."""
    if detail is None:
        return "never audited (rewardsmith audit NAME --examples EX.jsonl)"
    rates = {
        name: f"{r['wrong']}/{r['probes']} [{r['ci95'][0]:.1%}, {r['ci95'][1]:.1%}]"
        for name, r in detail.get("rates", {}).items()
    }
    return {"verdict": detail.get("verdict"), "seed": detail.get("seed"), "rates": rates}


@app.command("history")
def history(
    name: Annotated[str | None, typer.Argument(help="Only events about this tool.")] = None,
    library: LibraryOption = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Only the last N events.")
    ] = None,
) -> None:
    """The library's append-only event log, oldest first."""
    with open_library(library) as lib:
        if name is not None:
            lib.record(name)  # unknown names get the list of known ones
        events = lib.history(name, limit)
    table = Table(title="library history")
    for col in ("#", "time (UTC)", "event", "tool", "version"):
        table.add_column(col, no_wrap=True)
    table.add_column("detail", overflow="fold")
    for e in events:
        detail = {k: v for k, v in e.detail.items() if k != "spec"}
        table.add_row(
            str(e.id),
            e.ts,
            e.kind,
            e.tool or "-",
            "-" if e.version is None else str(e.version),
            json.dumps(detail) if detail else "",
        )
    console.print(table)


@app.command("retire")
def retire(
    name: Annotated[str, typer.Argument(help="Tool to retire.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the history).")] = "",
    library: LibraryOption = None,
) -> None:
    """Retire a tool: it stays in the library and its history but is no longer used."""
    with open_library(library) as lib:
        lib.retire(name, reason)
    console.print(f"retired {name}")


@app.command("add")
def add(
    path: Annotated[Path, typer.Argument(help='JSON file: {"spec": {...}, "config": {...}}')],
    note: Annotated[str, typer.Option("--note", help="Why (kept in the history).")] = "",
    library: LibraryOption = None,
) -> None:
    """Add a tool (or a new version of one) from a JSON file; it is built once first."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read tool file {path}: {exc}") from None
    if not isinstance(data, dict) or "spec" not in data or "config" not in data:
        raise ConfigError(f'{path}: expected an object with "spec" and "config"')
    spec_data, config = data["spec"], data["config"]
    if isinstance(spec_data, dict) and spec_data.get("kind") == REWARD_FUNCTION_KIND:
        spec_data, config = _reward_function(path, spec_data, config)
    try:
        spec = ToolSpec.from_dict({"provenance": "user", **spec_data})
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: bad spec: {exc}") from None
    with open_library(library) as lib:
        stored = lib.add(spec, config, note=note)
    console.print(f"added {stored.ref}")


def _reward_function(path: Path, spec: dict, config: object) -> tuple[dict, dict]:
    """A `reward_function` tool file as the library stores it: kind "code", the reward
    function factory, its parameters (`{"params": {"source": ...}}`, or `source`, `bounds`...
    given directly in the config)."""
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: config must be an object")
    factory = config.get("factory", REWARD_FUNCTION_FACTORY)
    if factory != REWARD_FUNCTION_FACTORY:
        raise ConfigError(
            f'{path}: kind "reward_function" is built by {REWARD_FUNCTION_FACTORY}, not {factory!r}'
        )
    params = config.get("params", {k: v for k, v in config.items() if k != "factory"})
    if not isinstance(params, dict) or "source" not in params:
        raise ConfigError(f'{path}: a "reward_function" tool needs its code in params.source')
    return {**spec, "kind": "code"}, {"factory": REWARD_FUNCTION_FACTORY, "params": params}
