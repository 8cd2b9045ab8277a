"""`rewardsmith synth codeverify|gate|wrapllm`: grow the library, behind the admission gate.

Exit codes (scripts rely on them): 0 admitted (or, for `gate`, would be admitted), 3 rejected
by the gate (the report says which check and its numbers; a synthesized candidate is still
stored, retired, with its reasons), 2 bad input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from rewardsmith.cli.common import (
    LibraryOption,
    LLMKeyOption,
    LLMModelOption,
    LLMUrlOption,
    apply_llm_flags,
    open_library,
)
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.errors import ConfigError
from rewardsmith.files import atomic_write

app = typer.Typer(
    help="Synthesize reward tools (CodeVerify, WrapLLM) and gate them before use.",
    no_args_is_help=True,
)
console = PlainConsole()

EXIT_ADMITTED = 0
EXIT_BAD_INPUT = 2
EXIT_REJECTED = 3
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,79}$")

ExamplesArg = Annotated[Path, typer.Argument(metavar="EXAMPLES", help="Examples JSONL file.")]
JsonOption = Annotated[
    Path | None, typer.Option("--json", help="Write the full report as JSON to this file.")
]
MinAccuracy = Annotated[
    float, typer.Option(help="Gate: minimum held-out accuracy at threshold 0.5.")
]
MinAuc = Annotated[float, typer.Option(help="Gate: minimum held-out AUC (right vs wrong).")]
MaxProbeWinRate = Annotated[
    float,
    typer.Option(help="Gate: share of a probe kind allowed to score as high as a right answer."),
]


def _check_name(name: str) -> str:
    if not _NAME.match(name) or name.endswith(".rejected"):
        raise ConfigError(
            f"bad tool name {name!r}: use letters, digits, '_', '-' or '.' (up to 80), "
            "not starting with '-' or '.', not ending in '.rejected'"
        )
    return name


def _gate_config(min_accuracy: float, min_auc: float, max_probe_win_rate: float) -> Any:
    from rewardsmith.synth.gate import GateConfig

    for label, v in (("min-accuracy", min_accuracy), ("min-auc", min_auc)):
        if not 0.0 <= v <= 1.0:
            raise ConfigError(f"--{label} must be within [0, 1], got {v}")
    if not 0.0 <= max_probe_win_rate <= 1.0:
        raise ConfigError(f"--max-probe-win-rate must be within [0, 1], got {max_probe_win_rate}")
    return GateConfig(
        min_accuracy=min_accuracy, min_auc=min_auc, max_probe_win_rate=max_probe_win_rate
    )


def _write_json(path: Path | None, payload: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(payload, indent=2, default=str) + "\n")


def _print_report(report: dict[str, Any]) -> None:
    """The gate's checks as a short table."""
    checks = report.get("checks", {})
    table = Table(title=f"gate: {report.get('tool')}")
    table.add_column("check")
    table.add_column("result")
    table.add_column("numbers", overflow="fold")
    failed = report.get("failed_check")
    reached = True
    for check in ("runs", "held_out", "probes"):
        if check not in checks:
            table.add_row(check, "not reached" if not reached else "-", "")
            continue
        result = "FAIL" if failed == check else "pass"
        if failed == check:
            reached = False
        table.add_row(check, result, _numbers(check, checks[check]))
    console.print(table)


def _numbers(check: str, data: dict[str, Any]) -> str:
    if check == "runs":
        if not data.get("built", True):
            return str(data.get("reason", ""))
        return f"{data.get('samples', 0)} samples, {data.get('errors', 0)} errors"
    if check == "held_out":
        return (
            f"accuracy {data.get('accuracy')}, AUC {data.get('auc')} on {data.get('cases')} "
            f"cases ({data.get('positives')} right, {data.get('negatives')} wrong) from "
            f"{data.get('examples')} held-out examples"
        )
    return ", ".join(
        f"{kind} {v['wins']}/{v['probes']} (max {v['max']})" for kind, v in data.items()
    )


