"""What the router reads from a sample without a model: reference format, markers, flags."""

from __future__ import annotations

import json

import pytest

from rewardsmith.library.registry import BUILTINS
from rewardsmith.router.features import (
    compatibility,
    markers,
    reference_format,
    sample_features,
    sample_ref_format,
)
from rewardsmith.types import Sample

RG_ENTRY = json.dumps(
    {
        "question": "Calculate 2 + 3.",
        "answer": "5",
        "metadata": {"source_dataset": "basic_arithmetic"},
    }
)

FORMAT_CASES = [
    # no reference
    (None, "none"),
    ("   ", "none"),
    # numbers, and GSM8K worked solutions ending in #### N
    ("42", "number"),
    ("-3.5", "number"),
    ("$1,250", "number"),
    ("He had 3 + 4 = 7 apples.\n#### 7", "number"),
    # LaTeX / short math answers
    ("\\frac{11}{36}", "latex"),
    ("3, 5, 7", "latex"),
    ("75^\\circ", "latex"),
    ("\\begin{pmatrix} -7 \\\\ 16 \\end{pmatrix}", "latex"),
    # choice letters
    ("B", "choice"),
    ("(C)", "choice"),
    # unit tests: plain asserts and the code tool's JSON forms
    ("assert add(1, 2) == 3", "unit_tests"),
    (json.dumps({"test_list": ["assert f(1) == 2"], "test_imports": []}), "unit_tests"),
    (
        json.dumps({"prompt": "def f():", "test": "def check(c): ...", "entry_point": "f"}),
        "unit_tests",
    ),
    # a reasoning-gym entry
    (RG_ENTRY, "json_entry"),
    # free text: translations, words, long answers
    ("The German Ministry of the Interior also took a stand", "free_text"),
    ("mother-in-law", "free_text"),
    ("TIPS,TINS,BINS,BIAS,BRAS,BRAN", "free_text"),
]


@pytest.mark.parametrize(("reference", "expected"), FORMAT_CASES)
def test_reference_format(reference: str | None, expected: str) -> None:
    assert reference_format(reference) == expected


def test_builtin_specs_declare_formats_the_router_understands() -> None:
    formats = {b.spec.name: b.spec.ref_format for b in BUILTINS}
    assert formats["math"] == "latex"
    assert formats["gsm8k"] == "number"
    assert formats["multiple_choice"] == "choice"
    assert formats["translation"] == "free_text"
    assert formats["reasoning_gym"] == "json_entry"
    assert formats["format_tags"] == "none"
    if "code" in formats:
        assert formats["code"] == "unit_tests"


# Prompts that change how a reference reads: none, plain, listed options (numbered, roman,
# lettered), the options inside chat messages.
PROMPTS: list[object] = [
    None,
    "What is 2 + 3?",
    "Which is a prime?\n1. 4\n2. 6\n3. 7\n4. 9\nAnswer with the option number.",
    "Pick one.\n(i) red\n(ii) green\n(iii) blue",
    "Pick one.\n(A) red\n(B) green\n(C) blue",
    [
        {"role": "system", "content": "Answer with the number of the option."},
        {"role": "user", "content": "Which is a prime?\n1. 4\n2. 6\n3. 7"},
    ],
]


def test_sample_ref_format_is_the_format_sample_features_reads() -> None:
    # What synthesis stores for a new tool must be what the router computes for the sample.
    samples = [Sample("", prompt, ref) for ref, _ in FORMAT_CASES for prompt in PROMPTS]  # type: ignore[arg-type]
    for sample in samples:
        assert sample_ref_format(sample) == sample_features(sample).ref_format
    # The numbered prompts make "3" an option index: the case the round trip must keep.
    assert sample_ref_format(Sample("", PROMPTS[2], "3")) == "choice_index"  # type: ignore[arg-type]
    assert sample_ref_format(Sample("", PROMPTS[5], "3")) == "choice_index"  # type: ignore[arg-type]
    # ... and a list the prompt asks for in an order stays a sequence (free text), not math
    ordered = Sample("", "Sort these numbers in descending order: 2, 3, 61, 50", "61, 50, 3, 2")
    assert sample_ref_format(ordered) == sample_features(ordered).ref_format == "free_text"


def test_a_tool_never_reads_a_reference_format_it_does_not_know() -> None:
    assert compatibility("number", "latex") == 0.0  # gsm8k cannot compare \frac{1}{2}
    assert compatibility("latex", "number") > 0.5  # math-verify reads plain numbers
    assert compatibility("free_text", "unit_tests") == 0.0
    assert compatibility("none", "number") < compatibility("none", "none")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # inline math and LaTeX commands are "latex"; prices are not
        ("Find $x$ such that $x^2 = 4$.", {"latex"}),
        ("The gcd of $3339$ and $2961$", {"latex"}),
        ("She paid $5.00 and then $3.00 more.", set()),
        ("Compute \\frac{1}{2} + \\sqrt{2}", {"latex"}),
        # answer markers in completions
        ("so the answer is \\boxed{4}", {"boxed"}),
        ("3 + 4 = 7\n#### 7", {"hashes"}),
        # tag formats and translation requests
        (
            "Answer in <thinking></thinking> then <solution></solution>",
            {"tag:thinking", "tag:solution"},
        ),
        ("Übersetze ins Deutsche: Good morning", {"translate"}),
        ("German: Guten Morgen\nEnglish:", {"translate"}),
    ],
)
def test_markers(text: str, expected: set[str]) -> None:
    assert markers(text) == expected


def test_chat_prompts_read_the_last_user_turn_and_flag_dialogues() -> None:
    single = sample_features(
        Sample(completion="", prompt=[{"role": "user", "content": "Translate to German: hi"}])
    )
    assert single.chat and not single.dialogue and "Translate" in single.text
    convo = sample_features(
        Sample(
            completion="",
            prompt=[
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "Tell me a joke"},
            ],
        )
    )
    assert convo.dialogue and convo.text == "Tell me a joke"
    transcript = sample_features(
        Sample(
            completion="", prompt="\n\nHuman: hi\n\nAssistant: hello\n\nHuman: bye\n\nAssistant:"
        )
    )
    assert transcript.dialogue


def test_non_latin_share_and_empty_prompt() -> None:
    assert sample_features(Sample(completion="", prompt="计算二加三等于多少")).non_latin > 0.9
    assert sample_features(Sample(completion="", prompt="Übersetze: Straße")).non_latin == 0.0
    assert sample_features(Sample(completion="x", prompt="   ")).empty_prompt


def test_huge_prompts_are_clipped_before_any_regex() -> None:
    f = sample_features(Sample(completion="4" * 1_000_000, prompt="$x$ " * 500_000))
    assert len(f.text) < 600 and "latex" in f.prompt_markers
