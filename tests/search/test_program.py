"""Feature primitives on real response shapes, and reward programs: rendered source that
passes the sandbox's check and scores exactly what its terms say; mutation and crossover
that always give valid, different programs."""

from __future__ import annotations

import random

import pytest
from search_helpers import program_source

from rewardsmith.rl import problems as P
from rewardsmith.sandbox import check_reward_code
from rewardsmith.sandbox.policy import static_check
from rewardsmith.search.program import (
    ANSWER_CORRECT,
    MAX_TERMS,
    RewardProgram,
    Term,
    crossover_program,
    mutate_program,
    random_program,
    render_program,
)
from rewardsmith.synth.features import FEATURE_CONSTANTS, FEATURES
from rewardsmith.synth.primitives import compile_program, primitive_source
from rewardsmith.tools.format import FormatTagsTool
from rewardsmith.types import ToolSpec

TESTBED = "<thinking>3*6=18. 14+18=32.</thinking><solution>32</solution>"
PROMPT = "Question: Mia has 14 pens. She buys 3 boxes with 6 pens each. How many?\nAnswer: "


@pytest.fixture(scope="module")
def features() -> dict:
    imports, sources = primitive_source(list(FEATURES))
    constants = ["THINK_TAG = 'thinking'", "ANSWER_TAG = 'solution'"]
    constants += [f"{k} = {v!r}" for k, v in FEATURE_CONSTANTS.items()]
    return compile_program("\n".join([*imports, *constants, *sources]))


FEATURE_CASES = [
    # structure: lines, blank and repeated lines, length
    ("line_count", "a\n\nb\n  \nc", 3.0),
    ("blank_line_share", "a\n\nb\n", 0.5),
    ("repeated_line_share", "x\ny\nx\nx", 0.5),
    ("char_length", TESTBED, float(len(TESTBED))),
    ("word_count", "one two  three", 3.0),
    ("arithmetic_density", "12+3=15 ok", 7 / 9),
    # equations: both right; one wrong; chained with precedence; unicode times; none
    ("equation_count", TESTBED, 2.0),
    ("correct_equation_share", TESTBED, 1.0),
    ("correct_equation_share", "3*6=17. 14+18=32.", 0.5),
    ("correct_equation_share", "2+3*4=14 and 10/4=2.5", 1.0),
    ("correct_equation_share", "3 \u00d7 4 = 12", 1.0),
    ("correct_equation_share", "no arithmetic here", 0.0),
    ("wrong_equation_count", "3*6=17. 14+18=31.", 2.0),
    # the answer follows from the last equation
    ("answer_follows_last_equation", TESTBED, 1.0),
    ("answer_follows_last_equation", TESTBED.replace(">32<", ">33<"), 0.0),
    # the prompt's numbers 14, 3 and 6 all appear in the reasoning
    ("prompt_numbers_used", TESTBED, 1.0),
    # tags: exact, the approximate share, text outside
    ("tags_exact", TESTBED, 1.0),
    ("tags_exact", "  " + TESTBED + "\n", 1.0),
    ("tags_exact", TESTBED + " done", 0.0),
    ("tags_exact", "<thinking> </thinking><solution>3</solution>", 0.0),
    ("tags_once_share", "<thinking>x</thinking> 32", 0.5),
    ("text_outside_tags", "Sure! " + TESTBED + " Bye", 8.0),
    ("answer_is_number", TESTBED, 1.0),
    ("answer_is_number", "<solution>32 or 33</solution>", 0.0),
    ("reasoning_steps", TESTBED, 2.0),
]


@pytest.mark.parametrize(("name", "text", "expected"), FEATURE_CASES)
def test_features(features: dict, name: str, text: str, expected: float) -> None:
    assert features[name](text, "32", PROMPT) == pytest.approx(expected)


REFERENCE_CASES = [
    # closeness of the answer to the reference number, a GSM8K-style reference included
    ("answer_closeness", TESTBED, "32", 1.0),
    ("answer_closeness", TESTBED, "#### 64", 1 / (1 + 0.5)),
    ("answer_closeness", TESTBED, None, 0.0),
    ("reference_in_reasoning", TESTBED, "18", 1.0),
    ("reference_in_reasoning", TESTBED, "33", 0.0),
]


