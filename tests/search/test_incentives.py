"""The proxy sees incentives that point away from correctness: answer twins (right vs wrong
answer in the same response), the silent direction (which form a reward prefers when every
answer is wrong), and well-formed wrong probes from the exploit corpus."""

from __future__ import annotations

import pytest
from search_helpers import CONSTANT_SOURCE, crafted_pool, misdirection_pool, program_source

from rewardsmith.rl.answers import judge_answer
from rewardsmith.search.fitness import candidate_tool, proxy_fitness
from rewardsmith.search.incentives import (
    WELL_FORMED_ATTACKS,
    build_incentives,
    silent_direction,
    twin_direction,
)
from rewardsmith.search.program import ANSWER_CORRECT, Term
from rewardsmith.search.response_pool import build_probes
from rewardsmith.search.task import TESTBED_TASK

ANSWER_CHECK = program_source(Term(ANSWER_CORRECT, 1.0))
# The habit of the misdirection pool's wrong responses: a line of text before the tags.
HABIT = Term("text_outside_tags", 0.5, "at_least", 5.0)

# Pays the reference's number wherever it stands: a lenient check that shotguns, hedges
# and "the answer is not N" are paid by.
CONTAINS_REFERENCE = """
import re

BOUNDS = (0.0, 1.0)


def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        numbers = re.findall(r"\\d+", str(r))
        out.append(1.0 if numbers and numbers[-1] in re.findall(r"\\d+", c) else 0.0)
    return out
"""

# Round 1's failure: the answer check plus a habit that goes with wrong answers. In mixed
# groups right is always paid more (separation 1); in all-wrong groups the habit is paid.
HABITS = [
    pytest.param(program_source(Term(ANSWER_CORRECT, 1.0), HABIT), id="habit"),
    pytest.param(
        program_source(
            Term(ANSWER_CORRECT, 1.0), Term("text_outside_tags", 0.5, "at_least", 5.0, "wrong")
        ),
        id="habit_on_wrong_answers",
    ),
    pytest.param(
        program_source(Term(ANSWER_CORRECT, 1.0), Term("line_count", 0.25, "at_least", 2.0)),
        id="extra_lines",
    ),
]
# Pays wrong answers more than right ones of the same prompt.
WRONG_OVER_RIGHT = [
    pytest.param(program_source(Term(ANSWER_CORRECT, -1.0)), id="negated_check"),
    pytest.param(program_source(Term("answer_is_number", 1.0, when="wrong")), id="pays_wrong"),
    pytest.param(
        program_source(Term(ANSWER_CORRECT, 0.5), Term("answer_is_number", 1.0, when="wrong")),
        id="wrong_outpays_right",
    ),
]


@pytest.fixture(scope="module")
def misdirection():
    pool = misdirection_pool()
    return pool, build_probes(pool, TESTBED_TASK), build_incentives(pool, TESTBED_TASK)


@pytest.fixture(scope="module")
def all_wrong():
    pool = [it for it in misdirection_pool() if it.group >= 4]
    return pool, build_probes(pool, TESTBED_TASK), build_incentives(pool, TESTBED_TASK)


def _proxy(source: str, material):
    tool = candidate_tool("cand", source)
    try:
        return proxy_fitness(tool, *material)[0]
    finally:
        tool.close()


def test_twins_differ_only_in_the_answer_and_the_judge_agrees(misdirection) -> None:
    pool, _, incentives = misdirection
    # every response of the pool is parseable: each has its twins, both judged as intended
    assert len(incentives.twins) == len(pool)
    for twin in incentives.twins:
        assert judge_answer(twin.right, twin.reference).correct
        assert not judge_answer(twin.wrong, twin.reference).correct
        head = twin.right[: twin.right.rfind("<solution>")]
        assert twin.wrong.startswith(head)


def test_well_formed_wrong_probes_come_from_the_exploit_corpus_and_are_wrong(misdirection) -> None:
    _, _, incentives = misdirection
    kinds = {p.probe for p in incentives.wrong_probes}
    assert kinds <= set(WELL_FORMED_ATTACKS) and len(kinds) >= 4
    for probe in (*incentives.wrong_probes, *incentives.plain_wrong):
        assert not judge_answer(probe.completion, probe.reference).correct
    assert max(incentives.probe_bar) < len(incentives.plain_wrong)


