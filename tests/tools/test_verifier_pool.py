"""The verifier pool runs any `AnswerVerifier`'s own `check_group` in worker processes: the
rewards equal the in-process ones, and workers that cannot start end in errors, not hangs."""

from __future__ import annotations

import time

from rewardsmith.tools.base import Group
from rewardsmith.tools.gsm8k import GSM8KTool
from rewardsmith.tools.verifier_pool import MAX_START_FAILURES, VerifierPool
from rewardsmith.types import ToolSpec

SPEC = ToolSpec(name="gsm8k_pooled", version=3)
# Two references (one invalid), repeated and bad completions, a group bigger than a chunk.
GROUPS = [
    Group("#### 72", ["so 72", "The answer is \\boxed{72}.", "71", "", "no number", "7,2"]),
    Group("not a number", ["72"]),
    Group("1,000", [f"{n}" for n in range(990, 1010)]),
]


def test_workers_give_the_rewards_of_the_tool_in_this_process() -> None:
    tool = GSM8KTool(SPEC)
    here = tool.verify_groups(GROUPS)
    pool = VerifierPool(2, SPEC, "rewardsmith.tools.gsm8k:GSM8KTool", {}, timeout=5.0)
    try:
        pooled = pool.verify(GROUPS)
        assert len(set(pool.pids())) == 2
    finally:
        pool.close()
    assert pooled == here
    assert [r.score for r in pooled[0]] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert {r.status for r in pooled[1]} == {"invalid_reference"}
    assert [r.score for r in pooled[2]].count(1.0) == 1
    assert {r.tool for row in pooled for r in row} == {"gsm8k_pooled@3"}


def test_workers_that_cannot_start_end_in_errors_not_a_hang() -> None:
    pool = VerifierPool(1, SPEC, "rewardsmith.tools.gsm8k:NoSuchTool", {}, timeout=5.0)
    began = time.monotonic()
    try:
        rewards = pool.verify(GROUPS[:1])
    finally:
        pool.close()
    assert time.monotonic() - began < 60
    assert {r.status for r in rewards[0]} == {"error"}
    assert all(f"failed to start {MAX_START_FAILURES} times" in r.reason for r in rewards[0])
