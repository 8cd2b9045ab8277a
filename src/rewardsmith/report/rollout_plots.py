"""PNG plots of `rewardsmith compare` and `rewardsmith profile` reports (the JSON they write
with `--json`), so a plot can be redrawn from a saved report. matplotlib (Agg backend) is
imported on first use; a missing matplotlib raises `MissingDependencyError`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rewardsmith.errors import InputError
from rewardsmith.report.pyplot import integer_ticks, pyplot

VERDICTS = ("pass", "fail", "not scored")
# Keys (tasks...) longer than this are shortened on an axis (the JSON keeps the full name).
LABEL_CHARS = 24


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _save(fig: Any, out: str | Path) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    pyplot().close(fig)
    return path


def plot_compare(report: dict[str, Any], out: str | Path) -> Path:
    """Left: the confusion table of the two verdicts; right: pass counts per task under each
    tool, with the rollouts only one of them passes."""
    tasks = report.get("by_task") or {}
    if not report.get("samples") or not tasks:
        raise InputError("the comparison holds no rollouts to plot")
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    cells = [[report["confusion"][a][b] for b in VERDICTS] for a in VERDICTS]
    left.imshow(cells, cmap="Blues")
    for i, row in enumerate(cells):
        for j, n in enumerate(row):
            left.text(j, i, str(n), ha="center", va="center")
    left.set_xticks(range(3), VERDICTS)
    left.set_yticks(range(3), VERDICTS)
    left.set_xlabel(f"--against {report['against']}")
    left.set_ylabel(f"--tool {report['tool']}")
    test = report["mcnemar"]
    left.set_title(
        f"agreement {report['agreement']:.1%}; McNemar {test['only_a']} vs {test['only_b']}, "
        f"p = {test['p_value']:.3g}"
    )
    names = list(tasks)
    xs = range(len(names))
    width = 0.38
    right.bar(
        [x - width / 2 for x in xs],
        [tasks[t]["pass_a"] for t in names],
        width,
        label=f"pass: {report['tool']}",
    )
    right.bar(
        [x + width / 2 for x in xs],
        [tasks[t]["pass_b"] for t in names],
        width,
        label=f"pass: {report['against']}",
    )
    for x, t in zip(xs, names, strict=True):
        right.text(
            x,
            max(tasks[t]["pass_a"], tasks[t]["pass_b"]),
            f"{tasks[t]['only_a']} / {tasks[t]['only_b']}",
            ha="center",
            va="bottom",
            fontsize=8,
        )
    right.set_xticks(list(xs), [_short(t) for t in names], rotation=20, ha="right")
    integer_ticks(right.yaxis)
    right.set_ylabel("rollouts passed (labels: only --tool / only --against)")
    right.set_title("passes per task")
    right.legend(fontsize=8)
    return _save(fig, out)


def plot_profile(report: dict[str, Any], out: str | Path) -> Path:
    """Per key (task...): GRPO groups split into live, dead all-pass, dead all-fail and dead
    other, with the pass rate and reward variance in the labels."""
    keys = report.get("keys") or {}
    if not keys:
        raise InputError("the profile holds no groups to plot")
    plt = pyplot()
    names = list(keys)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(names) + 2), 4.5))
    parts = [
        ("live", lambda k: k["groups"] - k["dead_groups"], "#2ca02c"),
        ("dead: all pass", lambda k: k["dead_all_pass"], "#1f77b4"),
        ("dead: all fail", lambda k: k["dead_all_fail"], "#d62728"),
        ("dead: other", lambda k: k["dead_other"], "#7f7f7f"),
    ]
    bottom = [0] * len(names)
    for label, value, colour in parts:
        heights = [value(keys[n]) for n in names]
        ax.bar(range(len(names)), heights, bottom=bottom, label=label, color=colour)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    labels = []
    for n in names:
        k = keys[n]
        rate = "-" if k["pass_rate"] is None else f"{k['pass_rate']:.0%}"
        var = "-" if k["variance"] is None else f"{k['variance']:.3f}"
        labels.append(f"{_short(n)}\npass {rate}, var {var}")
    ax.set_xticks(range(len(names)), labels, fontsize=8)
    integer_ticks(ax.yaxis)
    ax.set_ylabel("GRPO groups")
    ax.set_title(f"groups by {report['by']}: dead = every reward equal (no GRPO signal)")
    ax.legend(fontsize=8)
    return _save(fig, out)
