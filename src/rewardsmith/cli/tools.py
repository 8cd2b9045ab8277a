"""`rewardsmith tools list|show|add|retire|history`: look at and manage the tool library."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from rewardsmith.cli.common import LibraryOption, open_library
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.errors import ConfigError
from rewardsmith.library.names import TOOL_NAME_RULE, valid_tool_name
from rewardsmith.library.registry import REWARD_FUNCTION_FACTORY
from rewardsmith.library.store import parse_tool_ref
from rewardsmith.types import ToolSpec

app = typer.Typer(help="The tool library: list, show, add, retire, history.", no_args_is_help=True)
console = PlainConsole()
err_console = PlainConsole(stderr=True)

# Descriptions are cut in the list view; `tools show` prints them whole.
LIST_DESCRIPTION_CHARS = 30
# Events `tools history` shows at once (the newest; `--page 2` the ones before them).
HISTORY_PAGE = 50
# Characters of an event's detail in the history table (`tools show` and the file have all).
HISTORY_DETAIL_CHARS = 300
# `"kind": "reward_function"` in a tool file: a generated `def reward(...)`, stored as a tool
# of kind "code" built by REWARD_FUNCTION_FACTORY (its 4-stage check runs when it is added).
REWARD_FUNCTION_KIND = "reward_function"
# Origins only rewardsmith records: a tool file claiming one is refused.
RESERVED_PROVENANCES = {
    "synth": "only a tool the admission gate admitted is synthesized",
    "builtin": "the built-in tools register themselves",
}


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
            if not valid_tool_name(s.name):
                name = f"{s.ref!r} (bad name)"
            table.add_row(Text(name), s.kind, s.provenance, Text(desc))  # no markup in names
        console.print(table)
    bad = [r.spec.name for r in records if not valid_tool_name(r.spec.name)]
    if bad:
        err_console.print(
            f"warning: {len(bad)} stored tool name(s) break the rule {TOOL_NAME_RULE} "
            f"({', '.join(repr(b) for b in bad)}): they are not used; add each again under a "
            "valid name and retire the old one (`tools retire NAME`)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


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
        int,
        typer.Option(
            "--limit", "-n", help=f"Events per page (default {HISTORY_PAGE}); 0 shows them all."
        ),
    ] = HISTORY_PAGE,
    page: Annotated[
        int, typer.Option("--page", help="1: the newest events; 2: the ones before...")
    ] = 1,
) -> None:
    """The library's append-only event log, oldest first, a page at a time (the newest
    page by default)."""
    if limit < 0 or page < 1:
        raise ConfigError("--limit must be >= 0 and --page >= 1")
    with open_library(library) as lib:
        if name is not None:
            lib.versions(name)  # unknown names get the list of known ones
        total = lib.count_events(name)
        events = lib.history(name, limit or None, offset=(page - 1) * limit)
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
            _clip(json.dumps(detail), HISTORY_DETAIL_CHARS) if detail else "",
        )
    console.print(table)
    if limit and total > len(events):
        first = max(total - page * limit, 0) + 1
        shown = f"events {first}-{first + len(events) - 1}" if events else "no events"
        older = f"; older: --page {page + 1}" if first > 1 else ""
        console.print(f"{shown} of {total}{older}; all at once: --limit 0", highlight=False)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


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
    claimed = spec_data.get("provenance") if isinstance(spec_data, dict) else None
    if claimed in RESERVED_PROVENANCES:
        raise ConfigError(
            f'{path}: "provenance": "{claimed}" is set by rewardsmith itself '
            f"({RESERVED_PROVENANCES[claimed]}), never read from a file; leave it out (it "
            'becomes "user") or name another origin'
        )
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
