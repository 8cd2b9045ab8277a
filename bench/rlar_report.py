"""Statistics, plots and the Markdown report of `bench/rlar_multitask.py` (see its docstring).

`fidelity` measures, after an arm trained, how its reward agrees with the oracle on held-out
completions (the warm start's and the arm's own); `write_report(OUT)` reads OUT/ and writes
OUT/results.json, OUT/report.md, OUT/accuracy.png and OUT/curves.png.

    .venv/bin/python bench/rlar_report.py out/rlar      # (re)write the report of a run
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

NEW_FAMILIES = ("sort_numbers", "clock", "word_reversal")
ARM_LABELS = {
    "routed": "(a) routed + synthesized",
    "static_rm": "(b) static reward model",
    "judge": "(c) LLM judge",
    "oracle": "(d) oracle",
}


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# -- reward fidelity -----------------------------------------------------------------------------


def fidelity(
    arm: str, rewards: list[Any], library: Any, ctx: dict[str, Any], folder: Path, settings: Any
) -> dict[str, Any]:
    """Per family: how the arm's reward scores held-out completions whose correctness the
    oracle knows (up to `fidelity_per_family` each from the warm start and from the arm)."""
    from rewardsmith.rl.problems import testbed_prompt
    from rewardsmith.scoring import Scorer
    from rewardsmith.types import Sample

    if arm == "oracle":
        return {"note": "the oracle agrees with itself"}
    rows: list[dict[str, Any]] = []
    for source in (folder.parents[1] / "start" / "eval.json", folder / "eval.json"):
        per: dict[str, int] = defaultdict(int)
        for item in _read(source)["items"]:
            if per[item["task"]] < settings.fidelity_per_family:
                per[item["task"]] += 1
                rows.append(item)
    samples = [
        Sample(
            completion=r["completion"],
            prompt=testbed_prompt(r["question"]),
            reference=r["reference"],
            task=r["task"],
        )
        for r in rows
    ]
    tool = "router" if arm == "routed" else rewards[0]
    scorer = (
        Scorer(None, library=library, router="embedded")
        if tool == "router"
        else Scorer(tool, library=library)
    )
    try:
        result = scorer.score(samples)
    finally:
        scorer.close()
    by: dict[str, list[tuple[bool, float | None, str]]] = defaultdict(list)
    for row, reward in zip(rows, result.rewards, strict=True):
        by[row["task"]].append((bool(row["correct"]), reward.score, reward.tool))
    return {task: _agreement(values) for task, values in sorted(by.items())}


def _agreement(values: list[tuple[bool, float | None, str]]) -> dict[str, Any]:
    """Binary rewards: agreement with the oracle, wrong answers paid, right answers unpaid;
    any reward: AUC of right over wrong answers (ties half), and the tools that scored."""
    scored = [(ok, s) for ok, s, _ in values if s is not None]
    right = [s for ok, s in scored if ok]
    wrong = [s for ok, s in scored if not ok]
    out: dict[str, Any] = {
        "n": len(values),
        "not_scored": len(values) - len(scored),
        "tools": sorted({t for _, s, t in values if s is not None and t}),
    }
    if right and wrong:
        wins = sum(1.0 if r > w else 0.5 if r == w else 0.0 for r in right for w in wrong)
        out["auc"] = wins / (len(right) * len(wrong))
    if scored and all(s in (0.0, 1.0) for _, s in scored):
        out["agreement"] = sum((s == 1.0) == ok for ok, s in scored) / len(scored)
        out["wrong_paid"] = sum(s == 1.0 for s in wrong) / len(wrong) if wrong else None
        out["right_unpaid"] = sum(s == 0.0 for s in right) / len(right) if right else None
    return out


# -- statistics ----------------------------------------------------------------------------------


def _ci(correct: list[bool]) -> dict[str, float]:
    from rewardsmith.rl.stats import accuracy_ci

    return accuracy_ci(correct).to_dict()


def load_run(out: Path) -> dict[str, Any]:
    """Everything the report reads: settings, the warm start and every finished arm."""
    runs: dict[str, Any] = {}
    for arm_json in sorted((out / "arms").glob("*/arm.json")):
        folder = arm_json.parent
        metrics_path = folder / "run" / "metrics.jsonl"
        runs[folder.name] = {
            "record": _read(arm_json),
            "eval": _read(folder / "eval.json"),
            "metrics": [
                json.loads(line) for line in metrics_path.read_text().splitlines() if line.strip()
            ],
        }
    return {
        "settings": _read(out / "settings.json"),
        "start": _read(out / "start" / "eval.json"),
        "runs": runs,
    }


def _families(evaluation: dict[str, Any]) -> dict[str, list[bool]]:
    by: dict[str, list[bool]] = defaultdict(list)
    for item in evaluation["items"]:
        by[item["task"]].append(bool(item["correct"]))
    return dict(sorted(by.items()))


def compare_arms(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Exact McNemar of routed@seedS against static_rm@seedS, judge and oracle (seed 0 of
    routed for those), Bonferroni over the arms compared with each routed run."""
    from rewardsmith.rl.stats import mcnemar_exact

    runs = data["runs"]
    out = []
    for name, run in sorted(runs.items()):
        if not name.startswith("routed@"):
            continue
        seed = name.split("@seed")[1]
        others = [f"static_rm@seed{seed}"]
        if seed == str(data["settings"].get("single_seed", 0)):
            others += [n for n in sorted(runs) if n.startswith(("judge@", "oracle@"))]
        others = [o for o in others if o in runs]
        a = [bool(i["correct"]) for i in run["eval"]["items"]]
        for other in others:
            b = [bool(i["correct"]) for i in runs[other]["eval"]["items"]]
            test = mcnemar_exact(a, b, comparisons=max(1, len(others)))
            out.append(
                {
                    "a": name,
                    "b": other,
                    "accuracy_a": sum(a) / len(a),
                    "accuracy_b": sum(b) / len(b),
                    "only_a_right": test.b,
                    "only_b_right": test.c,
                    "p": test.p_value,
                    "p_bonferroni": test.p_adjusted,
                    "comparisons": test.comparisons,
                }
            )
    return out