@pytest.mark.parametrize("source", HABITS + WRONG_OVER_RIGHT)
def test_incentives_away_from_correctness_get_a_low_proxy(source, misdirection) -> None:
    metrics = _proxy(source, misdirection)
    assert metrics["misdirection"] >= 0.75
    assert metrics["fitness"] <= 0.0 < _proxy(ANSWER_CHECK, misdirection)["fitness"]


@pytest.mark.parametrize("source", WRONG_OVER_RIGHT)
def test_paying_wrong_over_right_scores_low_where_every_response_is_wrong(
    source, all_wrong
) -> None:
    # no group holds a right response: separation says nothing, the twins still do
    metrics = _proxy(source, all_wrong)
    assert metrics["separation"] == 0.0 and "note" in metrics
    assert metrics["twin_direction"] == -1.0
    assert metrics["fitness"] <= -0.5
    assert _proxy(ANSWER_CHECK, all_wrong)["fitness"] == 0.0


def test_the_old_proxy_missed_the_round_one_shape(misdirection) -> None:
    # separation - probe payout (the round-1 fitness) ranks the habit like an answer check
    metrics = _proxy(program_source(Term(ANSWER_CORRECT, 1.0), HABIT), misdirection)
    assert metrics["separation"] == 1.0
    assert metrics["separation"] - metrics["probe_payout"] >= 0.9
    assert metrics["silent_direction"] == -1.0


ALIGNED = [
    # a plain answer check: right twin over wrong twin, silent when every answer is wrong
    pytest.param(ANSWER_CHECK, 1.0, id="answer_check"),
    # the answer check plus a form right responses have (no text outside the tags)
    pytest.param(
        program_source(Term(ANSWER_CORRECT, 1.0), Term("text_outside_tags", 0.5, "at_most", 0.0)),
        0.9,
        id="answer_check_and_clean_tags",
    ),
]


@pytest.mark.parametrize(("source", "least"), ALIGNED)
def test_a_correctness_reward_keeps_a_high_proxy(source, least, misdirection) -> None:
    metrics = _proxy(source, misdirection)
    assert metrics["twin_direction"] == 1.0
    assert metrics["misdirection"] == 0.0
    assert metrics["wrong_payout"] == 0.0
    assert metrics["fitness"] >= least


def test_an_answer_check_keeps_its_proxy_on_the_crafted_pool() -> None:
    pool = crafted_pool()
    material = (pool, build_probes(pool, TESTBED_TASK), build_incentives(pool, TESTBED_TASK))
    metrics = _proxy(ANSWER_CHECK, material)
    assert metrics["fitness"] == 1.0 and metrics["silent_direction"] == 0.0


def test_a_reward_paid_by_tricks_pays_out_on_well_formed_wrong_probes(misdirection) -> None:
    metrics = _proxy(CONTAINS_REFERENCE, misdirection)
    # shotguns, hedges, "not N" and a sentence holding the right number are paid, a plain
    # wrong answer is not
    assert metrics["wrong_probes"]["shotgun"] > 0.5
    assert metrics["wrong_probes"]["reference_in_sentence"] > 0.5
    assert metrics["wrong_payout"] > 0.2
    assert metrics["fitness"] < _proxy(ANSWER_CHECK, misdirection)["fitness"] - 0.2


def test_a_constant_reward_points_nowhere(misdirection) -> None:
    metrics = _proxy(CONSTANT_SOURCE, misdirection)
    assert metrics["twin_direction"] == 0.0 and metrics["silent_direction"] == 0.0
    assert metrics["misdirection"] == 0.0 and metrics["wrong_payout"] == 0.0


DIRECTIONS = [
    # right twins above wrong ones; reversed; ties half
    ([1, 1], [0, 0], 1.0),
    ([0, 0], [1, 1], -1.0),
    ([1, 0.5], [0, 0.5], 0.5),
]


@pytest.mark.parametrize(("right", "wrong", "expected"), DIRECTIONS)
def test_twin_direction(right, wrong, expected) -> None:
    assert twin_direction(right, wrong) == pytest.approx(expected)


def test_directions_are_undefined_without_material() -> None:
    assert twin_direction([], []) is None
    assert silent_direction([], [], []) is None
