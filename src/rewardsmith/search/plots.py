"""The search report's PNG plots (matplotlib, Agg backend: no display needed).

Each function draws one figure from the run's data and returns the file it wrote. A figure
with nothing to show (no GRPO scores yet, no ensembles) is not drawn: the function returns
None and the report says why.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardsmith.report.pyplot import integer_ticks, pyplot, save_figure
from rewardsmith.search.metrics import EnsembleSummary, GRPOMetrics
from rewardsmith.search.results import CandidateRecord, ranked


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    return save_figure(fig, path, dpi=100)


def f1_by_round(
    records: Sequence[CandidateRecord], baseline: dict[str, GRPOMetrics], path: Path
) -> Path | None:
    """Each GRPO-judged candidate's validation F1 by round, the round means, and the base
    rewards alone (dashed, per budget); proxy fitness when nothing was trained."""
    plt = pyplot()
    trained = [(r.round, r.grpo.f1) for r in records if r.grpo]
    fig, ax = plt.subplots(figsize=(7, 4))
    rounds = sorted({r.round for r in records})
    if trained:
        ax.scatter([t[0] for t in trained], [t[1] for t in trained], alpha=0.5, label="candidate")
        means = [
            (n, statistics.fmean(f1 for k, f1 in trained if k == n))
            for n in rounds
            if any(k == n for k, _ in trained)
        ]
        ax.plot([m[0] for m in means], [m[1] for m in means], "o-", color="C1", label="round mean")
        for steps, m in sorted(baseline.items(), key=lambda kv: int(kv[0])):
            ax.axhline(m.f1, linestyle="--", color="gray", linewidth=1)
            ax.text(rounds[0], m.f1, f" base alone, {steps} steps", fontsize=7, va="bottom")
        ax.set_ylabel("held-out F1 (validation) after GRPO")
    else:
        scored = [(r.round, r.proxy.fitness) for r in records if r.proxy]
        if not scored:
            plt.close(fig)
            return None
        ax.scatter([s[0] for s in scored], [s[1] for s in scored], alpha=0.5)
        ax.set_ylabel("proxy fitness")
    ax.set_xlabel("round")
    ax.set_xticks(rounds)
    ax.grid(alpha=0.3)
    if trained:
        ax.legend(fontsize=8)
    ax.set_title("Fitness by round")
    return _save(fig, path)


def ranks(records: Sequence[CandidateRecord], path: Path) -> Path | None:
    """Left: final rank (1 = best) of every admitted candidate against its round (filled:
    judged by GRPO; hollow: by the proxy only). Right: proxy fitness against GRPO F1."""
    plt = pyplot()
    order = [r for r in ranked(records) if r.admitted]
    if not order:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for i, r in enumerate(order, 1):
        filled = r.grpo is not None
        left.scatter(r.round, i, color="C0", facecolors="C0" if filled else "none", alpha=0.7)
    left.invert_yaxis()
    left.set_xlabel("round")
    left.set_ylabel("rank (1 = best)")
    integer_ticks(left.xaxis)
    integer_ticks(left.yaxis)
    left.set_title("Ranks (filled: GRPO-judged, hollow: proxy only)")
    left.grid(alpha=0.3)
    both = [(r.proxy.fitness, r.grpo_rungs[0].f1) for r in order if r.grpo and r.proxy]
    if both:
        right.scatter([b[0] for b in both], [b[1] for b in both])
        right.set_xlabel("proxy fitness (level 0)")
        right.set_ylabel("F1 after the first GRPO budget (level 1)")
        right.set_title("Proxy against GRPO")
        right.grid(alpha=0.3)
    else:
        right.axis("off")
        right.text(0.5, 0.5, "no candidate reached GRPO", ha="center")
    return _save(fig, path)


def ensembles(summary: EnsembleSummary, path: Path) -> Path | None:
    """Test F1 of every configuration with its bootstrap 95% CI."""
    f1 = {name: tested.f1 for name, tested in summary.tested.items()}
    if not f1:
        return None
    plt = pyplot()
    names = sorted(f1, key=lambda n: f1[n].value)
    values = [f1[n].value for n in names]
    low = [v - f1[n].low for n, v in zip(names, values, strict=True)]
    high = [f1[n].high - v for n, v in zip(names, values, strict=True)]
    colors = [
        "gray"
        if n == "base"
        else "C3"
        if n.startswith("random")
        else "C2"
        if n == summary.best
        else "C0"
        for n in names
    ]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(names) + 1.5))
    ax.barh(names, values, xerr=[low, high], color=colors, alpha=0.8, capsize=3)
    ax.set_xlabel("test F1 (95% bootstrap CI)")
    ax.set_title("Ensembles: base + selected rewards (green: best, red: random control)")
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, path)


def audit(audit_data: dict[str, Any], path: Path) -> Path | None:
    """For each audited reward and run: the rise of its mean score in training against the
    held-out accuracy gain over base-only (flagged ones in red)."""
    points = []
    for entry in audit_data.get("rewards", []):
        for run in entry["runs"]:
            if run.get("reward_change") is None or run.get("held_out_accuracy") is None:
                continue
            base = run.get("base_held_out_accuracy")
            gain = run["held_out_accuracy"] - base if base is not None else 0.0
            points.append((run["reward_change"], gain, bool(entry["flags"]), entry["name"]))
    if not points:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for x, y, flagged, name in points:
        ax.scatter(x, y, color="C3" if flagged else "C0", alpha=0.7)
        ax.annotate(name, (x, y), fontsize=6, alpha=0.7)
    ax.axhline(0, color="gray", linewidth=1)
    ax.axvline(0, color="gray", linewidth=1)
    ax.set_xlabel("change of the reward's mean in training (first -> last fifth)")
    ax.set_ylabel("held-out accuracy minus base-only")
    ax.set_title("Hacking audit of structural rewards (red: flagged)")
    ax.grid(alpha=0.3)
    return _save(fig, path)