@pytest.mark.parametrize(("name", "text", "reference", "expected"), REFERENCE_CASES)
def test_reference_features(
    features: dict, name: str, text: str, reference: str | None, expected: float
) -> None:
    assert features[name](text, reference, PROMPT) == pytest.approx(expected)


def test_tags_exact_agrees_with_the_format_tags_tool(features: dict) -> None:
    tool = FormatTagsTool(ToolSpec(name="f"))
    texts = [p.completion for p in P.generate(20, 1, "test")]
    texts += [TESTBED + "x", "<solution>1</solution><thinking>a</thinking>", "", "<thinking>a"]
    texts += [TESTBED.replace("</thinking>", "</thinking></thinking>"), " \n" + TESTBED]
    for text in texts:
        assert features["tags_exact"](text) == tool.compare(text, None).score, text


def test_equations_on_a_long_adversarial_text_are_capped(features: dict) -> None:
    # A policy can write megabytes; the features read at most MAX_EQUATIONS equations.
    text = "1+1=2 " * 5_000
    assert features["equation_count"](text) == FEATURE_CONSTANTS["MAX_EQUATIONS"]


def test_rendered_program_passes_the_check_and_scores_its_terms() -> None:
    terms = (
        Term(ANSWER_CORRECT, 1.0),
        Term("correct_equation_share", 0.5, when="wrong"),
        Term("char_length", -0.25, "at_least", 200.0),
    )
    source = program_source(*terms)
    assert static_check(source) == []
    report = check_reward_code(source)
    assert report.admitted, report.reason
    assert report.bounds == (-0.25, 1.5)
    fn = compile_program(source)["reward"]
    right, wrong_answer = TESTBED, TESTBED.replace(">32<", ">33<")
    long_wrong = wrong_answer + " " * 300
    assert fn([right, wrong_answer, long_wrong, None], ["32"] * 4, [PROMPT] * 4) == [
        1.0,  # right: the answer term only
        0.5,  # wrong: its equations are right, half weight
        0.25,  # wrong and long: minus the length penalty
        0.0,  # nothing: no term pays
    ]


def test_programs_read_the_task_tags() -> None:
    program = RewardProgram((Term("tags_exact", 1.0),))
    source = render_program(program, name="x", think_tag="think", answer_tag="answer")
    fn = compile_program(source)["reward"]
    assert fn(["<think>a</think><answer>1</answer>", TESTBED], [None, None]) == [1.0, 0.0]


def test_a_program_survives_a_helper_that_raises() -> None:
    source = program_source(Term("answer_closeness", 1.0))
    fn = compile_program(source)["reward"]
    # A 40-digit number is beyond MAX_DIGITS: ignored, never an exception out of `reward`.
    assert fn(["<solution>" + "9" * 40 + "</solution>", 5], ["1", "1"]) == [0.0, 0.0]


def test_mutation_and_crossover_give_valid_distinct_programs() -> None:
    rng = random.Random(7)
    programs = [random_program(rng) for _ in range(10)]
    for _ in range(200):
        parent = rng.choice(programs)
        child, what = mutate_program(parent, rng)
        assert child != parent and what
        assert 1 <= len(child.terms) <= MAX_TERMS
        mate = rng.choice(programs)
        crossed = crossover_program(parent, mate, rng)
        parent_terms = {t.key for t in (*parent.terms, *mate.terms)}
        assert {t.key for t in crossed.terms} <= parent_terms
        programs.append(child)
    for program in programs[-5:]:
        assert RewardProgram.from_dict(program.to_dict()) == program
        assert check_reward_code(render_program(program, name="p")).admitted


def test_programs_refuse_what_the_sandbox_cannot_run() -> None:
    from rewardsmith.synth.primitives import Composition

    with pytest.raises(ValueError, match="host"):
        RewardProgram((Term(ANSWER_CORRECT),), answer=Composition(comparator="math_equivalent"))
    with pytest.raises(ValueError, match="twice"):
        RewardProgram(
            (Term("line_count", 1.0, "at_least", 2), Term("line_count", 0.5, "at_most", 9))
        )
    with pytest.raises(ValueError, match="shape"):
        Term("tags_exact", 1.0, "near", 3)
