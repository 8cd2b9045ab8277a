"""The collapse monitor: within-group agreement against accuracy, step by step.

A label-free reward such as `majority_vote` pays a group for agreeing with itself; a policy
under RL pressure can raise it by collapsing onto one confident answer, right or wrong
(TTRL, Zuo et al. 2025, discuss this failure; round 2 of the project's label-free RM saw a
reward-model run collapse 0.400 -> 0.018). The monitor makes that visible in every GRPO run,
whatever the reward:

- `collapse/agreement`: the mean over the step's groups of the share of the group that gives
  its most frequent final answer (`tools.majority.agreement`; no answer and hedges never
  agree), read as `majority_vote` reads answers;
- the step's accuracy against the references (the trainer's `accuracy`, sampled at the
  training temperature: the only accuracy a step has; held-out accuracy is `grpo eval`'s);
- after `2 * window` steps, `collapse/agreement_change` and `collapse/accuracy_change`: the
  mean of the last `window` steps minus the mean of the first `window` steps;
- `collapse/flag`: 1.0 from the first step where agreement rose by at least `margin` while
  accuracy fell by at least `margin` (both window means), with one warning line in the log
  and the step in `collapse/marked_at_step`. Once marked, the run stays marked.

With a window of 20 steps of 64 completions, each window mean of accuracy has a standard
error of about 0.014 (p = 0.4), so the default margin of 0.05 is about 2.5 standard errors of
the difference: noise alone rarely marks a run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.tools.majority import AnswerReading, agreement, read_vote

log = logging.getLogger(__name__)

DEFAULT_WINDOW = 20
DEFAULT_MARGIN = 0.05


def group_agreement(
    texts: Sequence[str], prompts: Sequence[str], group_size: int, answers: AnswerReading
) -> float:
    """Mean within-group agreement of a rollout batch laid out group by group."""
    if group_size < 1 or len(texts) % group_size:
        raise ConfigError(f"{len(texts)} completions do not split into groups of {group_size}")
    shares = []
    for start in range(0, len(texts), group_size):
        votes = [read_vote(texts[i], prompts[i], answers) for i in range(start, start + group_size)]
        shares.append(agreement(votes))
    return sum(shares) / len(shares) if shares else 0.0


@dataclass
class CollapseMonitor:
    """Tracks agreement and accuracy per step and marks a collapsing run (module docstring)."""

    window: int = DEFAULT_WINDOW
    margin: float = DEFAULT_MARGIN
    answers: AnswerReading = "number"
    agreements: list[float] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    marked_at: int | None = None

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ConfigError(f"collapse window must be >= 1 step, got {self.window}")
        if not 0 < self.margin < 1:
            raise ConfigError(f"collapse margin must be in (0, 1), got {self.margin}")

    def observe(self, step: int, agreement_now: float, accuracy_now: float) -> dict[str, float]:
        """Record one step; return its `collapse/...` metrics."""
        self.agreements.append(agreement_now)
        self.accuracies.append(accuracy_now)
        metrics = {"collapse/agreement": agreement_now}
        w = self.window
        if len(self.agreements) >= 2 * w:
            d_agree = _mean(self.agreements[-w:]) - _mean(self.agreements[:w])
            d_acc = _mean(self.accuracies[-w:]) - _mean(self.accuracies[:w])
            metrics["collapse/agreement_change"] = d_agree
            metrics["collapse/accuracy_change"] = d_acc
            if self.marked_at is None and d_agree >= self.margin and -d_acc >= self.margin:
                self.marked_at = step
                log.warning(
                    "collapse: within-group agreement rose by %.3f while accuracy fell by "
                    "%.3f (mean of the last %d steps against the first %d, at step %d): the "
                    "reward pays agreement, not correctness",
                    d_agree,
                    -d_acc,
                    w,
                    w,
                    step,
                )
        metrics["collapse/flag"] = float(self.marked_at is not None)
        if self.marked_at is not None:
            metrics["collapse/marked_at_step"] = float(self.marked_at)
        return metrics

    def step(
        self,
        step: int,
        texts: Sequence[str],
        prompts: Sequence[str],
        group_size: int,
        accuracy_now: float,
    ) -> dict[str, float]:
        """`observe` one rollout batch: its agreement is measured here."""
        return self.observe(
            step, group_agreement(texts, prompts, group_size, self.answers), accuracy_now
        )

    def replay(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Rebuild the history from metric lines (a resumed run), marking as they did."""
        for row in rows:
            if "collapse/agreement" in row and "accuracy" in row:
                self.observe(int(row["step"]), row["collapse/agreement"], row["accuracy"])


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)
