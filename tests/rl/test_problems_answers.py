"""The testbed's problems and the strict answer reader: every worked solution is right and
scores 1.0 with the training rewards; the held-out split shares no question with training."""

from __future__ import annotations

import pytest

from rewardsmith.rl import problems as P
from rewardsmith.rl.answers import extract_answer, judge_answer
from rewardsmith.scoring import score


def test_problems_are_deterministic_per_seed_and_split() -> None:
    assert P.generate(50, 3, "rl") == P.generate(50, 3, "rl")
    assert P.generate(50, 3, "rl") != P.generate(50, 4, "rl")
    assert P.generate(50, 3, "rl") != P.generate(50, 3, "sft")


def test_worked_solutions_are_arithmetically_right() -> None:
    for p in P.generate(300, 0, "sft"):
        steps = [s for s in p.thinking.split(". ") if s]
        for step in steps:
            lhs, rhs = step.rstrip(".").split("=")
            assert eval(lhs) == int(rhs), p  # noqa: S307 - our own "3*6" strings
        assert int(steps[-1].rstrip(".").split("=")[1]) == p.answer
        assert p.answer >= 0


def test_targets_score_full_marks_with_the_training_rewards(library: object) -> None:
    problems = P.generate(40, 0, "rl")
    samples = [{"completion": p.completion, "reference": p.reference} for p in problems]
    for tool in ("gsm8k", "format_tags", "gsm8k_with_format"):
        rewards = score(samples, tool, library=library)  # type: ignore[arg-type]
        assert [r.score for r in rewards] == [1.0] * len(problems), tool


def test_held_out_split_excludes_training_questions() -> None:
    train = P.generate(2000, 0, "sft") + P.generate(2000, 0, "rl")
    test = P.split_problems(300, 0, "test", exclude=train)
    assert len(test) == 300 and len({p.question for p in test}) == 300
    assert not {p.question for p in test} & {p.question for p in train}


# (completion, format, parseable, correct) against the reference "32"
CASES = [
    # the testbed format, right and wrong
    ("<thinking>14+18=32.</thinking><solution>32</solution>", "solution", True, True),
    ("<thinking>14+18=31.</thinking><solution>31</solution>", "solution", True, False),
    # the last solution block counts; surrounding spaces and a currency sign are fine
    ("<solution>1</solution> <solution> $32 </solution>", "solution", True, True),
    # no closed block, or prose inside it: not parseable under the strict reader
    ("<thinking>14+18=32.</thinking><solution>32", "solution", False, False),
    ("<solution>about 32 apples</solution>", "solution", False, False),
    ("<solution>32 or 33</solution>", "solution", False, False),
    ("the answer is 32", "solution", False, False),
    # the gsm8k reader takes the final number wherever it is
    ("the answer is 32", "gsm8k", True, True),
    ("14 + 18 = 32. #### 32", "gsm8k", True, True),
    ("no number at all", "gsm8k", False, False),
]


@pytest.mark.parametrize(("completion", "fmt", "parseable", "correct"), CASES)
def test_judge(completion: str, fmt: str, parseable: bool, correct: bool) -> None:
    verdict = judge_answer(completion, "32", fmt)  # type: ignore[arg-type]
    assert (verdict.parseable, verdict.correct) == (parseable, correct)


def test_extract_answer_handles_negatives_and_commas() -> None:
    assert extract_answer("<solution>-3</solution>") == -3
    assert extract_answer("<solution>1,000</solution>") == 1000
