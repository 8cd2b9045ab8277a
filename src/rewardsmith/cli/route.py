"""`rewardsmith route INPUT -o OUTPUT` and `rewardsmith route fit LABELED`.

`route INPUT -o OUTPUT` (short for `route run`) writes every input line with a `route`
field: `{action, tools: [{tool, weight}], confidence, backend, signature}` plus, for
"synthesize", `{kind, why}`. Input and OUTPUT are checked first, as for `score` (an
empty INPUT warns, writes nothing and exits 0); the output is written atomically.
Decisions and synthesis requests are logged in the library per signature. `route fit`
learns from lines with a `label` field (a tool name or "synthesize") and stores what it
learned in the library.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from typer.core import TyperGroup

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
    warn_empty_input,
)
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.errors import InputError
from rewardsmith.jsonl import atomic_output, check_output_path, read_records, write_line
from rewardsmith.router.decision import Decision
from rewardsmith.router.router import BACKENDS, Router

console = PlainConsole()

# Samples routed at once: one embedding pass per chunk, and the progress stays visible.
CHUNK_SIZE = 1024
# Signatures listed in the summary table (the most frequent first).
TABLE_ROWS = 25


class _DefaultRun(TyperGroup):
    """`route INPUT ...` means `route run INPUT ...`; `route fit ...` stays a subcommand."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: typer's click Context
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_DefaultRun,
    help="Route samples to library tools: `route INPUT -o OUTPUT`, `route fit LABELED`.",
    no_args_is_help=True,
)

BackendOption = Annotated[
    str, typer.Option("--backend", "-b", help=f"Router backend: {', '.join(BACKENDS)}.")
]


@app.command("run")
def run(
    input_path: Annotated[Path, typer.Argument(metavar="INPUT", help="JSONL file of samples.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write routed JSONL.")],
    backend: BackendOption = "embedded",
    threshold: Annotated[
        float | None,
        typer.Option(help="Confidence below which the router asks for synthesis."),
    ] = None,
    library: LibraryOption = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar or summary table.")
    ] = False,
    llm_url: LLMUrlOption = None,
    llm_model: LLMModelOption = None,
    llm_key: LLMKeyOption = None,
    fallback: FallbackOption = None,
) -> None:
    """Write every line of INPUT with a `route` field (tools, weights, confidence, backend)."""
    apply_llm_flags(llm_url, llm_model, llm_key)
    use_fallback = llm_fallback(fallback)
    records = read_records(input_path)
    if not records:
        warn_empty_input(input_path, output)
        return
    check_output_path(output)
    lib = open_library(library)
    try:
        router = Router(lib, backend, threshold=threshold, llm_fallback=use_fallback)  # type: ignore[arg-type]
    except BaseException:
        lib.close()
        raise
    counts: Counter[str] = Counter()
    decided: dict[str, Decision] = {}
    try:
        with atomic_output(output) as handle, progress_bar(err_console, quiet) as progress:
            task_id = progress.add_task("routing", total=len(records))
            for start in range(0, len(records), CHUNK_SIZE):
                chunk = records[start : start + CHUNK_SIZE]
                for record, decision in zip(chunk, router.route(chunk), strict=True):
                    write_line(handle, {**record, "route": decision.to_dict()})
                    counts[decision.signature] += 1
                    decided[decision.signature] = decision
                progress.advance(task_id, len(chunk))
    finally:
        router.close()
        lib.close()
    if not quiet:
        console.print(_table(counts, decided))
        synth = sum(n for sig, n in counts.items() if decided[sig].action != "tool")
        console.print(
            f"wrote {len(records)} lines to {output}; {len(counts)} signatures, "
            f"{synth} samples sent to synthesize"
        )


@app.command("fit")
def fit(
    labeled: Annotated[
        Path,
        typer.Argument(help='JSONL samples, each with "label": a tool name or "synthesize".'),
    ],
    library: LibraryOption = None,
    label_field: Annotated[str, typer.Option(help="The field holding the label.")] = "label",
) -> None:
    """Learn from labeled samples; the learned exemplars and weights go into the library."""
    records = read_records(labeled)
    missing = [i + 1 for i, r in enumerate(records) if not isinstance(r.get(label_field), str)]
    if missing:
        shown = ", ".join(map(str, missing[:20]))
        raise InputError(f"{labeled}: records without a string {label_field!r}: {shown}")
    with open_library(library) as lib:
        router = Router(lib, "embedded", log_events=False)
        result: dict[str, Any] = router.fit(records, [r[label_field] for r in records])
    console.print(
        f"fitted on {result['examples']} examples: accuracy {result['accuracy_before']:.3f} "
        f"-> {result['accuracy_after']:.3f}; learned exemplars {result['learned_exemplars']}"
    )


def _table(counts: Counter[str], decided: dict[str, Decision]) -> Table:
    table = Table(title="routing by task signature")
    table.add_column("signature", overflow="fold")
    table.add_column("decision")
    table.add_column("confidence", justify="right")
    table.add_column("samples", justify="right")
    for sig, n in counts.most_common(TABLE_ROWS):
        d = decided[sig]
        what = (
            " + ".join(f"{t.tool} x{t.weight:g}" for t in d.tools)
            if d.action == "tool"
            else f"synthesize ({d.kind})"
        )
        table.add_row(sig, what, f"{d.confidence:.2f}", str(n))
    if len(counts) > TABLE_ROWS:
        table.add_row(f"... {len(counts) - TABLE_ROWS} more", "", "", "")
    return table
