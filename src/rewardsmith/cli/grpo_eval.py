"""`rewardsmith grpo eval`: greedy held-out accuracy and F1 with CIs, McNemar between policies,
accuracy per task family for the multi-task testbed."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress, TaskID
from rich.table import Table

from rewardsmith.cli.common import progress_bar, write_plot
from rewardsmith.cli.grpo_common import default_data, require_torch
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.files import atomic_write
from rewardsmith.models.loading import torch_threads
from rewardsmith.rl.prompts import load_items, multitask_eval_tasks, testbed_eval_problems

console = PlainConsole()


def eval_cmd(
    policy: Annotated[
        list[str],
        typer.Option(
            "--policy",
            "-p",
            help="Policy (repeatable): testbed, smollm2 or a model folder; the first is the "
            "baseline the others are compared with.",
        ),
    ],
    data: Annotated[
        str | None,
        typer.Option(
            help="'testbed' or 'testbed-multi' (held-out splits) or a JSONL file (default: the "
            "first policy's own)."
        ),
    ] = None,
    n: Annotated[
        int, typer.Option(help="Problems to evaluate (testbed-multi: per task family).")
    ] = 500,
    seed: Annotated[int, typer.Option(help="Seed of the held-out problems.")] = 0,
    max_new_tokens: Annotated[int, typer.Option(help="Completion length limit.")] = 96,
    batch_size: Annotated[int, typer.Option(help="Prompts per generation batch.")] = 64,
    answer: Annotated[
        str | None, typer.Option(help="solution (strict tags) or gsm8k (final number).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write results (per item too) as JSON.")
    ] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda...")] = "cpu",
    threads: Annotated[int | None, typer.Option(help="torch CPU threads.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
) -> None:
    """Greedy held-out accuracy and F1 with bootstrap 95% CIs; exact McNemar (Bonferroni)
    of every policy against the first."""
    require_torch()
    from rewardsmith.rl.evaluate import by_task, compare, evaluate_policy, task_of
    from rewardsmith.rl.policies import load_policy

    torch_threads(threads)
    data = data or default_data(policy[0])
    items: list[Any]
    if data == "testbed":
        items = list(testbed_eval_problems(n, seed))
    elif data == "testbed-multi":
        items = list(multitask_eval_tasks(n, seed))
    else:
        items = load_items(data, n)
    results = []
    with progress_bar(console, quiet) as bar:
        for spec in policy:
            pol = load_policy(spec, device=device)
            pol.name = spec
            task = bar.add_task(f"eval {spec}", total=len(items))
            results.append(
                evaluate_policy(
                    pol,
                    items,
                    answer_format=answer,  # type: ignore[arg-type]
                    max_new_tokens=max_new_tokens,
                    batch_size=batch_size,
                    progress=partial(_advance, bar, task),
                )
            )
    tests = compare(results[0], results[1:])
    report = {
        "data": data,
        "n": len(items),
        "seed": seed,
        "policies": [{"policy": r.name, **r.summary()} for r in results],
        "tasks": {
            r.name: {t: part.summary() for t, part in sorted(by_task(r).items())}
            for r in results
            if any(t is not None for t in r.tasks)
        },
        "comparisons": [
            {"baseline": results[0].name, "policy": r.name, **t.to_dict()}
            for r, t in zip(results[1:], tests, strict=True)
        ],
        "items": [
            {
                "question": it.question,
                "reference": it.reference,
                **({"task": task_of(it)} if task_of(it) is not None else {}),
                **{
                    r.name: {
                        "completion": r.completions[i],
                        "correct": r.correct[i],
                        "parseable": r.parseable[i],
                    }
                    for r in results
                },
            }
            for i, it in enumerate(items)
        ],
    }
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(output, json.dumps(report, indent=2) + "\n")
        from rewardsmith.report.eval_plots import plot_grpo_eval

        write_plot(plot_grpo_eval, report, output.with_suffix(".png"))
    if not quiet:
        console.print(_eval_table(report))
        if report["tasks"]:
            console.print(_task_table(report))
        if tests:
            console.print(_compare_table(report))


def _advance(bar: Progress, task: TaskID, k: int) -> None:
    bar.advance(task, k)


def _ci(d: dict[str, float]) -> str:
    return f"{d['value']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"


def _eval_table(report: dict[str, Any]) -> Table:
    table = Table(title=f"held-out {report['data']} (n={report['n']}, greedy, 95% bootstrap CI)")
    for col in ("policy", "accuracy", "F1", "precision", "parseable", "seconds"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for p in report["policies"]:
        table.add_row(
            p["policy"],
            _ci(p["accuracy"]),
            _ci(p["f1"]),
            f"{p['precision']:.3f}",
            f"{p['parseable']}/{p['n']}",
            f"{p['seconds']:.0f}",
        )
    return table


def _task_table(report: dict[str, Any]) -> Table:
    """Accuracy per task (family) and policy, with bootstrap 95% CIs."""
    table = Table(title="held-out accuracy per task [95% CI]")
    table.add_column("task")
    names = list(report["tasks"])
    for name in names:
        table.add_column(name, justify="right")
    tasks = sorted({t for per in report["tasks"].values() for t in per})
    for task in tasks:
        cells = []
        for name in names:
            part = report["tasks"][name].get(task)
            cells.append(_ci(part["accuracy"]) + f" (n={part['n']})" if part else "-")
        table.add_row(task, *cells)
    return table


def _compare_table(report: dict[str, Any]) -> Table:
    table = Table(title="exact McNemar vs the first policy (Bonferroni-corrected)")
    for col in ("policy", "only baseline right", "only policy right", "p", "p (Bonferroni)"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for c in report["comparisons"]:
        table.add_row(
            c["policy"], str(c["b"]), str(c["c"]), f"{c['p_value']:.3g}", f"{c['p_bonferroni']:.3g}"
        )
    return table
