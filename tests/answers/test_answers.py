"""rewardsmith.answers: the final answer in every common style, and what a hedge is."""

from __future__ import annotations

import pytest

from rewardsmith.answers import (
    STYLE_NAMES,
    alternatives,
    clean,
    embeddable_source,
    read_answers,
    render_style,
    split_for,
)
from rewardsmith.sandbox.confine import restricted_globals
from rewardsmith.sandbox.policy import static_check


@pytest.mark.parametrize("style", STYLE_NAMES)
def test_every_common_style_is_read_back(style: str) -> None:
    # the styles the corpus writes right answers in are the styles the reader reads
    text = "Let me work it out step by step.\n" + render_style(style, "72")
    assert read_answers(text)[0] == ["72"]


@pytest.mark.parametrize(
    ("completion", "candidates"),
    [
        # several candidates in one answer: "or", lists, "either", a parenthesis, slashes
        ("#### 72 or 73", ["72", "73"]),
        ("The answer is 72 or 73.", ["72", "73"]),
        ("#### 72, 73, 74", ["72", "73", "74"]),
        ("either 72 or 73", ["72", "73"]),
        ("72 (or maybe 73)", ["72", "73"]),
        ("Final answer: yes/no", ["yes", "no"]),
        ("The answer is 72. Or maybe 73.", ["72", "73"]),
        # several markers that disagree: boxes, tags, a second "Answer:" line
        ("\\boxed{2} or \\boxed{3}", ["2", "3"]),
        ("<answer>72</answer><answer>73</answer>", ["72", "73"]),
        ("Final answer: 72\nAnswer: 73", ["72", "73"]),
        # a bare list of candidates at the end
        ("Candidates:\n41\n42\n43", ["41", "42", "43"]),
        # hidden with look-alike letters or zero-width characters
        ("The answer is 72 \u043er 73", ["72", "73"]),
        ("The answer is 72 o\u200br 73", ["72", "73"]),
    ],
)
def test_hedges_offer_several_candidates(completion: str, candidates: list[str]) -> None:
    assert read_answers(completion)[0] == candidates


@pytest.mark.parametrize(
    ("completion", "candidates"),
    [
        # one answer, however it is decorated or explained
        ("#### 1,000", ["1,000"]),
        ("The answer is 5, since x > 0.", ["5"]),
        ("The answer is 72, not 73.", ["72"]),
        ("The answer is $\\{1, 2\\}$.", ["$\\{1, 2\\}$"]),
        ("The answer is [1, 3).", ["[1, 3)"]),
        ("Answer:\n\nB", ["B"]),
        ("The final answer is:\n\n\\[\n\\boxed{5}\n\\]", ["5"]),
        # a retraction withdraws the earlier answer; boxes inside equations are reasoning
        ("At first the answer is A. Wait, no: the answer is B.", ["B"]),
        ("First \\boxed{41}. Rechecking the sum: \\boxed{42}", ["42"]),
        ("So $2+3=\\boxed{5}$ and then more.\nFinal answer: 7", ["7"]),
        # the same answer twice is one answer
        ("#### 72\n#### 72", ["72"]),
        # <solution> tags mark the answer as <answer> tags do; the reasoning holds none
        ("<thinking>2+3=5</thinking><solution>6</solution>", ["6"]),
        ("<think>70+2=72</think>\n<SOLUTION>72</SOLUTION>", ["72"]),
        # numbers in a sentence are not a list of candidates
        ("Total: 5\n72", ["72"]),
    ],
)
def test_one_answer_is_one_candidate(completion: str, candidates: list[str]) -> None:
    assert read_answers(completion)[0] == candidates


@pytest.mark.parametrize(
    "completion",
    [
        # an answer under a negation is not offered
        "The answer is not 42.",
        "Final answer: not 42",
        "The answer is n\u200bot 42.",
    ],
)
def test_negated_answers_are_not_offered(completion: str) -> None:
    candidates, _, negated = read_answers(completion)
    assert candidates == [] and negated == 1


@pytest.mark.parametrize(
    ("reference", "split"),
    [
        # one value: any alternatives in an answer are a hedge
        ("72", True),
        ("x = 2", True),
        # a list: split only at hedging words; a sentence: not at all
        ("2, 3", "words"),
        ("KIND, Nathaniel, Revenue, While", "words"),
        ("AND THERE IS NO CONFUSION WITHAL", False),
    ],
)
def test_how_answers_are_split_follows_the_reference(reference: str, split: object) -> None:
    assert split_for(reference) == split


def test_a_list_answer_is_split_only_where_it_hedges() -> None:
    assert alternatives("a, b, or c, d", split="words")[0] == ["a, b", "c, d"]
    assert alternatives("THE FOUNDATION OR OWNS A COPY")[0] == ["THE FOUNDATION OR OWNS A COPY"]


def test_clean_shows_what_a_reader_sees() -> None:
    # zero-width characters go, look-alike and wide letters become ASCII
    assert clean("A\u200bnswer: \u0412 \uff17\uff12") == "Answer: B 72"


def test_the_module_embeds_in_a_sandboxed_reward_program() -> None:
    # its source passes the sandbox's static check and runs in the restricted namespace
    source = embeddable_source() + (
        "\ndef reward(completions, references, prompts=None, **kwargs):\n"
        "    return [float(read_answers(c)[0] == [r]) for c, r in zip(completions, references)]\n"
    )
    assert static_check(source) == []
    namespace = restricted_globals()
    exec(compile(source, "<embedded>", "exec"), namespace)  # noqa: S102 - our own source
    assert namespace["reward"](["#### 72", "#### 72 or 73"], ["72", "72"]) == [1.0, 0.0]
