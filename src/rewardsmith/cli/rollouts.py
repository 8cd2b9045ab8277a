"""`rewardsmith rescore | compare | profile`: rollouts as data (docs/rollouts.md).

Each reads a rollout file (`rewardsmith.rollout_log`: what `score -o`, `grpo train
--log-completions-every`, the TRL adapter's `rollout_log` and `serve --request-log` write),
validates every line before anything is scored (exit 2 naming the bad lines), and prints a
short table. `compare` records the comparison in the library's event log (`tools history`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rewardsmith.cli.common import (
    LibraryOption,
    err_console,
    open_library,
    progress_bar,
    warn,
    write_plot,
)
from rewardsmith.errors import InputError
from rewardsmith.jsonl import atomic_output, check_output_path
from rewardsmith.library.store import Library, parse_tool_ref
from rewardsmith.rollout_log import Rollout, read_rollouts

console = Console()

#: Flips `compare` prints (all of them are in --json).
SHOWN_FLIPS = 20
#: Flagged prompts `profile` prints (all of them are in --json).
SHOWN_PROMPTS = 10
# What a flip row shows of the reason and the completion (both whole in --json).
REASON_CHARS = 100
COMPLETION_CHARS = 80

RolloutsArg = Annotated[
    Path,
    typer.Argument(
        metavar="ROLLOUTS",
        help="Rollout JSONL: `score -o` output, `grpo train` completions.jsonl, a TRL "
        "rollout_log or a `serve --request-log` file.",
    ),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")]
ThresholdOption = Annotated[
    float, typer.Option("--threshold", help="A score at or above this passes.")
]
JsonOption = Annotated[
    Path | None, typer.Option("--json", help="Write the whole report (every row) here.")
]
PlotOption = Annotated[Path | None, typer.Option("--plot", help="Draw the report to this PNG.")]


def _read(path: Path) -> list[Rollout]:
    rollouts = read_rollouts(path)
    if not rollouts:
        raise InputError(f"{path} holds no rollouts (no non-blank lines)")
    return rollouts


def _tool_ref(library: Library, ref: str) -> str:
    """`name@version` of a tool reference (raises for an unknown tool or version)."""
    name, version = parse_tool_ref(ref)
    return library.record(name, version).spec.ref


def _score(rollouts: list[Rollout], tool: str, library: Library, quiet: bool) -> list[Any]:
    from rewardsmith.rollouts.rescore import score_rollouts

    with progress_bar(err_console, quiet) as bar:
        task = bar.add_task(f"scoring with {tool}", total=len(rollouts))
        return score_rollouts(rollouts, tool, library, lambda n: bar.advance(task, n))


def _write_json(path: Path | None, report: dict[str, Any]) -> None:
    if path is None:
        return
    with atomic_output(path) as handle:
        handle.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    err_console.print(f"report: {path}", highlight=False, soft_wrap=True)


def _text(value: object) -> Text:
    """A table cell for data from the file (tasks, prompts, completions, reasons): printed as
    written, never read as rich markup, control characters (terminal escapes) replaced."""
    raw = "-" if value is None else str(value)
    return Text("".join(ch if ch.isprintable() or ch == " " else "\ufffd" for ch in raw))


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def rescore(
    rollouts_path: RolloutsArg,
    tool: Annotated[str, typer.Option("--tool", "-t", help="Tool to score with: NAME[@VERSION].")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the rollouts.")],
    library: LibraryOption = None,
    quiet: QuietOption = False,
) -> None:
    """Score stored rollouts again with any tool version; each output line keeps the stored
    reward under `previous`."""
    from rewardsmith.rollouts.rescore import write_rescored

    rollouts = _read(rollouts_path)
    check_output_path(output)
    with open_library(library) as lib:
        ref = _tool_ref(lib, tool)
        rewards = _score(rollouts, tool, lib, quiet)
    with atomic_output(output) as handle:
        changes = write_rescored(handle, rollouts, rewards)
    if quiet:
        return
    table = Table(title=f"rescored with {ref}: rewards before and after, by task")
    table.add_column("task")
    for col in ("rollouts", "mean before", "mean after", "changed", "not scored"):
        table.add_column(col, justify="right")
    for task, change in sorted(changes.items()):
        d = change.to_dict()
        table.add_row(
            _text(task),
            str(d["samples"]),
            _fmt(d["previous_mean"]),
            _fmt(d["mean"]),
            str(d["changed"]),
            str(d["not_scored"]),
        )
    console.print(table)
    console.print(f"wrote {len(rollouts)} lines to {output}", highlight=False, soft_wrap=True)


def compare(
    rollouts_path: RolloutsArg,
    tool: Annotated[str, typer.Option("--tool", "-t", help="Tool A: NAME[@VERSION].")],
    against: Annotated[str, typer.Option("--against", help="Tool B: NAME[@VERSION].")],
    json_out: JsonOption = None,
    plot: PlotOption = None,
    threshold: ThresholdOption = 1.0,
    library: LibraryOption = None,
    quiet: QuietOption = False,
) -> None:
    """Both tools' verdicts on identical rollouts: agreement, confusion table, exact McNemar
    overall and per task, and every rollout whose verdict flips."""
    from rewardsmith.rollouts.compare import compare_rewards, event_detail

    rollouts = _read(rollouts_path)
    for path in (json_out, plot):
        if path is not None:
            check_output_path(path)
    with open_library(library) as lib:
        ref_a, ref_b = _tool_ref(lib, tool), _tool_ref(lib, against)
        if ref_a == ref_b:
            raise InputError(f"--tool and --against are the same tool ({ref_a}); name two")
        a = _score(rollouts, tool, lib, quiet)
        b = _score(rollouts, against, lib, quiet)
        report = compare_rewards(rollouts, a, b, threshold=threshold)
        report = {"input": str(rollouts_path), "tool": ref_a, "against": ref_b, **report}
        lib.log_event(
            "compare", parse_tool_ref(ref_a)[0], **event_detail(report, str(rollouts_path))
        )
    _write_json(json_out, report)
    if plot is not None:
        from rewardsmith.report.rollout_plots import plot_compare

        write_plot(plot_compare, report, plot)
    if not quiet:
        _print_compare(report)


def _print_compare(report: dict[str, Any]) -> None:
    a, b = report["tool"], report["against"]
    confusion = Table(title=f"verdicts on {report['samples']} rollouts: {a} (rows) x {b}")
    confusion.add_column(f"{a} \\ {b}")
    verdicts = list(report["confusion"])
    for v in verdicts:
        confusion.add_column(v, justify="right")
    for v in verdicts:
        confusion.add_row(v, *(str(report["confusion"][v][w]) for w in verdicts))
    console.print(confusion)
    tasks = Table(title="by task: exact McNemar on the rollouts both scored (Bonferroni)")
    tasks.add_column("task")
    for col in ("rollouts", "agree", f"pass {a}", f"pass {b}", f"only {a}", f"only {b}", "p"):
        tasks.add_column(col, justify="right")
    for task, t in report["by_task"].items():
        tasks.add_row(
            _text(task),
            str(t["samples"]),
            f"{t['agreement']:.1%}",
            str(t["pass_a"]),
            str(t["pass_b"]),
            str(t["only_a"]),
            str(t["only_b"]),
            f"{t['p_bonferroni']:.3g}",
        )
    console.print(tasks)
    flips = report["flips"]
    if flips:
        shown = Table(title=f"flips: {len(flips)} rollout(s) whose verdict differs")
        for col in ("line", "task", a, b, f"why ({b})", "completion"):
            shown.add_column(col, overflow="fold")
        for f in flips[:SHOWN_FLIPS]:
            shown.add_row(
                str(f["line"]),
                _text(f["task"]),
                f"{f['a']['verdict']} {_fmt(f['a']['reward'], '.2f')}",
                f"{f['b']['verdict']} {_fmt(f['b']['reward'], '.2f')}",
                _text(f["b"]["reason"][:REASON_CHARS]),
                _text(f["completion"][:COMPLETION_CHARS]),
            )
        console.print(shown)
        if len(flips) > SHOWN_FLIPS:
            console.print(f"... and {len(flips) - SHOWN_FLIPS} more (all in --json)")
    test = report["mcnemar"]
    console.print(
        f"agreement {report['agreement']:.1%}; exact McNemar over {test['paired']} rollouts "
        f"both scored: only {a} passes {test['only_a']}, only {b} passes {test['only_b']}, "
        f"p = {test['p_value']:.3g}",
        highlight=False,
        soft_wrap=True,
    )


def profile(
    rollouts_path: RolloutsArg,
    by: Annotated[str, typer.Option("--by", help="Break down by: task, tool, step, source.")] = (
        "task"
    ),
    json_out: JsonOption = None,
    plot: PlotOption = None,
    threshold: ThresholdOption = 1.0,
    part: Annotated[
        str | None,
        typer.Option(
            "--part",
            help="Profile one part of a weighted reward (a `components` key, e.g. gsm8k of "
            "a gsm8k,format_tags GRPO run) instead of the total.",
        ),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Rewards before training: per task the pass rate, mean and variance, the share of
    GRPO groups whose rewards are all equal (dead: no signal), unscored rollouts by status;
    flags prompts whose every group is dead."""
    from rewardsmith.rollouts.profile import profile as build_profile
    from rewardsmith.rollouts.profile import select_part

    rollouts = _read(rollouts_path)
    if part is not None:
        rollouts = select_part(rollouts, part)
    for path in (json_out, plot):
        if path is not None:
            check_output_path(path)
    report = {"input": str(rollouts_path), "part": part, **build_profile(rollouts, by, threshold)}
    if report["without_reward"]:
        warn(f"{report['without_reward']} line(s) have no reward and are left out")
    _write_json(json_out, report)
    if plot is not None:
        from rewardsmith.report.rollout_plots import plot_profile

        write_plot(plot_profile, report, plot)
    if not quiet:
        _print_profile(report)