def _finish(outcome: Any, json_path: Path | None) -> None:
    _write_json(json_path, outcome.to_dict())
    _print_report(outcome.report.to_dict())
    if outcome.admitted:
        console.print(
            f"admitted as {outcome.stored_as}: {outcome.reason}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(EXIT_ADMITTED)
    where = (
        f"the candidate is stored, retired, as {outcome.stored_as}"
        if outcome.stored_as
        else "no candidate was stored"
    )
    console.print(f"rejected: {outcome.reason}\n{where}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_REJECTED)


@app.command("codeverify")
def codeverify_cmd(
    examples: ExamplesArg,
    name: Annotated[str, typer.Option("--name", help="Name of the new tool.")],
    backend: Annotated[
        str, typer.Option(help="offline (search over primitives) or llm (see --llm-url).")
    ] = "offline",
    library: LibraryOption = None,
    json_report: JsonOption = None,
    attempts: Annotated[int, typer.Option(help="LLM backend: answers to try at most.")] = 3,
    min_accuracy: MinAccuracy = 0.9,
    min_auc: MinAuc = 0.9,
    max_probe_win_rate: MaxProbeWinRate = 0.0,
    llm_url: LLMUrlOption = None,
    llm_model: LLMModelOption = None,
    llm_key: LLMKeyOption = None,
) -> None:
    """Write a verifier from EXAMPLES, gate it, and register it as NAME (provenance synth)."""
    apply_llm_flags(llm_url, llm_model, llm_key)
    from rewardsmith.synth.examples import load_examples
    from rewardsmith.synth.pipeline import codeverify

    _check_name(name)
    config = _gate_config(min_accuracy, min_auc, max_probe_win_rate)
    if backend not in ("offline", "llm"):
        raise ConfigError(f"--backend must be offline or llm, got {backend!r}")
    rows = load_examples(examples)
    with open_library(library) as lib:
        outcome = codeverify(
            rows, name, lib, backend=backend, gate_config=config, max_attempts=attempts
        )
    if backend == "llm":
        tries = outcome.details.get("attempts", [])
        console.print(
            f"LLM: {len(tries)} attempt(s); "
            + "; ".join(f"#{t['attempt']}: {t.get('error', 'ok')}" for t in tries),
            highlight=False,
            soft_wrap=True,
        )
    _finish(outcome, json_report)


@app.command("gate")
def gate_cmd(
    tool: Annotated[str, typer.Option("--tool", help="Tool to audit: NAME or NAME@VERSION.")],
    examples: Annotated[Path, typer.Option("--examples", help="Examples JSONL file.")],
    library: LibraryOption = None,
    json_report: JsonOption = None,
    min_accuracy: MinAccuracy = 0.9,
    min_auc: MinAuc = 0.9,
    max_probe_win_rate: MaxProbeWinRate = 0.0,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Seed of the probes (default: fresh; the report keeps it)."),
    ] = None,
) -> None:
    """Run the admission gate on any tool; exit 0 if it would be admitted, 3 if not."""
    from rewardsmith.synth.examples import load_examples
    from rewardsmith.synth.gate import gate_tool

    config = _gate_config(min_accuracy, min_auc, max_probe_win_rate)
    rows = load_examples(examples)
    with open_library(library) as lib:
        built = lib.get(tool)
        report = gate_tool(
            built,
            rows,
            config=config,
            library=lib,
            name=built.spec.name,
            extra={"audit": True},
            seed=seed,
        )
    payload = report.to_dict()
    _write_json(json_report, payload)
    _print_report(payload)
    console.print(
        ("would be admitted: " if report.admitted else "") + report.reason,
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_ADMITTED if report.admitted else EXIT_REJECTED)


@app.command("wrapllm")
def wrapllm_cmd(
    task: Annotated[str, typer.Option("--task", help="What the reward model should judge.")],
    examples: Annotated[Path, typer.Option("--examples", help="Examples JSONL file.")],
    name: Annotated[str, typer.Option("--name", help="Name of the new tool.")],
    model_dir: Annotated[
        list[Path] | None,
        typer.Option("--model-dir", help="Folder holding reward models (repeatable)."),
    ] = None,
    online: Annotated[
        bool, typer.Option("--online", help="Also search the Hugging Face Hub (downloads).")
    ] = False,
    library: LibraryOption = None,
    json_report: JsonOption = None,
    min_accuracy: MinAccuracy = 0.9,
    min_auc: MinAuc = 0.9,
    max_probe_win_rate: MaxProbeWinRate = 0.0,
) -> None:
    """Find a local reward model that fits TASK, calibrate it on EXAMPLES, gate it, register
    it as NAME."""
    from rewardsmith.synth.examples import load_examples
    from rewardsmith.synth.wrapllm import wrapllm

    _check_name(name)
    config = _gate_config(min_accuracy, min_auc, max_probe_win_rate)
    rows = load_examples(examples)
    with open_library(library) as lib:
        outcome = wrapllm(
            task,
            rows,
            name,
            lib,
            model_dirs=list(model_dir or []),
            online=online,
            gate_config=config,
        )
    tried = outcome.details.get("tried", [])
    for t in tried:
        console.print(
            f"tried {t['model_id']} (fit {t['fit']:.2f}): {t['result']}",
            highlight=False,
            soft_wrap=True,
        )
    _finish(outcome, json_report)
