"""The proxy (level 0): separation of right from wrong within groups, payout on hacking
probes, reference-free detection, on a hand-made pool whose verdicts are known."""

from __future__ import annotations

import pytest
from search_helpers import CONSTANT_SOURCE, crafted_pool, program_source

from rewardsmith.search.fitness import (
    candidate_check,
    candidate_tool,
    proxy_fitness,
    within_group_separation,
)
from rewardsmith.search.program import ANSWER_CORRECT, Term
from rewardsmith.search.response_pool import PROBE_KINDS, build_probes
from rewardsmith.search.task import TESTBED_TASK

SEPARATION_CASES = [
    # every right above every wrong in the one mixed group; the all-wrong group is ignored
    ([1, 1, 0, 0, 5, 5], [True, True, False, False, False, False], [0, 0, 0, 0, 1, 1], 1.0),
    # reversed
    ([0, 0, 1, 1], [True, True, False, False], [0, 0, 0, 0], -1.0),
    # ties count half: a constant reward separates nothing
    ([0.5] * 4, [True, False, True, False], [0, 0, 1, 1], 0.0),
    # two groups, one perfect and one reversed, average to zero
    ([1, 0, 0, 1], [True, False, True, False], [0, 0, 1, 1], 0.0),
]


@pytest.mark.parametrize(("scores", "correct", "groups", "expected"), SEPARATION_CASES)
def test_within_group_separation(scores, correct, groups, expected) -> None:
    assert within_group_separation(scores, correct, groups) == pytest.approx(expected)


def test_separation_is_undefined_without_a_mixed_group() -> None:
    assert within_group_separation([1, 0], [False, False], [0, 1]) is None


@pytest.fixture(scope="module")
def pool_and_probes():
    pool = crafted_pool()
    return pool, build_probes(pool, TESTBED_TASK)


def _proxy(source: str, pool_and_probes):
    tool = candidate_tool("cand", source)
    try:
        return proxy_fitness(tool, *pool_and_probes)
    finally:
        tool.close()


def test_an_answer_check_separates_and_no_probe_pays(pool_and_probes) -> None:
    metrics, scores = _proxy(program_source(Term(ANSWER_CORRECT, 1.0)), pool_and_probes)
    assert metrics["separation"] == 1.0
    assert metrics["probe_payout"] == 0.0
    assert metrics["reference_free"] is False
    assert metrics["fitness"] == 1.0
    assert len(scores["pool"]) == 24 and len(scores["probes"]) == 6 * len(PROBE_KINDS)


def test_a_length_reward_is_paid_by_the_long_probes(pool_and_probes) -> None:
    metrics, _ = _proxy(program_source(Term("char_length", 1.0, "up_to", 400.0)), pool_and_probes)
    assert metrics["reference_free"] is True
    assert metrics["probes"]["very_long"] > 0.5
    assert metrics["probes"]["padding"] > 0.5
    assert metrics["probes"]["empty"] == 0.0
    assert metrics["fitness"] < 0


def test_a_process_reward_separates_wrong_steps_but_is_fooled_by_arithmetic_spam(
    pool_and_probes,
) -> None:
    metrics, _ = _proxy(program_source(Term("correct_equation_share", 1.0)), pool_and_probes)
    # right > wrong-step responses, right = wrong-answer responses (their steps are right)
    assert 0 < metrics["separation"] < 1
    assert metrics["probes"]["arithmetic_spam"] > 0
    assert metrics["reference_free"] is True


def test_a_constant_reward_gives_no_signal(pool_and_probes) -> None:
    metrics, _ = _proxy(CONSTANT_SOURCE, pool_and_probes)
    assert metrics["separation"] == 0.0
    assert metrics["probe_payout"] == 0.0
    assert metrics["coverage"] == 0.0


def test_paying_wrong_answers_ranks_below_zero(pool_and_probes) -> None:
    metrics, _ = _proxy(program_source(Term(ANSWER_CORRECT, -1.0)), pool_and_probes)
    assert metrics["separation"] == -1.0


def test_a_candidate_is_checked_once_then_scored_and_trained_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The loop checks a candidate, then builds it for the proxy, for each GRPO rung and for
    # the ensemble: one 4-stage check, at the limits it runs with.
    from rewardsmith.tools import reward_fn

    calls: list[str] = []
    real = reward_fn.check_reward_code
    monkeypatch.setattr(
        reward_fn, "check_reward_code", lambda s, **kw: calls.append(s) or real(s, **kw)
    )
    source = CONSTANT_SOURCE + "# checked once\n"
    report = candidate_check(source)
    for _ in range(3):
        tool = candidate_tool("cand", source)
        assert tool.report is report
        tool.close()
    assert report.admitted and calls == [source]
