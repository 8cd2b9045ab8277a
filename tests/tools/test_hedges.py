"""No reward for hedging, in every built-in tool: an answer that names several different
candidates is wrong when the reference is one value (reason "hedged: ..."); legitimate
answers with several values (sets, intervals, tuples, both roots of an equation, thousands
commas, reasoning before one final answer) stay right."""

from __future__ import annotations

import json

import pytest
import reasoning_gym

from rewardsmith.tools.choice import MultipleChoiceTool
from rewardsmith.tools.gsm8k import GSM8KTool
from rewardsmith.tools.math import MathTool
from rewardsmith.tools.reasoning_gym import ReasoningGymTool
from rewardsmith.tools.translation import TranslationTool
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec


def one(tool: RewardTool, completion: str, reference: str) -> Reward:
    return tool.score([Sample(completion, reference=reference)])[0]


GSM8K = GSM8KTool(ToolSpec(name="gsm8k"))
CHOICE = MultipleChoiceTool(ToolSpec(name="multiple_choice"))


@pytest.fixture(scope="module")
def math_tool() -> MathTool:
    return MathTool(workers=0)


@pytest.mark.parametrize(
    "completion",
    [
        # the cases
        "#### 72 or 73",
        "The answer is 72 or 73.",
        "#### 72, 73, 74",
        # the class: other phrasings, other markers, the right answer first or last
        "#### 73 or 72",
        "either 72 or 73",
        "The answer is 72 (or maybe 73).",
        "I think it is 72, or 73 if I misread the question.",
        "\\boxed{72} \\boxed{73}",
        "<answer>72</answer>\n<answer>73</answer>",
        "Final answer: 72\nAnswer: 73",
        "So she has 72 or 73 left.",
        "Candidates:\n73\n72",
        "The answer is 72 \u043er 73.",
    ],
)
def test_gsm8k_hedges_score_zero(completion: str) -> None:
    reward = one(GSM8K, completion, "72")
    assert (reward.score, reward.status) == (0.0, "ok")
    assert reward.reason.startswith("hedged: ")


@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        # thousands commas, reasoning numbers before one final answer, a repeated answer
        ("#### 1,000", "1000"),
        ("48 / 2 = 24 clips in May, 48 + 24 = 72 in all.\n#### 72", "72"),
        ("The answer is 72, not 73.", "72"),
        ("#### 72\n#### 72", "72"),
        ("<answer>72</answer>", "72"),
        ("**Answer:** 72", "72"),
    ],
)
def test_gsm8k_single_answers_stay_right(completion: str, reference: str) -> None:
    assert one(GSM8K, completion, reference).score == 1.0


@pytest.mark.parametrize(
    "completion",
    [
        "The answer is 72 is not right. The answer is not 72.",
        "It is definitely not 72.",
        "#### ",
    ],
)
def test_gsm8k_negated_or_empty_answers_score_zero(completion: str) -> None:
    assert one(GSM8K, completion, "72").score == 0.0


@pytest.mark.parametrize(
    "completion",
    [
        # the cases, then the class
        "The answer is (B) or (A).",
        "Answer: B, C",
        "Answer: B/C",
        "Answer: B (or maybe C)",
        "either B or C",
        "\\boxed{B} \\boxed{C}",
        "<answer>C</answer><answer>B</answer>",
        "Answer: B\nAnswer: C",
        "(A) or (B)",
        "A\nB\nC",
    ],
)
def test_multiple_choice_hedges_score_zero(completion: str) -> None:
    reward = one(CHOICE, completion, "B")
    assert reward.score == 0.0 and reward.reason.startswith("hedged: ")


@pytest.mark.parametrize(
    "completion",
    [
        "The answer is (B) Paris.",
        "Answer: B because A is wrong",
        "<answer>B</answer>",
        "```\nB\n```",
        "The answer is B, not C.",
    ],
)
def test_multiple_choice_single_answers_stay_right(completion: str) -> None:
    assert one(CHOICE, completion, "B").score == 1.0


def test_multiple_choice_echo_of_the_options_is_no_answer() -> None:
    echo = "Which gas do plants absorb?\n(A) Oxygen\n(B) Nitrogen\n(C) Helium\n(D) Carbon dioxide"
    assert one(CHOICE, echo, "D").score == 0.0


@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        # the case, then the class
        ("\\boxed{2} or \\boxed{3}", "2"),
        ("The answer is 2 or 3.", "2"),
        ("2 or 3", "2"),
        ("The answer is $2$ (or maybe $3$).", "2"),
        ("<answer>2</answer><answer>3</answer>", "2"),
        ("Final answer: \\frac{3}{56}/\\text{Evelyn}", "\\text{Evelyn}"),
        # a slash in prose (math-verify reads only the fraction before \\text{...})
        ("I think it is \\frac{14}{3}/\\text{Evelyn}.", "\\frac{14}{3}"),
        ("I think it is \\text{Evelyn}/\\frac{14}{3}.", "\\text{Evelyn}"),
        ("I think it is 14/\\text{Evelyn}.", "14"),
    ],
)
def test_math_hedges_score_zero(math_tool: MathTool, completion: str, reference: str) -> None:
    reward = one(math_tool, completion, reference)
    assert reward.score == 0.0 and reward.reason.startswith("hedged: ")


