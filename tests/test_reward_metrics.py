"""Per-task metrics: one name per (task, tool, statistic), whichever trainer logs them."""

from __future__ import annotations

import pytest

from rewardsmith.reward_metrics import task_metrics
from rewardsmith.types import Reward


def test_means_and_unscored_shares_per_task_and_tool() -> None:
    tasks = ["gsm8k", "gsm8k", "gsm8k", "openai/math", None, "fmt"]
    rewards = [
        Reward(1.0, tool="gsm8k@1"),
        Reward(0.0, tool="gsm8k@2"),  # versions share a name: dashboards survive an update
        Reward(None, "invalid_reference", tool="gsm8k@1"),
        Reward(0.0, "timeout", tool="math@1"),
        Reward(0.5, tool="gsm8k@1"),
        Reward(None, "not_applicable"),  # no tool chosen
    ]
    metrics = task_metrics(tasks, rewards)
    assert metrics == pytest.approx(
        {
            "rewardsmith/gsm8k/gsm8k/mean": 0.5,
            "rewardsmith/gsm8k/gsm8k/not_scored_frac": 1 / 3,
            "rewardsmith/gsm8k/gsm8k/failed_frac": 0.0,
            # a '/' in a task (veRL data sources) keeps the name at four parts
            "rewardsmith/openai_math/math/mean": 0.0,
            "rewardsmith/openai_math/math/not_scored_frac": 0.0,
            "rewardsmith/openai_math/math/failed_frac": 1.0,
            "rewardsmith/no_task/gsm8k/mean": 0.5,
            "rewardsmith/no_task/gsm8k/not_scored_frac": 0.0,
            "rewardsmith/no_task/gsm8k/failed_frac": 0.0,
            # nothing scored: no mean, only the share that says so
            "rewardsmith/fmt/none/not_scored_frac": 1.0,
            "rewardsmith/fmt/none/failed_frac": 0.0,
        }
    )


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="2 tasks for 1 rewards"):
        task_metrics(["a", "b"], [Reward(1.0)])