def _print_profile(report: dict[str, Any]) -> None:
    table = Table(title=f"rewards by {report['by']} (pass: score >= {report['threshold']:g})")
    table.add_column(report["by"])
    for col in ("rollouts", "pass rate", "mean", "variance", "groups", "dead", "not scored"):
        table.add_column(col, justify="right")
    rows = [*report["keys"].items(), ("all", report["overall"])]
    for key, k in rows:
        dead = (
            "-"
            if k["dead_share"] is None
            else (
                f"{k['dead_groups']} ({k['dead_share']:.0%}: {k['dead_all_pass']} pass, "
                f"{k['dead_all_fail']} fail, {k['dead_other']} other)"
            )
        )
        not_scored = ", ".join(f"{s} {n}" for s, n in k["not_scored"].items()) or "0"
        table.add_row(
            _text(key),
            str(k["samples"]),
            _fmt(k["pass_rate"], ".1%"),
            _fmt(k["mean"]),
            _fmt(k["variance"]),
            str(k["groups"]),
            dead,
            not_scored,
        )
    console.print(table)
    flagged = report["flagged_prompts"]
    if flagged:
        shown = Table(title=f"{len(flagged)} prompt(s) give GRPO no signal (every group dead)")
        for col in ("rollouts", "groups", "rewards", "why", "prompt"):
            shown.add_column(col, overflow="fold")
        for f in flagged[:SHOWN_PROMPTS]:
            shown.add_row(
                str(f["samples"]),
                str(f["groups"]),
                ", ".join(f"{v:g}" for v in f["rewards"]),
                f["why"],
                _text(f["prompt"]),
            )
        console.print(shown)
        if len(flagged) > SHOWN_PROMPTS:
            console.print(f"... and {len(flagged) - SHOWN_PROMPTS} more (all in --json)")
    overall = report["overall"]
    if overall["single_rollout_groups"]:
        console.print(
            f"{overall['single_rollout_groups']} group(s) hold one rollout (no group to "
            "compare with): `group` or `step` + prompt fields make GRPO groups",
            highlight=False,
            soft_wrap=True,
        )
