"""`rescore`: score stored rollouts again with any tool version, keeping the old reward.

Every rollout is scored as `rewardsmith score --tool` would score it (same `Scorer`, same
batches), so a version's verdict on a stored completion is the one it would give in
training. The output line is the input line with the new reward fields and the stored ones
under `previous` (`{"reward", "status", "tool", "components", "reason"}`, null for a line
that had no reward), so it is itself a rollout file: re-score it again, compare, profile.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rewardsmith.jsonl import write_line
from rewardsmith.library.store import Library
from rewardsmith.rollout_log import REWARD_FIELDS, Rollout
from rewardsmith.scoring import Scorer
from rewardsmith.types import Reward

#: Rollouts handed to the scorer at once (as `rewardsmith score` does): tool pools stay
#: busy and a progress bar moves.
CHUNK_SIZE = 256

Progress = Callable[[int], None]


def score_rollouts(
    rollouts: Sequence[Rollout],
    tool: str,
    library: Library | str | Path | None = None,
    progress: Progress | None = None,
) -> list[Reward]:
    """One `Reward` per rollout from `tool` (`NAME` or `NAME@VERSION`), in order;
    `progress(n)` after each chunk of n rollouts."""
    scorer = Scorer(tool, library=library)
    rewards: list[Reward] = []
    try:
        for start in range(0, len(rollouts), CHUNK_SIZE):
            chunk = rollouts[start : start + CHUNK_SIZE]
            rewards.extend(scorer.score([r.sample for r in chunk]).rewards)
            if progress is not None:
                progress(len(chunk))
    finally:
        scorer.close()
    return rewards


def rescored_record(rollout: Rollout, reward: Reward) -> dict[str, Any]:
    """The output line: the input line, the new reward fields, the stored ones as
    `previous`."""
    record = dict(rollout.record)
    previous = rollout.stored.to_dict() if rollout.stored is not None else None
    for key in REWARD_FIELDS:
        record.pop(key, None)
    record.pop("previous", None)
    return {**record, **reward.to_dict(), "previous": previous}


@dataclass
class TaskChange:
    """How one task's rewards moved: samples, means before and after, changed rewards."""

    samples: int = 0
    before: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    changed: int = 0
    not_scored: int = 0

    def to_dict(self) -> dict[str, Any]:
        def mean(values: list[float]) -> float | None:
            return sum(values) / len(values) if values else None

        return {
            "samples": self.samples,
            "previous_mean": mean(self.before),
            "mean": mean(self.after),
            "changed": self.changed,
            "not_scored": self.not_scored,
        }


def write_rescored(
    handle: IO[str], rollouts: Sequence[Rollout], rewards: Sequence[Reward]
) -> dict[str, TaskChange]:
    """Write one output line per rollout and return the change per task."""
    changes: dict[str, TaskChange] = defaultdict(TaskChange)
    for rollout, reward in zip(rollouts, rewards, strict=True):
        write_line(handle, rescored_record(rollout, reward))
        change = changes[rollout.sample.task or "-"]
        change.samples += 1
        old = rollout.stored.score if rollout.stored is not None else None
        if old is not None:
            change.before.append(old)
        if reward.score is not None:
            change.after.append(reward.score)
        else:
            change.not_scored += 1
        if old != reward.score:
            change.changed += 1
    return dict(changes)
