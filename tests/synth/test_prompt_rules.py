"""Equivalence from the task's own words: "in any order", "case-insensitive", "ignore
spaces" in a prompt make the synthesized verifier accept those forms without a labeled
example showing them; without the words it stays strict."""

from __future__ import annotations

import pytest

from rewardsmith.synth.codeverify import synthesize_offline
from rewardsmith.synth.examples import Example
from rewardsmith.synth.primitives import compile_program
from rewardsmith.synth.prompt_rules import is_mapping, rules_of


@pytest.mark.parametrize(
    ("prompt", "rules"),
    [
        ("List the primes below 10, in any order.", ["any order"]),
        ("Name the colors; the order does not matter.", ["any order"]),
        ("Spell it backward (case-insensitive).", ["case-insensitive"]),
        ("Reverse the word; case doesn't matter.", ["case-insensitive"]),
        ("Join the words, ignoring whitespace.", ["spacing ignored"]),
        ("Sort these words alphabetically.", []),
        ("Round 3.14159 to 2 decimal places.", []),
    ],
)
def test_rules_of(prompt: str, rules: list[str]) -> None:
    assert rules_of(prompt) == rules


WORDS = [
    ("kiwi", "fig", "plum"),
    ("pear", "lime", "date"),
    ("apple", "melon", "grape"),
    ("olive", "guava", "peach"),
    ("mango", "lemon", "cherry"),
    ("pecan", "hazel", "acorn"),
    ("quince", "papaya", "banana"),
    ("cashew", "walnut", "almond"),
]


def lines(suffix: str) -> list[Example]:
    out = []
    for i, words in enumerate(WORDS):
        ref = ", ".join(words)
        prompt = f"Name the three fruits of list {i}{suffix}"
        if i < 4:
            given = ref if i % 2 == 0 else ", ".join((*words[:2], "nut"))
            out.append(Example(prompt, ref, f"<answer>{given}</answer>", int(i % 2 == 0)))
        else:
            out.append(Example(prompt, ref))
    return out


# (prompt words) -> is a reordered right answer paid
@pytest.mark.parametrize(("suffix", "paid"), [(", in any order.", 1.0), (".", 0.0)])
def test_any_order_in_the_prompt_makes_order_free(suffix: str, paid: float) -> None:
    program = compile_program(synthesize_offline(lines(suffix)).source)
    scores = program["reward"](
        ["<answer>fig, kiwi, plum</answer>", "<answer>kiwi, fig, nut</answer>"],
        ["kiwi, fig, plum"] * 2,
    )
    assert scores == [paid, 0.0]


@pytest.mark.parametrize(
    ("reference", "mapping"),
    [
        ("E=4,F=1,H=8", True),
        ("x: 1; y: 2", True),
        ("A=1,A=2", False),  # one name twice: no mapping
        ("apple, kiwi", False),
        ("E=4", False),
    ],
)
def test_is_mapping(reference: str, mapping: bool) -> None:
    assert is_mapping(reference) is mapping
