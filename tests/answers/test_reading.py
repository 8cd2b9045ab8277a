"""One reading of a completion's final answer for synthesized verifiers: every common style,
one precedence, sentence punctuation not part of the answer, self-denied answers none."""

from __future__ import annotations

import pytest

from rewardsmith.answers import read_final, same_after_sentence_end

CASES = [
    # markers, strongest last one wins
    ("<think>x</think>\n<answer>2019-10-23</answer>", ("answer_tags", "2019-10-23")),
    ("So \\boxed{atad}", ("boxed", "atad")),
    ("#### 18", ("hashes", "18")),
    ("Final answer: a, b, c", ("final_answer", "a, b, c")),
    ("**Final answer:** **abc**.", ("final_answer", "abc")),
    ('The answer is: "hello".', ("label", "hello")),
    ("Let me think.\n\n**Answer:** Q1, Q2", ("label", "Q1, Q2")),
    # a sentence's period ends the sentence; a delimited answer keeps it
    ("The answer is 42.", ("answer_is", "42")),
    ("The answer is 3.5.", ("answer_is", "3.5")),
    ("<answer>olleh.</answer>", ("answer_tags", "olleh.")),
    # JSON "answer" field, fenced block
    ('Done.\n{"answer": "x y"}', ("json_answer", "x y")),
    ('{"answer": [1, 2]}', ("json_answer", "[1, 2]")),
    ("Grid:\n```\n1 2\n3 4\n```", ("fenced", "1 2\n3 4")),
    ("Final answer:\n```\n1 2\n3 4\n```", ("fenced", "1 2\n3 4")),
    # a label and colon on the last line; a heading with lines under it
    ("Sorted: fig, date, olive", ("label_colon", "fig, date, olive")),
    ("ISO date: 2019-10-23", ("label_colon", "2019-10-23")),
    ("Sorted: a, b, c.", ("label_colon", "a, b, c")),
    ("Final grid:\n1 2\n3 4", ("label_colon", "1 2\n3 4")),
    (
        "Candidates:\nSee paragraph 1.\nYou are tired.",
        ("label_colon", "See paragraph 1.\nYou are tired."),
    ),
    # grid rows under a marker read whole; a closing remark is not a row
    ("Final answer: 1 2\n3 4", ("final_answer", "1 2\n3 4")),
    ("The answer is 42.\nI hope this helps", ("answer_is", "42")),
    # an alternative after the sentence's end stays part of the answer
    ("**Answer:** See paragraph 1. (or maybe 2)", ("label", "See paragraph 1. (or maybe 2)")),
    # a long answer on a marker's line is read whole
    ("#### " + "x" * 500, ("hashes", "x" * 500)),
    # the last line as it stands (a time is no label)
    ("Working.\n\n12:30", ("last_line", "12:30")),
    ("Working.\n\nolleh.", ("last_line", "olleh.")),
    ("Working.\n\n**kiwi**", ("last_line", "kiwi")),
    # answers that deny themselves are none
    ("After working it out:\n\\frac{2}{5} is not the answer.", None),
    ("Final answer: not 42", None),
    ("The answer isn't 7.", None),
    ("It is definitely not 7.", None),
    ("x\n42 is wrong", None),
    ("Working.\n\nIt is not raining.", ("last_line", "It is not raining.")),
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_read_final(text: str, expected: tuple[str, str] | None) -> None:
    assert read_final(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is olleh.", "olleh."),
        ("Sorted: a, b.", "a, b."),
        ("<answer>olleh</answer>", "olleh"),
    ],
)
def test_as_written_keeps_a_sentences_period(text: str, expected: str) -> None:
    found = read_final(text, False)
    assert found is not None and found[1] == expected


def test_a_reference_that_ends_a_sentence_matches_an_answer_read_without_it() -> None:
    same = str.__eq__
    assert same_after_sentence_end("The cat sat", "The cat sat.", same)
    assert same_after_sentence_end("The cat sat.", "The cat sat.", same)
    assert not same_after_sentence_end("The cat", "The cat sat.", same)
    assert not same_after_sentence_end("42", "43", same)


def test_reading_is_linear_in_the_text() -> None:
    # a long last line and many JSON openers: bounded work, an answer all the same
    text = "{" * 50_000 + "\nResult: ok"
    assert read_final(text) == ("label_colon", "ok")
