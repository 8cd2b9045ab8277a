"""What the router reads from a sample's content: listed options and the label a reference
names, languages of prompt and reference, reasoning-gym readability, math notation, and
whether completions answer in a tool's form."""

from __future__ import annotations

import json

import pytest

from rewardsmith.router.content import completion_fit, math_notation, rg_entry_readable
from rewardsmith.router.features import reference_format, sample_features
from rewardsmith.router.language import language_evidence
from rewardsmith.router.options import parse_options, reference_label
from rewardsmith.types import Sample

OPTION_CASES = [
    # lettered options in the usual styles
    ("Which is prime?\n(A) 21\n(B) 27\n(C) 29\n(D) 33", "upper", 4),
    ("Capital of Australia?\nA. Sydney\nB. Melbourne\nC. Canberra\nD. Perth", "upper", 4),
    ("Which is prime? a) 21 b) 27 c) 29 d) 33", "lower", 4),
    ("Pick one: [A] red  [B] blue  [C] green", "upper", 3),
    ("Option A: go left.\nOption B: go right.", "upper", 2),
    # numbered and roman options
    ("Which is prime?\n1) 21\n2) 27\n3) 29", "digit", 3),
    ("Which is prime? (i) 21 (ii) 27 (iii) 29 (iv) 33", "roman", 4),
    # initials, abbreviations and a single label are no option list
    ("Mr. A. Smith moved to the U.S. in 1990.", None, 0),
    ("Use a) only if nothing else works.", None, 0),
]


@pytest.mark.parametrize(("prompt", "style", "count"), OPTION_CASES)
def test_parse_options_finds_the_listed_labels(prompt: str, style: str | None, count: int) -> None:
    options = parse_options(prompt)
    if style is None:
        assert options is None
    else:
        assert options is not None and options.style == style and len(options.labels) == count


LABEL_CASES = [
    ("B", "B"),
    ("(b)", "b"),
    ("[3]", "3"),
    ("iv.", "iv"),
    ("Option C", "C"),
    ("B) Paris", "B"),
    ("The answer is (C)", "C"),
    # words and sentences name no label
    ("Paris", None),
    ("A man walked in.", None),
]


@pytest.mark.parametrize(("reference", "label"), LABEL_CASES)
def test_reference_label(reference: str, label: str | None) -> None:
    assert reference_label(reference) == label


FORMAT_CASES = [
    # a letter: the choice tool reads it, with or without listed options
    ("Which is prime? a) 21 b) 27 c) 29", "c", "choice", True),
    ("Which letter comes after C?", "D", "choice", False),
    # a number naming a numbered option is an index, not a value
    ("Which is prime?\n1) 21\n2) 27\n3) 29", "3", "choice_index", True),
    ("Which is prime? (i) 21 (ii) 27 (iii) 29", "iii", "choice_index", True),
    # ... but a number among lettered options, or with no options, is a number
    ("How many apples? (A) 3 (B) 4", "4", "number", False),
    ("How many apples are left?", "3", "number", False),
    # JSON: a reasoning-gym entry, or data
    (
        "Calculate 2 + 3.",
        json.dumps({"question": "2+3", "answer": "5", "metadata": {"source_dataset": "chain_sum"}}),
        "json_entry",
        False,
    ),
    ("Capital of France? Reply in JSON.", '{"answer": "Paris"}', "json", False),
    ("List the primary colors as JSON.", '["red", "yellow", "blue"]', "json", False),
]


@pytest.mark.parametrize(("prompt", "reference", "fmt", "is_option"), FORMAT_CASES)
def test_sample_format_reads_the_prompts_options(
    prompt: str, reference: str, fmt: str, is_option: bool
) -> None:
    f = sample_features(Sample(completion="x", prompt=prompt, reference=reference))
    assert f.ref_format == fmt
    assert f.reference_is_option == is_option


