"""Per-task reward metrics: one naming scheme for every place rewardsmith logs rewards.

For each (task, tool) of a batch:

- `rewardsmith/<task>/<tool>/mean`: mean score of the samples the tool gave a score (a
  failed sample's 0.0 counts; a sample without a score does not);
- `rewardsmith/<task>/<tool>/not_scored_frac`: share of the samples that got no score
  (`not_applicable`, `invalid_reference`): what the trainer had to treat as missing;
- `rewardsmith/<task>/<tool>/failed_frac`: share that errored or timed out (scored 0.0).

`<task>` is the sample's `task` (`no_task` without one), `<tool>` the name of the tool that
scored it, without its version (`none` when no tool was chosen: a task the task map does not
name, a sample the router sent to synthesis). A `/` inside either becomes `_` (veRL data
sources such as `openai/gsm8k`), so every name has exactly four parts. The embedded GRPO
trainer writes these to `metrics.jsonl`, the TRL adapter logs them through TRL's
`log_metric`, and `rewardsmith profile` prints them for any rollout file (docs/rollouts.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rewardsmith.types import Reward

PREFIX = "rewardsmith"
NO_TASK = "no_task"
NO_TOOL = "none"
#: Statuses of a sample that got no score, and of one whose scoring failed.
NOT_SCORED = frozenset({"not_applicable", "invalid_reference"})
FAILED = frozenset({"error", "timeout"})


def _part(text: str) -> str:
    return text.replace("/", "_") or "_"


def tool_label(reward: Reward) -> str:
    """The tool part of a metric name: the reward's tool without `@version`."""
    return _part(reward.tool.partition("@")[0]) if reward.tool else NO_TOOL


def task_label(task: str | None) -> str:
    """The task part of a metric name."""
    return NO_TASK if task is None else _part(task)


def metric_name(task: str | None, tool: str, stat: str) -> str:
    """`rewardsmith/<task>/<tool>/<stat>`."""
    return f"{PREFIX}/{task_label(task)}/{_part(tool)}/{stat}"


def task_metrics(tasks: Sequence[str | None], rewards: Sequence[Reward]) -> dict[str, float]:
    """The per-(task, tool) metrics of one batch (see the module docstring)."""
    if len(tasks) != len(rewards):
        raise ValueError(f"{len(tasks)} tasks for {len(rewards)} rewards")
    groups: dict[tuple[str | None, str], list[Reward]] = defaultdict(list)
    for task, reward in zip(tasks, rewards, strict=True):
        groups[(task, tool_label(reward))].append(reward)
    out: dict[str, float] = {}
    for (task, tool), group in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        scores = [r.score for r in group if r.score is not None]
        if scores:
            out[metric_name(task, tool, "mean")] = sum(scores) / len(scores)
        n = len(group)
        out[metric_name(task, tool, "not_scored_frac")] = (
            sum(r.status in NOT_SCORED for r in group) / n
        )
        out[metric_name(task, tool, "failed_frac")] = sum(r.status in FAILED for r in group) / n
    return out


__all__ = ["NO_TASK", "NO_TOOL", "metric_name", "task_label", "task_metrics", "tool_label"]
