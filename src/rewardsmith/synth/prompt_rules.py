"""Equivalence from the task's own words: what a prompt says it accepts is evidence too.

Labeled examples are one kind of evidence for how strict a verifier is; the prompt is
another. When a fit line's prompt says

- "in any order" / "order does not matter" / "regardless of order": the reference's items
  in another order (reversed; a JSON list reversed) are right answers;
- "case-insensitive" / "ignore case" / "case does not matter" / "regardless of case": the
  reference in upper and in lower case is right;
- "ignore spaces" / "ignoring whitespace" / "spacing does not matter": the reference with
  its spaces doubled is right;

and, from the reference's own structure, a list of assignments to distinct names
("E=4,F=1,H=8": a mapping) accepts its items in another order as well;

those answers become positive cases (origin `prompt_rule`) in the styles the completions
use, so the search must pick a comparison that accepts them. Rules only ever add right
answers in the same content; they never make a wrong answer right, and a labeled example
that contradicts them still counts (the search then settles for the most accurate
composition). Words like "simplest form" or "rounded to 2 decimal places" are not rules
here: their equivalences (fractions, tolerances) are the math comparator's, chosen when the
references are numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from rewardsmith.synth.cases import BARE, Case, Style
from rewardsmith.synth.examples import Example, answer_of

_ANY_ORDER = re.compile(
    r"\b(?:in[ \t]+any[ \t]+order|order[ \t]+(?:does[ \t]+not|doesn't|do(?:es)?[ \t]+n't)"
    r"[ \t]+matter|regardless[ \t]+of[ \t]+(?:the[ \t]+)?order)\b",
    re.IGNORECASE,
)
_ANY_CASE = re.compile(
    r"\b(?:case[- \t]insensitive|ignor(?:e|ing)[ \t]+(?:the[ \t]+)?case|case[ \t]+"
    r"(?:does[ \t]+not|doesn't)[ \t]+matter|regardless[ \t]+of[ \t]+(?:the[ \t]+)?case)\b",
    re.IGNORECASE,
)
_ANY_SPACING = re.compile(
    r"\b(?:ignor(?:e|ing)[ \t]+(?:white[ \t]?space|spaces|spacing)|(?:spacing|white[ \t]?space)"
    r"[ \t]+(?:does[ \t]+not|doesn't)[ \t]+matter)\b",
    re.IGNORECASE,
)


def _reordered(answer: str) -> list[str]:
    text = answer.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, list) and len(value) >= 2:
            return [json.dumps(list(reversed(value)))]
    for separator in (", ", ",", "; ", "\n", " "):
        items = text.split(separator)
        if len(items) >= 2:
            return [separator.join(reversed(items))]
    return []


def _recased(answer: str) -> list[str]:
    return [answer.upper(), answer.lower()]


def _respaced(answer: str) -> list[str]:
    return [answer.replace(" ", "  ")] if " " in answer else []


RULES: tuple[tuple[str, re.Pattern[str], Callable[[str], list[str]]], ...] = (
    ("any order", _ANY_ORDER, _reordered),
    ("case-insensitive", _ANY_CASE, _recased),
    ("spacing ignored", _ANY_SPACING, _respaced),
)


# A reference that lists assignments to distinct names ("E=4,F=1,H=8") is a mapping: the
# order of its items carries nothing (the reference's structure is evidence too).
_ASSIGNMENT = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_]{0,20})[ \t]*[=:][ \t]*[^,;=:\n]{1,40}")


def is_mapping(reference: str) -> bool:
    """Whether `reference` lists assignments to at least two distinct names."""
    items = re.split(r"[,;]", reference.strip())
    names = []
    for item in items:
        m = _ASSIGNMENT.fullmatch(item)
        if m is None:
            return False
        names.append(m.group(1))
    return len(names) >= 2 and len(set(names)) == len(names)


def rules_of(prompt: str) -> list[str]:
    """The names of the rules a prompt states."""
    return [name for name, pattern, _ in RULES if pattern.search(prompt)]


def prompt_cases(lines: Sequence[Example], styles: Sequence[Style]) -> list[Case]:
    """Positive cases from what each line's prompt says it accepts (see module docstring)."""
    cases: list[Case] = []
    for line in lines:
        answer = answer_of(line.reference)
        for name, pattern, variants in RULES:
            structural = name == "any order" and is_mapping(answer)
            if not (pattern.search(line.prompt) or structural):
                continue
            for variant in variants(answer):
                if variant == answer or not variant.strip():
                    continue
                fitting = [s for s in styles if s.carries(variant)] or [BARE]
                cases += [
                    Case(line.prompt, s.render(variant), line.reference, 1, "prompt_rule")
                    for s in fitting[:2]
                ]
    return cases
