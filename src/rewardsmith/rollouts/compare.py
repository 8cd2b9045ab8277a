"""`compare`: two tool versions' verdicts on identical rollouts, with an exact McNemar test.

Both tools score every rollout (`rescore.score_rollouts`). A score at or above `threshold`
is a pass, below it a fail; a reward without a score (`not_applicable`,
`invalid_reference`) is `not scored`. The report holds:

- the confusion table of the two verdicts (pass / fail / not scored, each way);
- agreement: the share of rollouts with the same verdict;
- the exact McNemar test (McNemar 1947; a two-sided binomial test of the pass/fail
  disagreements, `rewardsmith.rl.stats.mcnemar_exact`) over the rollouts both tools scored,
  overall and per task (Bonferroni over the tasks);
- every flip: a rollout whose verdict differs, with both rewards and reasons.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from rewardsmith.rl.stats import mcnemar_exact
from rewardsmith.rollout_log import Rollout
from rewardsmith.types import Reward

VERDICTS = ("pass", "fail", "not scored")
#: Characters of a completion a flip shows (the whole rollout is in the input file).
EXCERPT_CHARS = 200


def verdict(reward: Reward, threshold: float) -> str:
    """`pass`, `fail` or `not scored`."""
    if reward.score is None:
        return "not scored"
    return "pass" if reward.score >= threshold else "fail"


def _mcnemar(pairs: Sequence[tuple[str, str]], comparisons: int = 1) -> dict[str, Any]:
    scored = [(a, b) for a, b in pairs if a != "not scored" and b != "not scored"]
    test = mcnemar_exact(
        [a == "pass" for a, _ in scored], [b == "pass" for _, b in scored], comparisons=comparisons
    )
    return {
        "paired": len(scored),
        "only_a": test.b,
        "only_b": test.c,
        "p_value": test.p_value,
        "p_bonferroni": test.p_adjusted,
        "comparisons": comparisons,
    }


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def _side(reward: Reward, v: str) -> dict[str, Any]:
    return {"verdict": v, "reward": reward.score, "status": reward.status, "reason": reward.reason}


def compare_rewards(
    rollouts: Sequence[Rollout],
    a: Sequence[Reward],
    b: Sequence[Reward],
    *,
    threshold: float = 1.0,
) -> dict[str, Any]:
    """The comparison report (module docstring) of rewards `a` and `b` of the same rollouts."""
    if not len(rollouts) == len(a) == len(b):
        raise ValueError(f"{len(rollouts)} rollouts, {len(a)} and {len(b)} rewards")
    pairs = [(verdict(x, threshold), verdict(y, threshold)) for x, y in zip(a, b, strict=True)]
    confusion = {va: {vb: 0 for vb in VERDICTS} for va in VERDICTS}
    for va, vb in pairs:
        confusion[va][vb] += 1
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, rollout in enumerate(rollouts):
        by_task[rollout.sample.task or "-"].append(i)
    tasks = {}
    for task, indices in sorted(by_task.items()):
        task_pairs = [pairs[i] for i in indices]
        verdicts_a = Counter(va for va, _ in task_pairs)
        verdicts_b = Counter(vb for _, vb in task_pairs)
        tasks[task] = {
            "samples": len(indices),
            "agreement": sum(va == vb for va, vb in task_pairs) / len(indices),
            "pass_a": verdicts_a["pass"],
            "pass_b": verdicts_b["pass"],
            "not_scored_a": verdicts_a["not scored"],
            "not_scored_b": verdicts_b["not scored"],
            **_mcnemar(task_pairs, comparisons=len(by_task)),
        }
    flips = [
        {
            "line": rollouts[i].line,
            "id": rollouts[i].sample.id,
            "task": rollouts[i].sample.task,
            "group": rollouts[i].group,
            "a": _side(a[i], va),
            "b": _side(b[i], vb),
            "completion": _excerpt(rollouts[i].sample.completion),
        }
        for i, (va, vb) in enumerate(pairs)
        if va != vb
    ]
    n = len(pairs)
    return {
        "samples": n,
        "threshold": threshold,
        "agreement": sum(va == vb for va, vb in pairs) / n if n else 1.0,
        "confusion": confusion,
        "mcnemar": _mcnemar(pairs),
        "by_task": tasks,
        "flips": flips,
    }


def event_detail(report: dict[str, Any], path: str) -> dict[str, Any]:
    """What the library's event log keeps of a comparison (the flips stay in `--json`)."""
    test = report["mcnemar"]
    return {
        "tool_ref": report["tool"],
        "against": report["against"],
        "input": path,
        "samples": report["samples"],
        "agreement": round(report["agreement"], 4),
        "only_a": test["only_a"],
        "only_b": test["only_b"],
        "p_value": test["p_value"],
        "flips": len(report["flips"]),
    }
