"""The examples file users write: what is accepted, what is refused (with the line), and how
lines are held out for the gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.errors import InputError
from rewardsmith.synth.codeverify import split_for_synthesis
from rewardsmith.synth.examples import Example, answer_of, load_examples, split_examples

GOOD = [
    {"prompt": "Sort: b a", "reference": "a, b", "completion": "<answer>a, b</answer>", "label": 1},
    {"prompt": "Sort: d c", "reference": "c, d", "completion": "<answer>d, c</answer>", "label": 0},
    {"prompt": "Sort: f e", "reference": "e, f", "completion": "just a style, unlabeled"},
    {"prompt": "Sort: h g", "reference": "g, h"},
]


def write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_good_file_loads_with_its_line_numbers(tmp_path: Path) -> None:
    examples = load_examples(write(tmp_path / "ex.jsonl", GOOD))
    assert [e.line for e in examples] == [1, 2, 3, 4]
    assert [e.labeled for e in examples] == [True, True, False, False]
    assert examples[2].completion == "just a style, unlabeled" and examples[2].label is None


BAD = [
    # each: (the bad line, words the message must contain)
    ({"reference": "a"}, "'prompt' must be a string"),
    ({"prompt": "p", "reference": ""}, "'reference' must be a non-empty string"),
    ({"prompt": "p", "reference": 3}, "'reference' must be a non-empty string"),
    ({"prompt": "p", "reference": "a", "label": 1}, "'label' without a 'completion'"),
    ({"prompt": "p", "reference": "a", "completion": "x", "label": 2}, "'label' must be 0 or 1"),
    ({"prompt": "p", "reference": "a", "completion": "x", "label": True}, "'label' must be 0 or 1"),
    ({"prompt": "p", "reference": "a", "completion": 5}, "'completion' must be a string"),
    (["not", "an", "object"], "expected a JSON object"),
]


@pytest.mark.parametrize(("bad", "message"), BAD)
def test_a_bad_line_is_named_with_its_number(tmp_path: Path, bad: object, message: str) -> None:
    path = write(tmp_path / "ex.jsonl", [*GOOD[:2], bad, *GOOD[2:]])
    with pytest.raises(InputError, match=message) as info:
        load_examples(path)
    assert f"{path}:3" in str(info.value)


def test_too_few_or_uniform_examples_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="at least 4"):
        load_examples(write(tmp_path / "few.jsonl", GOOD[:3]))
    same = [{"prompt": f"q{i}", "reference": "42"} for i in range(6)]
    with pytest.raises(InputError, match="same answer"):
        load_examples(write(tmp_path / "same.jsonl", same))
    (tmp_path / "broken.jsonl").write_text('{"prompt": "p", "reference": \n', encoding="utf-8")
    with pytest.raises(InputError, match="broken.jsonl:1"):
        load_examples(tmp_path / "broken.jsonl")


def test_answer_of_reads_worked_solutions_and_boxed_references() -> None:
    assert answer_of("She sells 9 eggs.\n#### 18") == "18"
    assert answer_of("so \\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert answer_of("  plain answer ") == "plain answer"


def test_a_third_is_held_out_and_every_kind_of_evidence_reaches_the_fit_first() -> None:
    plain = [Example(f"q{i}", f"r{i}") for i in range(9)]
    fit, held = split_examples(plain)
    assert len(held) == 3 and not set(fit) & set(held)
    assert split_examples(plain) == (fit, held)  # deterministic
    # one labeled completion that differs from its reference only in case: the only
    # evidence that the task accepts any case must be fit on, never held out
    lenient = Example("q", "Friday", "<answer>friday</answer>", 1)
    strict = Example("q2", "Monday", "<answer>monday</answer>", 0)
    fit, held = split_for_synthesis([*plain, lenient, strict])
    assert lenient in fit and strict in fit
