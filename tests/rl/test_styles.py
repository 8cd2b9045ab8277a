"""The multi-task testbed's answer styles: every style reads back to its answer, hedges and
empty marks have none, and rendering follows the table of `rl.styles`."""

from __future__ import annotations

import pytest

from rewardsmith.rl.styles import STYLES, final_answer, read_answer, render

CASES = [
    # each style, with steps
    ("<thinking>3*6=18. 14+18=32.</thinking><solution>32</solution>", "32"),
    ("<think>2 words.</think>\n<answer>sun, dog</answer>", "sun, dog"),
    ("7+5=12. So the answer is \\boxed{12}.", "12"),
    ("7+5=12. The answer is 12.", "12"),
    ("9:50+2:35=11:85. 11:85=12:25.\nFinal answer: 12:25", "12:25"),
    ("4*9=36. 81-36=45.\n#### 45", "45"),
    # direct answers
    ("<solution>7</solution>", "7"),
    ("\\boxed{C}", "C"),
    ("The answer is (B).", "B"),
    ("Final answer: 8, 11, 64", "8, 11, 64"),
    # a decimal point is not the end of the sentence; a bare last line is the answer
    ("The answer is 2.5.", "2.5"),
    ("some steps\n41", "41"),
    # the same answer marked twice is one answer
    ("<solution>32</solution> The answer is 32.", "32"),
]

NO_ANSWER = [
    # hedges: two candidates in one mark, or two marks that disagree
    ("The answer is 31 or 32.", True),
    ("<solution>31</solution> So the answer is \\boxed{32}.", True),
    ("Final answer: B or C", True),
    # marks with nothing in them, and nothing at all
    ("<thinking>1+1=2.</thinking><solution></solution>", False),
    ("", False),
]


@pytest.mark.parametrize(("text", "answer"), CASES)
def test_every_style_reads_back_its_answer(text: str, answer: str) -> None:
    assert final_answer(text) == answer


@pytest.mark.parametrize(("text", "hedged"), NO_ANSWER)
def test_hedges_and_empty_marks_have_no_answer(text: str, hedged: bool) -> None:
    read = read_answer(text)
    assert read.answer is None
    assert read.hedged is hedged


def test_an_empty_solution_block_is_format_only() -> None:
    assert read_answer("<thinking>x</thinking><solution> </solution>").format_only
    assert not read_answer("<solution>4</solution>").format_only


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("steps", ["3+4=7.", ""])
@pytest.mark.parametrize(("answer", "kind"), [("7", "text"), ("B", "letter"), ("1, 2, 3", "text")])
def test_rendered_completions_read_back(style: str, steps: str, answer: str, kind: str) -> None:
    text = render(style, steps, answer, kind)
    assert final_answer(text) == answer
    assert (steps in text) and (bool(steps) == text.startswith(("<thinking>3", "<think>3", "3")))


def test_an_unknown_style_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown style"):
        render("markdown", "", "1")