def hacking(run: dict[str, Any]) -> dict[str, Any]:
    """Held-out habits (hedges, no answer, format only, length) and the training trend:
    reward and strict accuracy over the first and last tenth of the steps."""
    from rewardsmith.rl.evaluate import answer_habits

    items = run["eval"]["items"]
    habits = answer_habits(
        [i["completion"] for i in items], [i["tokens"] for i in items], [i["task"] for i in items]
    )
    metrics = run["metrics"]
    k = max(1, len(metrics) // 10)
    head, tail = metrics[:k], metrics[-k:]

    def mean(rows: list[dict[str, Any]], key: str) -> float | None:
        values = [r[key] for r in rows if key in r]
        return statistics.fmean(values) if values else None

    return {
        **habits,
        "train_reward": [mean(head, "reward"), mean(tail, "reward")],
        "train_accuracy": [mean(head, "accuracy"), mean(tail, "accuracy")],
        "train_length": [mean(head, "completion_length"), mean(tail, "completion_length")],
    }


def summarize(data: dict[str, Any]) -> dict[str, Any]:
    start = _families(data["start"])
    arms: dict[str, Any] = {}
    for name, run in sorted(data["runs"].items()):
        fams = _families(run["eval"])
        arms[name] = {
            "overall": _ci([c for v in fams.values() for c in v]),
            "families": {f: _ci(v) for f, v in fams.items()},
            "hacking": hacking(run),
            "record": run["record"],
        }
    return {
        "settings": data["settings"],
        "start": {
            "overall": _ci([c for v in start.values() for c in v]),
            "families": {f: _ci(v) for f, v in start.items()},
        },
        "arms": arms,
        "comparisons": compare_arms(data),
    }


# -- plots and report ----------------------------------------------------------------------------


def plot_accuracy(summary: dict[str, Any], path: Path) -> None:
    from rewardsmith.report.pyplot import pyplot

    plt = pyplot()
    names = ["start", *summary["arms"]]
    families = list(summary["start"]["families"])
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(families)), 4.5))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        fams = (
            summary["start"]["families"] if name == "start" else summary["arms"][name]["families"]
        )
        values = [fams[f]["value"] for f in families]
        low = [fams[f]["value"] - fams[f]["low"] for f in families]
        high = [fams[f]["high"] - fams[f]["value"] for f in families]
        xs = [i + (k - len(names) / 2 + 0.5) * width for i in range(len(families))]
        ax.bar(xs, values, width, yerr=[low, high], capsize=2, label=name)
    ax.set_xticks(range(len(families)))
    ax.set_xticklabels([f + (" *" if f in NEW_FAMILIES else "") for f in families], rotation=20)
    ax.set_ylabel("held-out accuracy (95% CI)")
    ax.set_title("per-family accuracy (* new to the library at the start)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_curves(data: dict[str, Any], path: Path) -> None:
    from rewardsmith.report.pyplot import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, run in sorted(data["runs"].items()):
        steps = [m["step"] for m in run["metrics"]]
        for ax, key in zip(axes, ("accuracy", "completion_length"), strict=True):
            values = [m.get(key, 0.0) for m in run["metrics"]]
            window = max(1, len(values) // 20)
            smooth = [
                statistics.fmean(values[max(0, i - window + 1) : i + 1]) for i in range(len(values))
            ]
            ax.plot(steps, smooth, label=name)
        for row in run["record"].get("syntheses", []):
            if row.get("admitted"):
                axes[0].axvline(row["step"], color="grey", lw=0.5, ls=":")
    axes[0].set_title("training accuracy (oracle, sampled; dotted: a tool admitted)")
    axes[1].set_title("completion length (tokens)")
    for ax in axes:
        ax.set_xlabel("step")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _num(row: dict[str, Any], key: str) -> str:
    return "-" if row.get(key) is None else f"{row[key]:.3f}"


def _cell(ci: dict[str, float]) -> str:
    return f"{ci['value']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]"


def _markdown(summary: dict[str, Any], out: Path) -> str:
    s = summary["settings"]
    lines = [
        "# The whole loop: routed + synthesized rewards vs a static RM, an LLM judge and an oracle",
        "",
        f"Policy `{s['policy']}`; {s['steps']} GRPO steps x {s['prompts_per_step']} prompts x "
        f"G = {s['group_size']}, lr {s['lr']}, LoRA rank {s['lora_rank']} (0: full), "
        f"{s['max_new_tokens']} new tokens; held-out {s['eval_per_family']} problems per family "
        "(greedy). New to the library at the start: " + ", ".join(NEW_FAMILIES) + ".",
        "",
    ]
    skipped = out / "judge_skipped.txt"
    if skipped.exists():
        lines += [f"**Judge arm skipped**: {skipped.read_text().strip()}", ""]
    families = list(summary["start"]["families"])
    lines += ["## Held-out accuracy per family [95% bootstrap CI]", ""]
    lines.append("| policy | all | " + " | ".join(families) + " |")
    lines.append("|---" * (len(families) + 2) + "|")
    rows = [("warm start", summary["start"])] + list(summary["arms"].items())
    for name, part in rows:
        cells = [_cell(part["families"][f]) if f in part["families"] else "-" for f in families]
        lines.append(f"| {name} | {_cell(part['overall'])} | " + " | ".join(cells) + " |")
    lines += ["", "![accuracy](accuracy.png)", "", "## Exact McNemar, (a) against the others", ""]
    lines.append(
        "| (a) | other | acc (a) | acc other | only (a) right | only other right | p | p Bonferroni |"
    )
    lines.append("|---|---|---|---|---|---|---|---|")
    for c in summary["comparisons"]:
        lines.append(
            f"| {c['a']} | {c['b']} | {c['accuracy_a']:.3f} | {c['accuracy_b']:.3f} | "
            f"{c['only_a_right']} | {c['only_b_right']} | {c['p']:.3g} | {c['p_bonferroni']:.3g} |"
        )
    lines += ["", "## Cost, library growth and hacking indicators", ""]
    lines.append(
        "| arm | steps | train s | s/step | reward s/step | judge tokens | tools admitted | "
        "hedged | no answer | format only | tokens | train reward first->last | train acc first->last |"
    )
    lines.append("|---" * 13 + "|")
    for name, arm in summary["arms"].items():
        r, h = arm["record"], arm["hacking"]
        usage = r.get("judge_usage") or {}
        admitted = [x for x in r.get("syntheses", []) if x.get("admitted")]
        fmt = lambda pair: " -> ".join("-" if v is None else f"{v:.3f}" for v in pair)  # noqa: E731
        lines.append(
            f"| {name} | {r['steps']} | {r['train_seconds']:.0f} | {r['step_seconds']:.2f} | "
            f"{r['reward_seconds_per_step']:.3f} | {usage.get('total_tokens', '-') if usage else '-'} | "
            f"{len(admitted)} | {h['hedged']:.3f} | {h['no_answer']:.3f} | {h['format_only']:.3f} | "
            f"{h.get('mean_tokens', 0):.1f} | {fmt(h['train_reward'])} | {fmt(h['train_accuracy'])} |"
        )
    lines += ["", "![curves](curves.png)", "", "## Tools synthesized during training", ""]
    lines.append(
        "| arm | step | task | tool | admitted | gate held-out acc | agreement with oracle (held-out completions) |"
    )
    lines.append("|---|---|---|---|---|---|---|")
    for name, arm in summary["arms"].items():
        fid = arm["record"].get("fidelity", {})
        for x in arm["record"].get("syntheses", []):
            agree = fid.get(x.get("task") or "", {}).get("agreement")
            acc = x.get("held_out_accuracy")
            lines.append(
                f"| {name} | {x['step']} | {x.get('task')} | {x['tool']} | {x['admitted']} | "
                f"{'-' if acc is None else f'{acc:.3f}'} | {'-' if agree is None else f'{agree:.3f}'} |"
            )
    lines += ["", "## Reward fidelity on held-out completions (vs the oracle)", ""]
    lines.append(
        "| arm | family | tools | n | not scored | agreement | wrong paid | right unpaid | AUC |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for name, arm in summary["arms"].items():
        for family, f in arm["record"].get("fidelity", {}).items():
            if not isinstance(f, dict):
                continue
            lines.append(
                f"| {name} | {family} | {', '.join(f['tools']) or '-'} | {f['n']} | {f['not_scored']} | "
                f"{_num(f, 'agreement')} | {_num(f, 'wrong_paid')} | {_num(f, 'right_unpaid')} | "
                f"{_num(f, 'auc')} |"
            )
    return "\n".join(lines) + "\n"


def write_report(out: Path) -> Path:
    data = load_run(out)
    summary = summarize(data)
    (out / "results.json").write_text(json.dumps(summary, indent=1) + "\n")
    if data["runs"]:
        plot_accuracy(summary, out / "accuracy.png")
        plot_curves(data, out / "curves.png")
    path = out / "report.md"
    path.write_text(_markdown(summary, out), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_report(Path(sys.argv[1])))