@pytest.mark.parametrize(
    ("completion", "reference"),
    [
        # both roots against a reference of both roots; sets, intervals, tuples
        ("x = 2 or x = 3", "2, 3"),
        ("The roots are $x = 2$ or $x = 3$.", "2, 3"),
        ("The primes are \\boxed{7, 3, 5}", "3, 5, 7"),
        ("The answer is [1, 3).", "[1, 3)"),
        ("\\boxed{(1, 2)}", "(1, 2)"),
        # a number with thousands commas; an answer in tags math-verify does not read itself
        ("\\boxed{1,000}", "1000"),
        ("<answer>\\frac{1}{2}</answer>", "0.5"),
        # reasoning before one final answer
        ("We have $2+3=5$ and $5-3=2$.\nFinal answer: $2$", "2"),
        # a short sentence, a quotient of LaTeX read whole
        ("So it is 5.", "5"),
        ("It is 3.5.", "3.5"),
        ("So it is 1,000.", "1000"),
        ("So it is \\sqrt{51}/\\frac{14}{3}.", "\\frac{3\\sqrt{51}}{14}"),
        ("Thus the ratio is \\frac{1}{2}/3.", "\\frac16"),
        # LaTeX without delimiters in prose (math-verify's prose reading keeps the "3")
        ("It is 3\\sqrt{13}.", "3\\sqrt{13}"),
        ("Result: 3\\sqrt{13}", "3\\sqrt{13}"),
        ("= 3\\sqrt{13}", "3\\sqrt{13}"),
        ("The student is \\text{Evelyn}.", "\\text{Evelyn}"),
        ("The area is 3\\sqrt{13} square units.", "3\\sqrt{13}"),
        ("Thus \\pi r^2 = 9\\pi", "9\\pi"),
        # the last clause of a line of relations is the answer
        ("Since \\sqrt{4} = 2, x = 2.", "2"),
        ("Finally, x^2 = 4 so x = \\pm 2", "\\pm 2"),
        # thousands separators beside an equation, for a one-valued reference
        ("x = 1,000", "1000"),
        ("So we get $x = 1,000$.", "1000"),
        ("It is 1,000\\sqrt{2}.", "1000\\sqrt{2}"),
    ],
)
def test_math_answers_with_several_values_stay_right(
    math_tool: MathTool, completion: str, reference: str
) -> None:
    assert one(math_tool, completion, reference).score == 1.0


def test_a_quotient_in_prose_is_read_whole(math_tool: MathTool) -> None:
    # math-verify's prose reading keeps only "90": the quotient is not 90 degrees
    assert one(math_tool, "I think it is 90^\\circ/3\\sqrt{13}.", "90^\\circ").score == 0.0


@pytest.mark.parametrize(
    "completion",
    ["The answer is not 2.", "It is definitely not $2$.", "2 is not the answer."],
)
def test_math_negated_answers_score_zero(math_tool: MathTool, completion: str) -> None:
    assert one(math_tool, completion, "2").score == 0.0


def test_reasoning_gym_hedges_score_zero_and_lists_stay_right() -> None:
    tool = ReasoningGymTool(ToolSpec(name="reasoning_gym"))
    item = reasoning_gym.create_dataset("basic_arithmetic", size=1, seed=7)[0]
    right, wrong = item["answer"], str(int(item["answer"]) + 1)
    reference = json.dumps(item)
    for completion in (
        f"<answer>{right}</answer><answer>{wrong}</answer>",
        f"<answer>{right} or {wrong}</answer>",
        f"Candidates:\n{wrong}\n{right}",
    ):
        reward = one(tool, completion, reference)
        assert reward.score == 0.0 and reward.reason.startswith("hedged: "), completion
    words = reasoning_gym.create_dataset("word_sorting", size=1, seed=7)[0]
    listed = one(tool, f"<answer>{words['answer']}</answer>", json.dumps(words))
    assert listed.score == 1.0  # a list answer is one answer
    longer = one(tool, f"<answer>{words['answer']}, zebra</answer>", json.dumps(words))
    assert longer.score == 0.0  # the right list followed by more is a shotgun


def test_translation_hedges_score_zero_and_a_label_is_read() -> None:
    tool = TranslationTool(ToolSpec(name="translation"))
    reference = "The cat sits on the mat."
    hedged = one(tool, f"<answer>{reference}</answer>\n<answer>A dog runs.</answer>", reference)
    assert hedged.score == 0.0 and hedged.reason.startswith("hedged: ")
    assert one(tool, f"Final answer: {reference}", reference).score == 1.0
