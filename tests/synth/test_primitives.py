"""Reward-program primitives: each one on real answer shapes, and the rendered programs
(what CodeVerify stores and the search mutates) behave exactly like the in-process
evaluator, pass the sandbox's static policy and read like hand-written code."""

from __future__ import annotations

import random

import pytest

from rewardsmith.sandbox.policy import static_check
from rewardsmith.synth.primitives import (
    COMPARATORS,
    EXTRACTORS,
    NORMALIZERS,
    Composition,
    ProgramInfo,
    compile_program,
    render,
    shared_evaluator,
)
from rewardsmith.synth.variation import (
    crossover,
    enumerate_compositions,
    mutate,
    random_composition,
)

EXTRACTOR_CASES = [
    # the last <answer> pair wins, multi-line content kept
    ("answer_in_tags", "<answer>a</answer> then <answer>\n1 2\n3 4\n</answer>", "1 2\n3 4"),
    ("answer_in_tags", "no tags here", None),
    # nested braces inside \boxed{}
    ("boxed_answer", "so $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
    ("boxed_answer", "\\boxed{unclosed", None),
    # the rest of the line after the last phrase; bold marks dropped
    ("answer_after_phrase", "I think the answer is 3\nFinal answer: **7**", "7"),
    ("answer_after_phrase", "The answer is:\nnext line", None),
    ("answer_after_hashes", "work\n#### 1,234", "1,234"),
    ("json_answer_field", 'thoughts {"answer": ["a", "b"]} done', '["a", "b"]'),
    ("json_answer_field", '{"result": 3}', None),
    ("code_block", "grid:\n```\n1 2\n3 4\n```", "1 2\n3 4"),
    ("last_line", "reasoning\n\n  final words  \n\n", "final words"),
    ("last_number", "1,2,3 then 1,000.5 apples", "1000.5"),
    ("whole_text", "   ", None),
]


@pytest.mark.parametrize(("name", "text", "expected"), EXTRACTOR_CASES)
def test_extractors(name: str, text: str, expected: str | None) -> None:
    assert shared_evaluator().apply(name, text) == expected


NORMALIZER_CASES = [
    ("lowercase", "Hello World", "hello world"),
    ("collapse_whitespace", " a \n b\tc ", "a b c"),
    ("remove_whitespace", "a , b", "a,b"),
    ("strip_punctuation", '"Friday."', "Friday"),
    ("canonical_numbers", "+1,000.50 and 2.0 and -0", "1000.5 and 2 and 0"),
    ("canonical_list", "['a', 'b']", "a, b"),
    ("sort_items", "c, a, b", "a, b, c"),
    ("sort_items", '[["b"], ["a"]]', '[["a"], ["b"]]'),
    ("sort_nested_items", '[["b", "a"], ["d", "c"]]', '[["a", "b"], ["c", "d"]]'),
]


@pytest.mark.parametrize(("name", "text", "expected"), NORMALIZER_CASES)
def test_normalizers(name: str, text: str, expected: str) -> None:
    assert shared_evaluator().apply(name, text) == expected


COMPARATOR_CASES = [
    ("same_text", "abc", "abc", True),
    ("same_text", "abc", "ABC", False),
    # numbers by value, fractions and percents included
    ("same_number", "0.5", "1/2", True),
    ("same_number", "50%", "0.5", True),
    ("same_number", "x", "1", False),
    # a sequence is read the way the reference writes it
    ("same_sequence", "a,b , c", "a, b, c", True),
    ("same_sequence", "a b c", "a, b, c", False),
    ("same_sequence", "b, a", "a, b", False),
    ("same_items", "b, a", "a, b", True),
    ("same_items", "a, a", "a, b", False),
    ("same_json", "[1,2]", "[1, 2]", True),
    ("same_json", "[1, 2", "[1, 2]", False),
]


@pytest.mark.parametrize(("name", "answer", "reference", "expected"), COMPARATOR_CASES)
def test_comparators(name: str, answer: str, reference: str, expected: bool) -> None:
    assert shared_evaluator().apply(name, answer, reference) is expected


CASES = [
    ("<answer>B, a</answer>", "a, b"),
    ("The answer is: b,a", "a, b"),
    ("x\ny\na, b", "a,b"),
    ("", "x"),
    ("[[[[[" * 50, "[1]"),
    ("\\boxed{1/2}", "0.5"),
    ('{"answer": [1,2]}', "[1, 2]"),
    ("#### 1,000", "1000.0"),
    ("```\n1 2\n3 4\n```", "1 2\n3 4"),
    ("The answer is FRIDAY.", "Friday"),
]


def test_rendered_programs_score_exactly_like_the_evaluator() -> None:
    rng = random.Random(0)
    ev = shared_evaluator()
    seen = set()
    for _ in range(150):
        comp = random_composition(rng)
        if rng.random() < 0.5:
            comp = mutate(comp, rng)
        seen.add(comp)
        program = compile_program(render(comp))
        got = program["reward"]([c for c, _ in CASES], [r for _, r in CASES])
        assert got == [ev.score(comp, c, r) for c, r in CASES], comp
    assert len(seen) > 100  # the generators explore, they do not repeat one program


def test_every_primitive_renders_into_code_the_sandbox_policy_admits() -> None:
    for name in EXTRACTORS:
        assert static_check(render(Composition((name,)))) == []
    for name in NORMALIZERS:
        assert static_check(render(Composition(("whole_text",), (name,)))) == []
    for name, prim in COMPARATORS.items():
        if not prim.host:
            assert static_check(render(Composition(("whole_text",), (), name))) == []


def test_a_program_reads_like_a_person_wrote_it() -> None:
    comp = Composition(("answer_in_tags", "last_line"), ("lowercase",), "same_text")
    source = render(comp, ProgramInfo("word puzzles", ("Written from 12 examples.",)))
    assert source.startswith('"""Reward for word puzzles')
    assert "def answer_in_tags(text):" in source and "def last_line(text):" in source
    assert "def normalize(text):\n" in source and "return lowercase(text)" in source
    assert "def reward(completions, references, prompts=None, **kwargs):" in source
    assert "BOUNDS = (0.0, 1.0)" in source and "Written from 12 examples." in source
    # only what the composition uses is in the program, and the shared answer reading
    assert "def boxed_answer" not in source and "same_number" not in source
    assert (
        "def read_answers(text" in source
        and "if hedges(text, reference, answer_is_right, answer):" in source
    )


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # one answer in any common style is read by the program's own extractors
        ("<answer>72</answer>", 1.0),
        ("<think>I got 70, then 72.</think><answer>72</answer>", 1.0),
        # several different answers, or only a negated one: the program pays nothing
        ("<answer>72 or 73</answer>", 0.0),
        ("<answer>72</answer><answer>73</answer>", 0.0),
        ("<answer>72</answer>\nFinal answer: 73", 0.0),
        ("The answer is not 72.\n<answer>not 72</answer>", 0.0),
    ],
)
def test_a_rendered_program_refuses_hedges_as_the_tools_do(
    completion: str, expected: float
) -> None:
    comp = Composition(("answer_in_tags", "last_line"), ("strip_punctuation",), "same_text")
    program = compile_program(render(comp))
    assert program["reward"]([completion], ["72"]) == [expected]
    assert shared_evaluator().score(comp, completion, "72") == expected  # the search's mirror


def test_a_program_never_crashes_on_hostile_completions() -> None:
    comp = Composition(("json_answer_field", "last_line"), ("sort_nested_items",), "same_json")
    program = compile_program(render(comp))
    hostile = ["[" * 100_000, "{" * 5000, "\x00" * 10, "<answer>" * 1000, None]
    assert program["reward"](hostile, ["[1]"] * 5) == [0.0] * 5


def test_simplest_compositions_come_first() -> None:
    order = list(enumerate_compositions(("answer_in_tags", "last_line"), max_normalizers=1))
    assert order[0] == Composition(("answer_in_tags",))  # one extractor, nothing else
    costs = [c.cost for c in order]
    assert costs == sorted(costs)


def test_mutation_and_crossover_give_valid_compositions() -> None:
    rng = random.Random(1)
    a, b = random_composition(rng), random_composition(rng)
    for _ in range(200):
        child = crossover(a, b, rng)
        assert Composition.from_dict(child.to_dict()) == child
        a, b = mutate(child, rng), a
        assert not a.host  # sandboxed generators never pick the host comparator


def test_unknown_primitives_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown extractor"):
        Composition(("regex_everything",))
    with pytest.raises(ValueError, match="unknown comparator"):
        Composition(("last_line",), (), "contains")
