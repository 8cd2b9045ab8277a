"""`rewardsmith bench routing`: the router's accuracy, synthesize share and cost (see
`rewardsmith.bench.routing`)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from rewardsmith.cli.common import err_console
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.errors import InputError
from rewardsmith.files import atomic_write

app = typer.Typer(
    help="Benchmarks that compare against a baseline in the same run.", no_args_is_help=True
)
console = PlainConsole(width=140)  # the confusion table is wide

DEFAULT_DATA = Path("../shared/data")
ACCURACY_TARGET = 0.95
SYNTHESIZE_TARGET = 0.90


@app.command("routing")
def routing(
    data: Annotated[Path, typer.Option(help="The shared data folder.")] = DEFAULT_DATA,
    seed: Annotated[int, typer.Option(help="Seed of the labeled set.")] = 0,
    fit: Annotated[
        bool, typer.Option("--fit", help="Also fit on the fit split and report.")
    ] = False,
    timing: Annotated[bool, typer.Option(help="Time a batch of 1,000 prompts.")] = True,
    hard: Annotated[
        bool,
        typer.Option(
            "--hard", help="Also route the hard slice (no surface markers) against baselines."
        ),
    ] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write all numbers here.")] = None,
) -> None:
    """Route a labeled mixed-task set with and without task fields; print accuracy, the share
    of out-of-library tasks sent to synthesize, a confusion table and routing cost."""
    if not (data / "gsm8k").is_dir():
        raise InputError(f"{data} is not the shared data folder (no gsm8k/ inside); pass --data")
    logging.getLogger("rewardsmith").setLevel(logging.ERROR)
    from rewardsmith.bench.routing import run

    start = time.perf_counter()

    def stage(what: str) -> None:  # on stderr: stdout stays the tables
        err_console.print(f"[{time.perf_counter() - start:5.0f} s] {what}...", highlight=False)

    out = run(data, seed=seed, fit=fit, do_timing=timing, hard=hard, progress=stage)
    err_console.print(f"[{time.perf_counter() - start:5.0f} s] done", highlight=False)
    table = Table(
        title=f"routing on {out['items']} labeled samples (code tool: {out['code_tool']})"
    )
    table.add_column("router")
    for col in ("accuracy", "to synth.", "kind ok", "conf. wrong", ">=0.9 wrong", "sigs"):
        table.add_column(col, justify="right", no_wrap=True)
    names = {
        "rules": "baseline: rules, no task",
        "embedded": "embedded, no task",
        "embedded_task": "embedded, task field",
        "embedded_fitted": "embedded, fitted",
        "embedded_no_code": "embedded, no code tool",
        "hard_markers": "hard slice, baseline: markers only",
        "hard_rules": "hard slice, baseline: rules (no embeddings)",
        "hard": "hard slice, embedded",
        "hard_fitted": "hard slice, embedded, fitted",
    }
    for key, name in names.items():
        if key in out:
            r = out[key]
            table.add_row(
                name,
                f"{r['accuracy']:.1%}/{r['n_in_library']}",
                f"{r['synthesize_share']:.1%}/{r['n_out_of_library']}"
                if r["n_out_of_library"]
                else "-",
                f"{r['kind_accuracy']:.1%}",
                str(r["confident_wrong"]),
                f"{r['confident_wrong_any']}/{r['confident']} = {r['confident_wrong_rate']:.1%}",
                str(r["signatures"]),
            )
    console.print(table)
    console.print(
        "accuracy: right tool on in-library tasks; to synth.: out-of-library tasks sent to "
        "synthesize; conf. wrong: wrong tools at confidence >= 0.9; >=0.9 wrong: wrong "
        "decisions (tool or synthesize) among those at confidence >= 0.9"
    )
    console.print(_confusion(out["embedded"]["confusion"], "embedded, no task field"))
    console.print(_reliability(out["embedded"]["reliability"], "main set, embedded"))
    if "hard" in out:
        console.print(_confusion(out["hard"]["confusion"], "hard slice, embedded"))
        console.print(_reliability(out["hard"]["reliability"], "hard slice, embedded"))
    if "timing" in out:
        t = out["timing"]
        console.print(
            f"routing cost, batch of {t['batch']} distinct prompts (embedded, cold caches): "
            f"p50 {t['p50_ms']:.2f} ms/sample, p90 {t['p90_ms']:.2f} ms, total "
            f"{t['batch_total_s']:.1f} s; unbatched p50 {t['unbatched_p50_ms']:.2f} ms "
            f"-> batching + signatures x{t['speedup']:.1f}; GRPO-like batch ({t['grpo_group']} "
            f"completions per prompt): p50 {t['grpo_p50_ms']:.2f} ms/sample"
        )
    e = out["embedded"]
    ok = e["accuracy"] >= ACCURACY_TARGET and e["synthesize_share"] >= SYNTHESIZE_TARGET
    console.print(
        f"targets (no task field): accuracy >= {ACCURACY_TARGET:.0%}, synthesize >= "
        f"{SYNTHESIZE_TARGET:.0%}: {'met' if ok else 'NOT met'}"
    )
    if json_out is not None:
        atomic_write(json_out, json.dumps(out, indent=2, default=str))


def _reliability(rows: list[dict[str, Any]], what: str) -> Table:
    table = Table(title=f"reliability ({what}): decisions per confidence bin")
    for col in ("confidence", "decisions", "right", "accuracy", "mean confidence"):
        table.add_column(col, justify="right")
    for r in rows:
        if r["n"]:
            table.add_row(
                r["bin"],
                str(r["n"]),
                str(r["right"]),
                f"{r['accuracy']:.1%}",
                f"{r['mean_confidence']:.3f}",
            )
    return table


def _confusion(confusion: dict[str, Any], what: str) -> Table:
    pairs = [(k.split(" -> ")[0], k.split(" -> ")[1], n) for k, n in confusion.items()]
    labels = sorted({a for a, _, _ in pairs})
    predicted = sorted({b for _, b, _ in pairs})
    table = Table(title=f"confusion ({what}): label x decision")
    table.add_column("label")
    for p in predicted:
        table.add_column(p, justify="right")
    cells = {(a, b): n for a, b, n in pairs}
    for a in labels:
        table.add_row(a, *(str(cells.get((a, b), "")) for b in predicted))
    return table