RG_ENTRY = {
    "question": "Calculate 2 + 3.",
    "answer": "5",
    "metadata": {"source_dataset": "basic_arithmetic"},
}
READABLE_CASES = [
    # a real entry, and the {"dataset", "entry"} wrapper
    (RG_ENTRY, True),
    ({"dataset": "basic_arithmetic", "entry": RG_ENTRY}, True),
    # JSON with an answer is no dataset entry
    ({"answer": "Paris"}, False),
    # an entry stripped of its metadata, or naming an unknown dataset
    ({"question": "Calculate 2 + 3.", "answer": "5"}, False),
    ({**RG_ENTRY, "metadata": {"source_dataset": "my_arithmetic"}}, False),
    # reasoning-gym's scorers compare strings: a number answer is not readable
    ({**RG_ENTRY, "answer": 5}, False),
]


@pytest.mark.parametrize(("entry", "readable"), READABLE_CASES)
def test_only_entries_reasoning_gym_can_score_are_json_entries(
    entry: dict[str, object], readable: bool
) -> None:
    ref = json.dumps(entry)
    assert rg_entry_readable(ref) == readable
    assert reference_format(ref) == ("json_entry" if readable else "json")


def test_a_passage_in_another_language_of_the_references_length_is_a_translation() -> None:
    # instruction in English, passage in German, reference in English
    ev = language_evidence(
        "Please render this passage in English:\n\nDie Regierung plant neue Gesetze zum "
        "Klimaschutz und will die Emissionen bis 2030 halbieren.",
        "The government is planning new climate laws and wants to halve emissions by 2030.",
    )
    assert ev.reference == "en" and ev.crosslingual == 1.0 and not ev.same_language
    # no instruction at all, into Chinese
    ev = language_evidence(
        "The museum will be closed on Monday for renovation.", "博物馆周一因装修闭馆。"
    )
    assert ev.reference == "zh" and ev.crosslingual == 1.0


def test_a_task_word_without_a_passage_in_another_language_is_no_translation() -> None:
    ev = language_evidence(
        "How can I translate a business idea into a concrete plan?",
        "Write down the problem it solves, who pays, and the first three steps to test it.",
    )
    assert ev.crosslingual == 0.0 and ev.same_language
    # a question and its answer in one other language: still no translation
    ev = language_evidence(
        "¿Cuál es la capital de Francia? Responde con una frase completa.",
        "La capital de Francia es París, una ciudad muy bonita.",
    )
    assert ev.crosslingual == 0.0 and ev.same_language
    # a long passage summarized in another language: the lengths do not match
    article = "Die Regierung plant neue Gesetze zum Klimaschutz. " * 12
    ev = language_evidence(f"Summarize in English:\n\n{article}", "New climate laws are planned.")
    assert ev.crosslingual == 0.0


def test_short_references_have_no_language() -> None:
    assert language_evidence("Capital of France?", "Paris").reference == ""


MATH_CASES = [
    ("Find all x such that x^2 - 5x + 6 = 0.", 1.0),
    ("If f(x) = 3x + 2, what is f(4)?", 1.0),
    ("What is (3)/(4) + sqrt(2) * pi?", 1.0),
    ("Tom has 3 boxes with 12 apples each. How many apples does he have?", 0.0),
    ("A bakery sells cupcakes for $2 each. How much money did it make?", 0.0),
]


@pytest.mark.parametrize(("text", "expected"), MATH_CASES)
def test_math_notation(text: str, expected: float) -> None:
    assert math_notation(text) == expected


COMPLETION_CASES = [
    ("number", "3 boxes of 12 is 36. So the total is 36.", 1.0),
    ("number", "I don't know.", 0.0),
    ("latex", "So the answer is $\\frac{3}{4}$.", 1.0),
    ("choice", "The answer is (c).", 1.0),
    ("choice", "It depends on the weather.", 0.0),
    ("json_entry", "<answer>42</answer>", 1.0),
    ("unit_tests", "```python\ndef f(x):\n    return x\n```", 1.0),
]


@pytest.mark.parametrize(("fmt", "completion", "expected"), COMPLETION_CASES)
def test_completion_fit(fmt: str, completion: str, expected: float) -> None:
    assert completion_fit(fmt, completion) == expected


def test_completion_fit_for_translations_reads_language_and_length() -> None:
    source = "Die Regierung plant neue Gesetze zum Klimaschutz."
    units = float(sum(c.isalpha() for c in source))
    good = "The government is planning new climate protection laws."
    assert completion_fit("free_text", good, "en", units) == 1.0
    assert completion_fit("free_text", source, "en", units) == 0.0  # not in the target language
