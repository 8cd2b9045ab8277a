"""A plot of a GRPO run's `metrics.jsonl`: reward components, accuracy, length over steps.

matplotlib (Agg backend, no display) is imported inside `plot_metrics`, so importing this
module costs nothing; a missing matplotlib raises `MissingDependencyError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardsmith.errors import InputError
from rewardsmith.jsonl import read_jsonl
from rewardsmith.report.pyplot import integer_ticks, pyplot, save_figure

# Raw per-step values are noisy with a handful of prompts per step; the plot also draws a
# moving average over this many steps.
SMOOTH_STEPS = 10


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The per-step records of a `metrics.jsonl` file (a bad line raises `InputError` with
    its path and line number)."""
    rows: list[dict[str, Any]] = read_jsonl(path)
    if not rows:
        raise InputError(f"{path} holds no metrics")
    return rows


def moving_average(values: Sequence[float], window: int = SMOOTH_STEPS) -> list[float]:
    """Trailing mean over up to `window` values (the first points average what exists)."""
    out: list[float] = []
    total = 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_metrics(metrics: str | Path, out: str | Path) -> Path:
    """Three panels (rewards and their components, accuracy, completion length) to `out`."""
    plt = pyplot()
    rows = read_metrics(metrics)
    steps = [r["step"] for r in rows]
    reward_keys = ["reward"] + sorted(
        {k for r in rows for k in r if k.startswith("reward/") and not k.endswith("_frac")}
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    panels = [
        (axes[0], reward_keys, "reward (mean per step)"),
        (axes[1], ["accuracy", "parseable"], "accuracy (strict) / parseable"),
        (axes[2], ["completion_length"], "completion length (tokens)"),
    ]
    for ax, keys, title in panels:
        for key in keys:
            values = [float(r[key]) for r in rows if key in r]
            if len(values) != len(rows):
                continue
            (line,) = ax.plot(steps, values, alpha=0.3, linewidth=0.8)
            ax.plot(steps, moving_average(values), color=line.get_color(), label=key)
        ax.set_title(title)
        ax.set_xlabel("step")
        integer_ticks(ax.xaxis)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, out, dpi=100)
