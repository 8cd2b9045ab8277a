"""`rewardsmith score INPUT -o OUTPUT`: score a JSONL file and print a table per task/tool.

Every input line is validated before anything is scored: a malformed line or one without
`completion` stops the command (exit 2) with each bad line's number, and no output is
written. Otherwise every input line yields exactly one output line, in order. The output is
written to a temporary file and renamed at the end, so an interrupted run leaves no partial
file behind. An OUTPUT that cannot be written (a file where its folder should be, no
permission) stops the command (exit 2) before anything is scored. An INPUT without a single
sample prints a warning on stderr, writes nothing and exits 0. A `--task-map` key that
matches no task in INPUT (a typo) stops the command (exit 2); samples of tasks the map does
not name get one summary warning (they are `not_applicable` unless `--tool` covers them).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rewardsmith.cli.common import (
    FallbackOption,
    LibraryOption,
    LLMKeyOption,
    LLMModelOption,
    LLMUrlOption,
    apply_llm_flags,
    err_console,
    llm_fallback,
    open_library,
    progress_bar,
    warn,
    warn_empty_input,
)
from rewardsmith.cli.growth import growth_table
from rewardsmith.cli.serve import LOCAL_RAY, RayOption
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.jsonl import (
    atomic_output,
    check_output_path,
    read_records,
    scored_record,
    write_line,
)
from rewardsmith.library.store import Library
from rewardsmith.scoring import Scorer, check_task_map, parse_task_map
from rewardsmith.types import STATUSES, Reward

console = PlainConsole()

# Samples handed to the scorer at once: large enough that GRPO groups and tool pools stay
# busy, small enough that the progress bar moves.
CHUNK_SIZE = 256

# Short column headers so the table fits 80 columns.
STATUS_LABELS = {"not_applicable": "n/a", "invalid_reference": "bad ref"}


@dataclass
class GroupStats:
    count: int = 0
    total: float = 0.0
    scored: int = 0
    seconds: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    #: (status, reason) of the samples that got no score: what the notes under the table say.
    unscored: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, reward: Reward, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds
        self.statuses[reward.status] += 1
        if reward.score is not None:
            self.total += reward.score
            self.scored += 1
        else:
            self.unscored[(reward.status, _reason_kind(reward.reason))] += 1


def score(
    input_path: Annotated[Path, typer.Argument(metavar="INPUT", help="JSONL file of samples.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write scored JSONL.")],
    tool: Annotated[
        str | None,
        typer.Option("--tool", "-t", help="Tool for every sample (NAME or NAME@VERSION)."),
    ] = None,
    task_map: Annotated[
        str | None,
        typer.Option("--task-map", help="Tool per `task` field: TASK=TOOL,TASK=TOOL,..."),
    ] = None,
    library: LibraryOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
    router: Annotated[
        str,
        typer.Option(
            "--backend",
            "-b",
            "--router",
            help="Router backend when neither --tool nor --task-map is given: embedded, llm, rules.",
        ),
    ] = "embedded",
    ray: RayOption = None,
    synthesize: Annotated[
        bool,
        typer.Option(
            "--synthesize",
            help="Samples the router sends to 'synthesize' get a synthesized, gated tool.",
        ),
    ] = False,
    llm_url: LLMUrlOption = None,
    llm_model: LLMModelOption = None,
    llm_key: LLMKeyOption = None,
    fallback: FallbackOption = None,
) -> None:
    """Score every line of INPUT with a tool, a tool per task, or (with neither) the tool(s)
    the router picks, and write OUTPUT."""
    apply_llm_flags(llm_url, llm_model, llm_key)
    use_fallback = llm_fallback(fallback)
    mapping = parse_task_map(task_map) if task_map else {}
    records = read_records(input_path)
    if not records:
        warn_empty_input(input_path, output)
        return
    if mapping:
        unmapped = check_task_map(
            mapping, (r.get("task") for r in records), has_default=tool is not None
        )
        if unmapped:
            listed = ", ".join(f"{task} ({n})" for task, n in list(unmapped.items())[:10])
            more = f" and {len(unmapped) - 10} more" if len(unmapped) > 10 else ""
            warn(
                f"{sum(unmapped.values())} sample(s) of task(s) the --task-map does not name "
                f"will be not_applicable (no --tool given): {listed}{more}"
            )
    check_output_path(output)
    if ray is not None:
        from rewardsmith.server.ray_backend import RayLibrary, start_ray

        start_ray(None if ray == LOCAL_RAY else ray)
        lib: Library = RayLibrary(library)
    else:
        lib = open_library(library)
    scorer = Scorer(
        tool, mapping, lib, router=router, synthesize=synthesize, llm_fallback=use_fallback
    )
    stats: dict[tuple[str, str], GroupStats] = defaultdict(GroupStats)
    grown = None
    try:
        with atomic_output(output) as handle, progress_bar(err_console, quiet) as progress:
            task_id = progress.add_task("scoring", total=len(records))
            for start in range(0, len(records), CHUNK_SIZE):
                chunk = records[start : start + CHUNK_SIZE]
                result = scorer.score(chunk)
                for record, reward, seconds in zip(chunk, result, result.seconds, strict=True):
                    write_line(handle, scored_record(record, reward))
                    key = (record.get("task") or "-", reward.tool or "-")
                    stats[key].add(reward, seconds)
                progress.advance(task_id, len(chunk))
        if synthesize:
            grown = growth_table(scorer, lib, stats)
    finally:
        scorer.close()
        lib.close()
    if not quiet:
        console.print(_table(stats))
        for note in not_scored_notes(stats):
            console.print(note, highlight=False, soft_wrap=True)
        if grown is not None:
            console.print(grown)
        console.print(f"wrote {len(records)} lines to {output}")


def _table(stats: dict[tuple[str, str], GroupStats]) -> Table:
    seen = {s for g in stats.values() for s in g.statuses}
    statuses = [s for s in STATUSES if s in seen]
    table = Table(title="rewards by task and tool")
    table.add_column("task")
    table.add_column("tool")
    for name in ("count", "mean reward", *(STATUS_LABELS.get(s, s) for s in statuses), "time (s)"):
        table.add_column(name, justify="right", no_wrap=True)
    for (task, tool), g in sorted(stats.items()):
        mean = f"{g.total / g.scored:.3f}" if g.scored else "not scored"
        tool = tool if tool != "-" else "(no tool)"
        counts = [str(g.statuses.get(s, 0)) for s in statuses]
        table.add_row(task, tool, str(g.count), mean, *counts, f"{g.seconds:.2f}")
    return table


# Where a reason's useful part ends: router reasons carry the signature's details after it.
_REASON_CHARS = 150
# What a user can do about the common reasons a sample was not scored.
_HINTS = {
    "synthesis requested": "pass --synthesize to build and gate a tool for them, or --tool",
    "not in the task map": "add the task to --task-map, or pass --tool for the rest",
    "no `task` field": "add a `task` field, or pass --tool for the rest",
}


def _reason_kind(reason: str) -> str:
    """A reason shortened to what samples of one kind share (the first clause)."""
    head = reason.split(": ", 2)
    text = ": ".join(head[:2]) if reason.startswith("router") else reason
    return text[:_REASON_CHARS]


def not_scored_notes(stats: dict[tuple[str, str], GroupStats]) -> list[str]:
    """One line per (task, status, reason) of the samples that got no score, with what to do
    about it: a row of `-` means and `n/a` counts alone does not say why."""
    notes = []
    for (task, _tool), g in sorted(stats.items()):
        for (status, reason), n in g.unscored.most_common():
            hint = next((h for key, h in _HINTS.items() if key in reason), "")
            notes.append(
                f"not scored: {n} sample(s) of task {task} ({status}): {reason}"
                + (f" -> {hint}" if hint else "")
            )
    if notes:
        total = sum(sum(g.unscored.values()) for g in stats.values())
        notes.insert(0, f"{total} sample(s) got no score (reward null in the output):")
    return notes
