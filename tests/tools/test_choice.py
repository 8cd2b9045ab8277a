"""MultipleChoiceTool: the answer letter of a completion against the reference letter."""

from __future__ import annotations

from typing import Any

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.tools.choice import MultipleChoiceTool
from rewardsmith.types import Reward, Sample, ToolSpec

SPEC = ToolSpec(name="multiple_choice")


def score_one(completion: str, reference: str | None, **params: Any) -> Reward:
    tool = MultipleChoiceTool(spec=SPEC, **params)
    return tool.score([Sample(completion, reference=reference)])[0]


@pytest.mark.parametrize(
    ("completion", "letter"),
    [
        # answer phrases, as MMLU-Pro and GPQA prompts ask for them
        ("Let's think step by step. ... The answer is (B).", "B"),
        ("The answer is B", "B"),
        ("Answer: C", "C"),
        ("**Answer:** D", "D"),
        ("Answer: **C**", "C"),
        ("The correct option is D.", "D"),
        ("the answer is (d)", "D"),
        ("Answer: b", "B"),
        # \boxed{}
        ("So the final answer is $\\boxed{E}$.", "E"),
        ("\\boxed{\\text{C}}", "C"),
        ("\\boxed{(A)}", "A"),
        # the last line is the letter, or the letter with its option text
        ("Comparing the options, only one fits.\nB", "B"),
        ("Comparing the options, only one fits.\n(C)", "C"),
        ("Comparing the options, only one fits.\n**A**", "A"),
        ("Comparing the options, only one fits.\nD.", "D"),
        ("Comparing the options, only one fits.\nB) Paris", "B"),
        # a bold or parenthesized letter, and a letter that ends the completion
        ("I would go with **C** here, given the data.", "C"),
        ("Option (D) matches the description best, I think.", "D"),
        ("Having ruled out the rest, I pick C.", "C"),
        # the last answer phrase wins over earlier ones
        ("At first the answer is A. Wait, no: the answer is B.", "B"),
        # letters beyond D (MMLU-Pro has ten options)
        ("The answer is (J).", "J"),
    ],
)
def test_extracts_the_letter(completion: str, letter: str) -> None:
    tool = MultipleChoiceTool(spec=SPEC)
    assert tool.extract(completion) == letter
    assert tool.score([Sample(completion, reference=letter)])[0].score == 1.0


@pytest.mark.parametrize(
    ("completion", "letter"),
    [
        # the article "A" and the pronoun "I" in running text are not answers
        ("A cat sat on a mat.", None),
        ("A good answer needs care.", None),
        ("Answer: I think it is B", "B"),
        ("I am not sure about this one.", None),
        # a letter outside the alphabet, or no letter at all
        ("The answer is 42.", None),
        ("", None),
        ("   \n  ", None),
    ],
)
def test_avoids_false_letters(completion: str, letter: str | None) -> None:
    assert MultipleChoiceTool(spec=SPEC).extract(completion) == letter


@pytest.mark.parametrize(
    ("completion", "reference", "expected"),
    [
        # every reference form a dataset uses
        ("The answer is (B).", "B", 1.0),
        ("The answer is (B).", "(B)", 1.0),
        ("The answer is (B).", "B) Paris", 1.0),
        ("The answer is (B).", "b", 1.0),
        ("The answer is (B).", "B. Paris", 1.0),
        # a different letter scores 0.0
        ("The answer is (B).", "C", 0.0),
        ("Answer: A", "(D) London", 0.0),
        # no letter found: 0.0 with status ok
        ("I cannot decide.", "B", 0.0),
    ],
)
def test_compare(completion: str, reference: str, expected: float) -> None:
    reward = score_one(completion, reference)
    assert (reward.score, reward.status) == (expected, "ok"), reward.reason


@pytest.mark.parametrize(
    "reference",
    [
        # missing or blank
        None,
        "",
        # not a letter, or a letter outside A-J
        "Paris",
        "A cat",
        "K",
        "42",
    ],
)
def test_bad_reference_is_invalid_reference(reference: str | None) -> None:
    reward = score_one("The answer is (B).", reference)
    assert (reward.score, reward.status) == (None, "invalid_reference")
    assert reward.reason


@pytest.mark.parametrize(
    ("letters", "completion", "reference", "expected"),
    [
        # a four-option alphabet: the letter must be one of them
        ("ABCD", "The answer is (B).", "B", 1.0),
        ("ABCD", "The answer is (E).", "B", 0.0),
        (["a", "b", "c", "d"], "Answer: c", "C", 1.0),
    ],
)
def test_letters_param(letters: Any, completion: str, reference: str, expected: float) -> None:
    assert score_one(completion, reference, letters=letters).score == expected


def test_reference_outside_letters_is_invalid() -> None:
    assert score_one("The answer is (E).", "E", letters="ABCD").status == "invalid_reference"


@pytest.mark.parametrize(
    "letters",
    [
        # empty, repeated, not letters, not a string or list
        "",
        "AAB",
        "A1",
        ["AB", "C"],
        5,
    ],
)
def test_bad_letters_raise_config_error(letters: Any) -> None:
    with pytest.raises(ConfigError, match="letters"):
        MultipleChoiceTool(spec=SPEC, letters=letters)


def test_megabyte_completion_returns() -> None:
    completion = "A long digression about options. " * 32_000 + "\nThe answer is (C)."
    assert len(completion) > 1_000_000
    assert score_one(completion, "C").score == 1.0


def test_builtin_builds_from_registry() -> None:
    (builtin,) = [b for b in BUILTINS if b.factory.endswith(":MultipleChoiceTool")]
    tool = build_tool(builtin.spec, builtin.config())
    assert isinstance(tool, MultipleChoiceTool)
    assert tool.score([Sample("Answer: B", reference="B")])[0].score == 1.0
