"""What counts as a policy's answer, for accuracy and F1 (training logs and `grpo eval`).

Two ways to read the answer (`AnswerFormat`):

- `"solution"` (strict; the testbed's format): the content of the last
  `<solution>...</solution>` block, which must be a single number (`72`, `-3`, `1,000`, `2.5`);
  a completion without a closed block, or with anything else inside it, has no parseable
  answer. This is the format the search-driven paper trains for.
- `"gsm8k"`: the final number by the `gsm8k` tool's rule (`#### N`, `\\boxed{}`, "the answer
  is", else the last number), for policies that do not use tags (SmolLM2 out of the box).
- `"family"` (the multi-task testbed's): the final answer in any style (`rl.styles`: tags,
  `\\boxed{}`, "the answer is", "Final answer:", `####`, else the last line; a hedge has
  none), graded by the item's task family's own rule (`rl.families`). An item whose task is
  no family's is right when the answer equals the reference exactly (spaces and case aside).

With `solution` and `gsm8k`, a parseable answer is correct when it equals the reference
number (`gsm8k.numbers_equal`).
Pure Python: no torch import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from rewardsmith.errors import ConfigError
from rewardsmith.tools.gsm8k import extract_number, numbers_equal, numbers_in

AnswerFormat = Literal["solution", "gsm8k", "family"]
ANSWER_FORMATS: tuple[AnswerFormat, ...] = ("solution", "gsm8k", "family")
TAGS = ("thinking", "solution")


@dataclass(frozen=True)
class Judged:
    """One completion judged against its reference."""

    parseable: bool
    correct: bool


def solution_blocks(completion: str) -> list[str]:
    """What `re.findall(r"<solution>(.*?)</solution>", completion, re.DOTALL)` finds, in one
    pass: the regex would rescan the rest of the text from every unclosed `<solution>`."""
    blocks: list[str] = []
    pos = 0
    while (start := completion.find("<solution>", pos)) >= 0:
        start += len("<solution>")
        end = completion.find("</solution>", start)
        if end < 0:
            break
        blocks.append(completion[start:end])
        pos = end + len("</solution>")
    return blocks


def extract_answer(completion: str, fmt: AnswerFormat = "solution") -> Fraction | None:
    """The completion's numeric answer under `fmt` (`solution` or `gsm8k`), or None when it
    has none."""
    if fmt == "gsm8k":
        value = extract_number(completion)
        return value if isinstance(value, Fraction) else None  # a hedge is no one answer
    if fmt != "solution":
        raise ConfigError(f"answer format must be one of {ANSWER_FORMATS}, got {fmt!r}")
    blocks = solution_blocks(completion)
    if not blocks:
        return None
    inner = blocks[-1].strip()
    found = numbers_in(inner)
    # Exactly one number and nothing else but its own characters: "32", "$32", "32." pass,
    # "32 or 33" and "about 32 apples" do not.
    if len(found) != 1 or found[0] is None:
        return None
    if re.sub(r"[\d,.\s$€£\-\u2212/]", "", inner):
        return None
    return found[0]


def parse_reference(reference: str) -> Fraction:
    """The reference number (a bare number or a GSM8K solution ending in `#### N`)."""
    value = extract_number(reference)
    if not isinstance(value, Fraction):
        raise ConfigError(f"reference {reference[:60]!r} holds no number")
    return value


def judge_answer(
    completion: str, reference: str, fmt: AnswerFormat = "solution", task: str | None = None
) -> Judged:
    """Is the completion's answer parseable, and is it correct? (`task`: the item's task
    family, read by the `family` format.)"""
    if fmt == "family":
        return judge_family(completion, reference, task)
    answer = extract_answer(completion, fmt)
    if answer is None:
        return Judged(False, False)
    return Judged(True, numbers_equal(answer, parse_reference(reference)))


def judge_family(completion: str, reference: str, task: str | None) -> Judged:
    """The `family` format: any style's final answer, graded by the task family's rule."""
    from rewardsmith.rl.families import FAMILIES
    from rewardsmith.rl.styles import final_answer

    grader = FAMILIES.get(task or "")
    answer = final_answer(completion, words=grader is not None and grader.kind == "word_list")
    if answer is None:
        return Judged(False, False)
    if grader is not None:
        return Judged(True, grader.correct(answer, reference))
    return Judged(True, " ".join(answer.lower().split()) == " ".join(reference.lower().split()))
