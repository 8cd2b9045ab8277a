"""PNG plots of evaluation results: `rm eval` (accuracy per set with 95% intervals, trained
beside untrained) and `grpo eval` (accuracy per policy with bootstrap intervals, and the
exact McNemar table against the first policy).

Both read the JSON payloads the commands write (`-o`), so a plot can be redrawn from a saved
result. matplotlib (Agg backend: no display needed) is imported inside the functions; a
missing matplotlib raises `MissingDependencyError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rewardsmith.errors import InputError
from rewardsmith.report.pyplot import pyplot, save_figure

# Colours per column / policy, in order (matplotlib's default cycle, fixed for stable plots).
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
# Set names longer than this are shortened on the axis (the JSON keeps the full name).
LABEL_CHARS = 28


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else "..." + label[-(LABEL_CHARS - 3) :]


def _errors(values: list[float], lows: list[float], highs: list[float]) -> list[list[float]]:
    """matplotlib's asymmetric error bars: distances below and above each value."""
    return [
        [max(v - lo, 0.0) for v, lo in zip(values, lows, strict=True)],
        [max(hi - v, 0.0) for v, hi in zip(values, highs, strict=True)],
    ]


def plot_rm_eval(payload: dict[str, Any], out: str | Path) -> Path:
    """Accuracy per evaluation set (pairwise, best-of-4, math pairs: with their 95% interval;
    best-of-N: the model's pick) for each column of `rm eval` (trained, untrained), to `out`."""
    columns: dict[str, dict[str, dict[str, float]]] = payload.get("results") or {}
    if not columns:
        raise InputError("rm eval results hold no columns to plot")
    keys = list(next(iter(columns.values())))
    plt = pyplot()
    width = 0.8 / len(columns)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(keys) + 2), 4.5))
    for i, (name, results) in enumerate(columns.items()):
        values = [_accuracy(results.get(k, {})) for k in keys]
        lows = [results.get(k, {}).get("ci_low", v) for k, v in zip(keys, values, strict=True)]
        highs = [results.get(k, {}).get("ci_high", v) for k, v in zip(keys, values, strict=True)]
        xs = [j + (i - (len(columns) - 1) / 2) * width for j in range(len(keys))]
        ax.bar(
            xs,
            values,
            width,
            yerr=_errors(values, lows, highs),
            capsize=3,
            label=name,
            color=COLOURS[i % len(COLOURS)],
        )
    for j, key in enumerate(keys):  # best-of-N: where picking at random would land
        random = next(iter(columns.values())).get(key, {}).get("random")
        if key.endswith("/best_of_n") and random is not None:
            ax.hlines(random, j - 0.4, j + 0.4, colors="black", linestyles="dotted")
    ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(keys)), [_short(k) for k in keys], rotation=20, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy (95% interval)")
    ax.set_title(f"rm eval: {_short(str(payload.get('model', '')))}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return _save(fig, plt, out)


def _accuracy(metrics: dict[str, float]) -> float:
    # best-of-N sets report the model's pick as "model", the others "accuracy".
    return float(metrics.get("accuracy", metrics.get("model", 0.0)))


def plot_grpo_eval(report: dict[str, Any], out: str | Path) -> Path:
    """Accuracy per policy with its bootstrap 95% interval, and beside it the exact McNemar
    table of every policy against the first (only-baseline-right b, only-policy-right c, p,
    Bonferroni p), to `out`."""
    policies: list[dict[str, Any]] = report.get("policies") or []
    if not policies:
        raise InputError("grpo eval results hold no policies to plot")
    comparisons: list[dict[str, Any]] = report.get("comparisons") or []
    plt = pyplot()
    fig, axes = plt.subplots(
        1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1.2, 1]}, squeeze=True
    )
    ax, table_ax = axes
    names = [_short(str(p["policy"])) for p in policies]
    values = [float(p["accuracy"]["value"]) for p in policies]
    lows = [float(p["accuracy"]["low"]) for p in policies]
    highs = [float(p["accuracy"]["high"]) for p in policies]
    ax.bar(
        range(len(policies)),
        values,
        yerr=_errors(values, lows, highs),
        capsize=4,
        color=[COLOURS[i % len(COLOURS)] for i in range(len(policies))],
    )
    for i, v in enumerate(values):
        ax.text(i, v + 0.02, f"{v:.3f}", ha="center", fontsize=9)
    ax.set_xticks(range(len(policies)), names, rotation=15, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy (95% bootstrap CI)")
    ax.set_title(f"held-out {report.get('data', '')} (n={report.get('n', '?')})")
    table_ax.axis("off")
    if comparisons:
        rows = [
            [
                _short(str(c["policy"])),
                str(c["b"]),
                str(c["c"]),
                f"{c['p_value']:.3g}",
                f"{c['p_bonferroni']:.3g}",
            ]
            for c in comparisons
        ]
        table = table_ax.table(
            cellText=rows,
            colLabels=[
                "policy",
                "only baseline\nright (b)",
                "only policy\nright (c)",
                "p",
                "p (Bonf.)",
            ],
            loc="center",
        )
        table.auto_set_font_size(False)
        table.set_fontsize(9)
        table.scale(1, 1.6)
        table_ax.set_title(f"exact McNemar vs {_short(str(policies[0]['policy']))}")
    else:
        table_ax.text(0.5, 0.5, "one policy: no comparison", ha="center", va="center")
    fig.tight_layout()
    return _save(fig, plt, out)


def _save(fig: Any, plt: Any, out: str | Path) -> Path:
    return save_figure(fig, out, dpi=110)
