"""The verifier pool's messages: each written by its type and read back to the same
message; frames of any other shape refused, so a worker that speaks nonsense is a broken
worker, never a reward."""

from __future__ import annotations

from typing import Any

import pytest

from rewardsmith.tools.verifier_messages import (
    ItemChecked,
    Job,
    MessageError,
    Ready,
    ReferenceChecked,
    ToolFailed,
    event_from_check,
    read_event,
    read_job,
)
from rewardsmith.types import Reward

REWARD = Reward(1.0, "ok", tool="math@1", reason="equivalent to the reference")


@pytest.mark.parametrize(
    "event",
    [Ready(4242), ReferenceChecked(""), ReferenceChecked("no answer in it"), ToolFailed("boom")],
)
def test_each_event_is_read_back_as_written(event: Any) -> None:
    assert read_event(event.frame(), "math@1") == event


def test_an_item_is_read_back_with_the_pools_own_tool() -> None:
    # the worker's tool name is not trusted: the pool stamps its own
    sent = ItemChecked(3, Reward(1.0, tool="forged@9", reason="x")).frame()
    assert read_event(sent, "math@1") == ItemChecked(3, Reward(1.0, tool="math@1", reason="x"))
    assert read_event(ItemChecked(0, REWARD).frame(), "math@1") == ItemChecked(0, REWARD)


def test_a_job_is_read_back_as_written() -> None:
    for job in (Job("2", ["\\boxed{2}", "3"]), Job(None, [])):
        assert read_job(job.frame()) == Job(job.reference, list(job.completions))


def test_check_group_events_become_messages() -> None:
    assert event_from_check(("reference", "")) == ReferenceChecked("")
    assert event_from_check(("item", 2, REWARD)) == ItemChecked(2, REWARD)


@pytest.mark.parametrize(
    "frame",
    [
        None,
        [],
        "ready",
        ["ready"],
        ["ready", True],  # a bool is no pid
        ["reference", 3],
        ["item", "0", REWARD.to_dict()],
        ["item", 0, "a reward"],
        ["item", 0, {"reward": "1.0", "status": "ok"}],  # a reward with a bad field
        ["item", 0, {"reward": 1.0, "status": "paid"}],
        ["score", 1.0],  # a message no worker sends
        ["failed"],
    ],
)
def test_other_frames_are_refused(frame: Any) -> None:
    with pytest.raises(MessageError):
        read_event(frame, "math@1")


@pytest.mark.parametrize(
    "frame", [["2", ["a"]], ["job", "2"], ["job", 2, ["a"]], ["job", "2", [1]], ["job", "2", "a"]]
)
def test_other_jobs_are_refused(frame: Any) -> None:
    with pytest.raises(MessageError):
        read_job(frame)
