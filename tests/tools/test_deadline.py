"""Every verifier step has a deadline in whatever thread scores it: a timer signal on the
main thread, a profile hook elsewhere (signals never reach other threads)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest

from rewardsmith.tools.base import AnswerVerifier, Verdict
from rewardsmith.tools.deadline import StepTimeout, deadline
from rewardsmith.types import Reward, Sample, ToolSpec


class SlowScorer(AnswerVerifier):
    """A scorer with a pathological corner: pure-Python work that never ends on "slow"."""

    step_timeout = 0.2

    def extract(self, completion: str) -> str:
        return completion

    def compare(self, answer: str, reference: Any) -> Verdict:
        while answer == "slow":
            sum(range(100))
        return Verdict(1.0 if answer == reference else 0.0)


SAMPLES = [Sample("slow", reference="x"), Sample("x", reference="x")]


def _scores(rewards: list[Reward]) -> list[tuple[float | None, str]]:
    return [(r.score, r.status) for r in rewards]


def test_a_stuck_step_times_out_on_the_main_thread() -> None:
    rewards = SlowScorer(ToolSpec(name="slow")).score(SAMPLES)
    assert _scores(rewards) == [(0.0, "timeout"), (1.0, "ok")]


def test_a_timeout_swallowed_once_is_raised_again() -> None:
    # A timer signal that lands in a gc callback or a `__del__` has its exception printed
    # and dropped (a fresh clone's CI saw it in hypothesis's gc hook): the deadline fires again.
    swallowed = 0
    with pytest.raises(StepTimeout), deadline(0.05):
        try:
            while True:
                sum(range(100))
        except StepTimeout:
            swallowed += 1  # dropped, as a gc callback would drop it
        started = time.monotonic()
        while time.monotonic() - started < 5:  # the step goes on
            sum(range(100))
        raise AssertionError("the deadline did not fire again")
    assert swallowed == 1


def test_a_stuck_step_times_out_off_the_main_thread() -> None:
    out: list[list[Reward]] = []
    worker = threading.Thread(
        target=lambda: out.append(SlowScorer(ToolSpec(name="s")).score(SAMPLES))
    )
    worker.start()
    worker.join(timeout=120)  # a liveness bound, not a measurement: the step stops itself
    assert not worker.is_alive()
    assert _scores(out[0]) == [(0.0, "timeout"), (1.0, "ok")]
    assert "timed out after 0.2s" in out[0][0].reason


def test_the_callers_profiler_is_kept_and_restored() -> None:
    calls: list[str] = []

    def profiler(frame: Any, event: str, arg: Any) -> None:
        calls.append(event)

    after: list[Any] = []

    def run() -> None:
        sys.setprofile(profiler)
        try:
            with deadline(5.0):
                sum(range(10))
            after.append(sys.getprofile())
        finally:
            sys.setprofile(None)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=60)
    assert after == [profiler]
    assert "c_call" in calls  # the caller's profiler saw the calls inside the deadline too


def test_no_deadline_when_none_is_asked() -> None:
    with deadline(None):
        assert sum(range(10)) == 45
    with pytest.raises(StepTimeout), deadline(0.05):
        while True:
            sum(range(100))
