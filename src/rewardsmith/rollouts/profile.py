"""`profile`: what stored rewards give GRPO, before (or instead of) training on them.

Rollouts are grouped as GRPO groups them (`rollout_log.group_key`: the `group` field, else
step and prompt, else prompt). GRPO's advantage is a reward minus its group's mean, so a
group whose rewards are all equal (a *dead* group) gives no gradient at all; an unscored
reward counts 0.0 there, as in the embedded trainer. Per key (`by`: task, tool, step or
source) the profile reports the pass rate (score >= `threshold`), the mean and population
variance of the scores, the share of dead groups (split into all-pass, all-fail and other
constants), groups of one rollout (no comparison possible), and the rollouts not scored by
status. A prompt whose every group is dead is *flagged*: it costs generation and gives
GRPO no signal (all fail: too hard, or the reward cannot read its answers; all pass: too
easy). The per-(task, tool) metrics of `rewardsmith.reward_metrics` come with it.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.reward_metrics import task_metrics
from rewardsmith.rollout_log import Rollout
from rewardsmith.types import Reward

#: What `--by` can break the profile down by.
KEYS = ("task", "tool", "step", "source")
#: Rewards closer than this are equal (float sums of weighted parts).
EQUAL = 1e-9
#: Characters of a flagged prompt the report keeps.
PROMPT_CHARS = 160


@dataclass(frozen=True)
class Group:
    """One GRPO group: its key, the key it is reported under, its prompt and rewards."""

    key: str
    by: str
    prompt: str
    rewards: tuple[Reward, ...]

    @property
    def values(self) -> list[float]:
        return [r.score if r.score is not None else 0.0 for r in self.rewards]

    @property
    def dead(self) -> bool:
        values = self.values
        return len(values) > 1 and max(values) - min(values) <= EQUAL

    def outcome(self, threshold: float) -> str:
        """What a dead group's rewards were: `all pass`, `all fail`, `not scored` (no
        reward had a score) or `constant` (scored and unscored mixed)."""
        scores = [r.score for r in self.rewards]
        if all(s is None for s in scores):
            return "not scored"
        if any(s is None for s in scores):
            return "constant"
        return "all pass" if min(s for s in scores if s is not None) >= threshold else "all fail"


def _by_value(rollout: Rollout, by: str) -> str:
    if by == "task":
        return rollout.sample.task or "-"
    if by == "tool":
        return (rollout.stored.tool if rollout.stored else "") or "-"
    value = rollout.record.get(by)
    return "-" if value is None else str(value)


def _order(key: str) -> tuple[int, float, str]:
    """Numbers (steps) in numeric order, then names."""
    try:
        return (0, float(key), key)
    except ValueError:
        return (1, 0.0, key)


def _prompt(rollout: Rollout) -> str:
    text = " ".join(rollout.sample.prompt_text().split())
    return text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 1] + "…"


def select_part(rollouts: Sequence[Rollout], part: str) -> list[Rollout]:
    """The rollouts with one part of their weighted reward as the reward (a GRPO line's
    `components`/`rewards` key, e.g. `gsm8k` of `gsm8k,format_tags`): a total that mixes a
    format reward with correctness says little about either. A line without the part is
    `not_applicable`; a file where no line has it raises `InputError` naming the parts."""
    out: list[Rollout] = []
    seen: set[str] = set()
    for rollout in rollouts:
        stored = rollout.stored
        if stored is None:
            out.append(rollout)
            continue
        seen.update(stored.components)
        if part in stored.components:
            reward = Reward(stored.components[part], "ok", tool=part)
        else:
            reward = Reward(None, "not_applicable", tool=part, reason=f"no part {part!r}")
        out.append(replace(rollout, stored=reward))
    if part not in seen:
        raise InputError(
            f"no line has a reward part {part!r}; parts in the file: "
            f"{', '.join(sorted(seen)) or 'none'}"
        )
    return out


def groups_of(rollouts: Sequence[Rollout], by: str) -> list[Group]:
    """The GRPO groups of scored rollouts, in order of first appearance."""
    members: dict[str, list[Rollout]] = defaultdict(list)
    for rollout in rollouts:
        members[rollout.group].append(rollout)
    return [
        Group(
            key,
            _by_value(rows[0], by),
            _prompt(rows[0]),
            tuple(r.stored for r in rows if r.stored is not None),
        )
        for key, rows in members.items()
    ]


def _summary(rows: Sequence[Rollout], groups: Sequence[Group], threshold: float) -> dict[str, Any]:
    rewards = [r.stored for r in rows if r.stored is not None]
    scores = [r.score for r in rewards if r.score is not None]
    comparable = [g for g in groups if len(g.rewards) > 1]
    dead = [g for g in comparable if g.dead]
    dead_pass = sum(g.outcome(threshold) == "all pass" for g in dead)
    dead_fail = sum(g.outcome(threshold) == "all fail" for g in dead)
    return {
        "samples": len(rows),
        "scored": len(scores),
        "pass_rate": sum(s >= threshold for s in scores) / len(scores) if scores else None,
        "mean": statistics.fmean(scores) if scores else None,
        "variance": statistics.pvariance(scores) if scores else None,
        "groups": len(comparable),
        "dead_groups": len(dead),
        "dead_share": len(dead) / len(comparable) if comparable else None,
        "dead_all_pass": dead_pass,
        "dead_all_fail": dead_fail,
        "dead_other": len(dead) - dead_pass - dead_fail,
        "single_rollout_groups": len(groups) - len(comparable),
        "not_scored": dict(sorted(Counter(r.status for r in rewards if r.status != "ok").items())),
    }


def profile(
    rollouts: Sequence[Rollout], by: str = "task", threshold: float = 1.0
) -> dict[str, Any]:
    """The profile report (module docstring). Raises `InputError` when no rollout has a
    stored reward (score the file first) and `ConfigError` for an unknown `by`."""
    if by not in KEYS:
        raise ConfigError(f"--by must be one of {', '.join(KEYS)}, got {by!r}")
    rewarded = [r for r in rollouts if r.stored is not None]
    if not rewarded:
        raise InputError(
            "no line has a reward: profile reads scored rollouts; score the file first, e.g. "
            "`rewardsmith rescore FILE --tool gsm8k -o scored.jsonl`"
        )
    groups = groups_of(rewarded, by)
    rows_by: dict[str, list[Rollout]] = defaultdict(list)
    for rollout in rewarded:
        rows_by[_by_value(rollout, by)].append(rollout)
    keys = {
        key: _summary(rows, [g for g in groups if g.by == key], threshold)
        for key, rows in sorted(rows_by.items(), key=lambda kv: _order(kv[0]))
    }
    return {
        "by": by,
        "threshold": threshold,
        "samples": len(rollouts),
        "without_reward": len(rollouts) - len(rewarded),
        "overall": _summary(rewarded, groups, threshold),
        "keys": keys,
        "metrics": task_metrics(
            [r.sample.task for r in rewarded], [r.stored for r in rewarded if r.stored]
        ),
        "flagged_prompts": flagged_prompts(groups, threshold),
    }


def flagged_prompts(groups: Sequence[Group], threshold: float) -> list[dict[str, Any]]:
    """Prompts whose every group (of two or more rollouts) is dead, most rollouts first."""
    by_prompt: dict[str, list[Group]] = defaultdict(list)
    for group in groups:
        if len(group.rewards) > 1:
            by_prompt[group.prompt].append(group)
    flagged = []
    for prompt, gs in by_prompt.items():
        if not all(g.dead for g in gs):
            continue
        values = sorted({round(g.values[0], 6) for g in gs})
        outcomes = {g.outcome(threshold) for g in gs}
        flagged.append(
            {
                "prompt": prompt,
                "by": gs[0].by,
                "groups": len(gs),
                "samples": sum(len(g.rewards) for g in gs),
                "rewards": values,
                "why": outcomes.pop() if len(outcomes) == 1 else "mixed",
            }
        )
    return sorted(flagged, key=lambda f: (-f["samples"], f["prompt"]))
