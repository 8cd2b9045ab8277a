"""The multi-task testbed's data: families are deterministic and prefix-stable, their worked
steps compute their answers, their graders are right on a table of real cases, and every
warm-start completion is graded as what it is (right, or a hedge)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from rewardsmith.rl import multitask as M
from rewardsmith.rl.answers import judge_answer
from rewardsmith.rl.families import FAMILIES, family
from rewardsmith.rl.oracle import FamilyOracle
from rewardsmith.types import Sample


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_family_is_seeded_and_its_first_tasks_do_not_depend_on_how_many(name: str) -> None:
    fam = family(name)
    ten, thirty = fam.generate(10, 5), fam.generate(30, 5)
    assert ten == thirty[:10] == fam.generate(10, 5)
    assert fam.generate(10, 6) != ten
    for task in thirty:
        assert task.family == name and task.question and task.answer
        assert fam.correct(task.answer, task.reference)


# Steps end in the answer's value: the last equation of a computation, or the sorted order.
@pytest.mark.parametrize("name", ["arith_word", "chain_sum", "leg_counting", "clock"])
def test_the_last_step_computes_the_answer(name: str) -> None:
    for task in family(name).generate(40, 0):
        last = task.steps[-1].rpartition("=")[2]
        assert last == task.answer, (task.question, task.steps)


def test_the_steps_of_a_choice_name_the_right_letter() -> None:
    for task in family("choice").generate(40, 0):
        value = task.steps[-2].rpartition("=")[2]
        assert task.steps[-1] == f"{value} is ({task.answer})"
        assert re.search(rf"\({task.answer}\) {value}\b", task.question)


GRADES = [
    # numbers: by value, one number only
    ("arith_word", "32", "32", True),
    ("arith_word", "32.0", "32", True),
    ("arith_word", "32 apples", "32", False),
    ("arith_word", "33", "32", False),
    # reasoning-gym's own scorers, full credit only
    ("chain_sum", "114", "114", True),
    ("chain_sum", "+0114", "114", True),
    ("leg_counting", "44", "44", True),
    ("leg_counting", "44 legs", "44", False),
    ("word_reversal", "law, forces, Verne", "law, forces, Verne", True),
    ("word_reversal", "law, Verne, forces", "law, forces, Verne", False),
    # letters, lists in order, clock times by value
    ("choice", "B", "B", True),
    ("choice", "(b)", "B", True),
    ("choice", "BC", "B", False),
    ("sort_numbers", "8, 11, 64", "8, 11, 64", True),
    ("sort_numbers", "[8,11,64]", "8, 11, 64", True),
    ("sort_numbers", "11, 8, 64", "8, 11, 64", False),
    ("clock", "09:05", "9:05", True),
    ("clock", "9:50", "9:05", False),
    ("clock", "9.05", "9:05", False),
]


@pytest.mark.parametrize(("name", "answer", "reference", "right"), GRADES)
def test_each_family_grades_by_its_own_rule(
    name: str, answer: str, reference: str, right: bool
) -> None:
    assert family(name).correct(answer, reference) is right


def test_warm_start_completions_are_right_unless_they_hedge() -> None:
    examples = M.sft_examples(1500, 0)
    oracle = FamilyOracle()
    rewards = oracle.score(
        [Sample(e.completion, e.prompt, e.task.reference, e.task.family) for e in examples]
    )
    for example, reward in zip(examples, rewards, strict=True):
        verdict = judge_answer(
            example.completion, example.task.reference, "family", example.task.family
        )
        assert verdict.correct is (not example.hedged), example.completion
        assert reward.score == (0.0 if example.hedged else 1.0)
    # every family and style is there, steps mostly where the style says, a few hedges
    assert set(Counter(e.task.family for e in examples)) == set(M.MIX)
    assert set(Counter(e.style for e in examples)) == set(M.STEPS_SHARE)
    tags = [e for e in examples if e.style == "tags"]
    hashes = [e for e in examples if e.style == "hashes"]
    assert sum(e.with_steps for e in tags) / len(tags) > 0.75
    assert sum(e.with_steps for e in hashes) / len(hashes) < 0.45
    assert 0.01 < sum(e.hedged for e in examples) / len(examples) < 0.06


def test_held_out_tasks_leave_out_the_excluded_questions() -> None:
    train = M.draw(3000, 0, "sft", ("choice",))
    held = M.held_out(200, 0, ("choice",), exclude=train)
    assert len({t.question for t in held}) == 200
    assert not {t.question for t in held} & {t.question for t in train}


def test_the_oracle_leaves_other_tasks_alone() -> None:
    oracle = FamilyOracle()
    reward = oracle.score([Sample("The answer is 4.", "q", "4", "gsm8k")])[0]
    assert reward.status == "not_applicable" and reward.score is None
    hedge = oracle.score([Sample("The answer is 4 or 5.", "q", "4", "chain_sum")])[0]
    assert hedge.score == 0.0 and re.search("hedge", hedge.reason)
