"""`compare_rewards`: verdicts, confusion table, exact McNemar overall and per task, flips."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from rewardsmith.rollout_log import Rollout
from rewardsmith.rollouts.compare import compare_rewards, verdict
from rewardsmith.types import Reward, Sample


def rollout(i: int, task: str | None) -> Rollout:
    return Rollout(i + 1, {}, Sample(f"completion {i}", task=task, id=str(i)), None, str(i))


@pytest.mark.parametrize(
    ("reward", "threshold", "expected"),
    [
        (Reward(1.0), 1.0, "pass"),
        (Reward(0.99), 1.0, "fail"),
        (Reward(0.6), 0.5, "pass"),  # continuous tools: the threshold decides
        (Reward(0.0, "timeout"), 1.0, "fail"),  # a failed run scored 0.0 is a fail
        (Reward(None, "invalid_reference"), 1.0, "not scored"),
    ],
)
def test_verdict(reward: Reward, threshold: float, expected: str) -> None:
    assert verdict(reward, threshold) == expected


def test_confusion_mcnemar_and_flips() -> None:
    # A passes 6, B refuses 4 of them (a stricter version) and passes one A fails;
    # one rollout B cannot score
    a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 1]
    b = [1, 1, 0, 0, 0, 0, 1, 0, 0, None]
    tasks = ["x", "x", "x", "x", "y", "y", "y", "y", "y", "y"]
    rollouts = [rollout(i, t) for i, t in enumerate(tasks)]
    report = compare_rewards(
        rollouts,
        [Reward(float(v)) for v in a],
        [Reward(None, "not_applicable") if v is None else Reward(float(v)) for v in b],
    )
    assert report["samples"] == 10 and report["agreement"] == pytest.approx(0.4)
    assert report["confusion"]["pass"] == {"pass": 2, "fail": 4, "not scored": 1}
    assert report["confusion"]["fail"] == {"pass": 1, "fail": 2, "not scored": 0}
    test = report["mcnemar"]
    # only the 9 rollouts both scored are paired: 4 only-A passes, 1 only-B pass
    assert (test["paired"], test["only_a"], test["only_b"]) == (9, 4, 1)
    assert test["p_value"] == pytest.approx(binomtest(4, 5, 0.5).pvalue)
    # per task, Bonferroni over the two tasks
    x, y = report["by_task"]["x"], report["by_task"]["y"]
    assert (x["only_a"], x["only_b"], y["only_a"], y["only_b"]) == (2, 0, 2, 1)
    assert x["p_bonferroni"] == pytest.approx(min(1.0, 2 * binomtest(2, 2, 0.5).pvalue))
    assert (y["not_scored_b"], y["pass_a"], y["pass_b"]) == (1, 3, 1)
    # every rollout whose verdict differs is listed, with both sides
    assert [f["line"] for f in report["flips"]] == [3, 4, 5, 6, 7, 10]
    assert report["flips"][-1]["b"]["verdict"] == "not scored"


def test_identical_verdicts_agree_fully() -> None:
    rollouts = [rollout(i, None) for i in range(3)]
    same = [Reward(1.0), Reward(0.0), Reward(1.0)]
    report = compare_rewards(rollouts, same, same)
    assert report["agreement"] == 1.0 and report["flips"] == []
    assert report["mcnemar"]["p_value"] == 1.0 and list(report["by_task"]) == ["-"]
