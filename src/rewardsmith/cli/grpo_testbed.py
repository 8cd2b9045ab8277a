"""`rewardsmith grpo testbed`: where a testbed policy comes from, and its rebuild from the recipe.

The default presets ship with the package (`rewardsmith.rl.shipped`); `--rebuild` trains the
preset again from its recipe (with progress) and compares the result with the shipped files
by SHA-256 (exit 3 when they differ); `--ship` (maintainers) copies a build into the package.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from rewardsmith.cli.grpo_common import require_torch
from rewardsmith.errors import ConfigError
from rewardsmith.models.loading import torch_threads

console = Console()


def _accuracy_rows(record: dict[str, Any]) -> list[tuple[str, str]]:
    ev = record.get("eval") or {}
    rows = []
    if "accuracy" in ev:
        a = ev["accuracy"]
        rows.append(("all", f"{a['value']:.3f} [{a['low']:.3f}, {a['high']:.3f}] (n={ev['n']})"))
    for task, part in (ev.get("tasks") or {}).items():
        a = part["accuracy"]
        rows.append((task, f"{a['value']:.3f} [{a['low']:.3f}, {a['high']:.3f}] (n={part['n']})"))
    return rows


def testbed_cmd(
    preset: Annotated[
        str, typer.Option(help="testbed, testbed-multi, testbed-tiny or testbed-multi-tiny.")
    ] = "testbed",
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="Train the preset again from its recipe and compare it with the shipped files "
            "(exit 3 when they differ).",
        ),
    ] = False,
    ship: Annotated[
        bool,
        typer.Option(
            "--ship",
            help="Copy the cached build into the package (maintainers, after a recipe change).",
        ),
    ] = False,
    threads: Annotated[int, typer.Option(help="torch CPU threads (the shipped builds: 1).")] = 1,
) -> None:
    """Show where a testbed policy loads from (shipped, cached or built) and its held-out
    accuracy; --rebuild checks that the recipe reproduces the shipped files."""
    require_torch()
    from rewardsmith.rl.policies import PRESETS, build_testbed, testbed_dir
    from rewardsmith.rl.shipped import compare_builds, read_manifest, shipped_build, shipped_dir
    from rewardsmith.rl.shipped import ship as ship_build
    from rewardsmith.rl.testbed import TESTBED_FILE

    if preset not in PRESETS:
        raise ConfigError(f"unknown testbed preset {preset!r}; known: {', '.join(PRESETS)}")
    torch_threads(threads)
    config = PRESETS[preset]
    shipped = shipped_build(config)
    folder = shipped
    if rebuild or ship:
        folder = build_testbed(config, force=rebuild, progress=console.log)
    elif folder is None:
        folder = build_testbed(config, progress=console.log)
    record = json.loads((folder / TESTBED_FILE).read_text(encoding="utf-8"))
    table = Table(title=f"{preset} ({config.key()})")
    table.add_column("")
    table.add_column("", overflow="fold")
    source = "shipped with the package" if folder == shipped else "cache"
    table.add_row("loads from", f"{folder} ({source})")
    table.add_row("parameters", f"{record.get('parameters', 0):,}")
    table.add_row(
        "build", f"{record.get('build_seconds')} s, {record.get('torch_threads')} thread(s)"
    )
    for name, cell in _accuracy_rows(record):
        table.add_row(f"held-out accuracy: {name}", cell)
    console.print(table)
    if ship:
        dest = ship_build(folder, config)
        console.print(f"shipped {folder} -> {dest}")
        return
    if rebuild:
        manifest = read_manifest(shipped_dir(config))
        if manifest is None:
            console.print(
                f"no shipped build of {preset} to compare with; rebuilt in {testbed_dir(config)}"
            )
            return
        check = compare_builds(shipped_dir(config), folder, preset)
        console.print_json(json.dumps(check.to_dict()))
        if not check.reproduced:
            console.print(
                "[yellow]the rebuild differs from the shipped files[/] (same torch version "
                f"{manifest.get('torch_version')} and {manifest.get('torch_threads')} thread(s) "
                "reproduce them byte for byte on the CPU they were built on)"
            )
            raise typer.Exit(3)
        console.print("the rebuild is identical to the shipped files")
