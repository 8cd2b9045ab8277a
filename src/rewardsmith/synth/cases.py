"""Labeled cases built from examples: what a synthesized verifier must score 1 and score 0.

From a set of example lines:

- every labeled completion is a case as it stands;
- *positives*: each line's answer written in each answer style the completions use (a style
  is a completion with its answer cut out, found by the most specific extractor that reads
  one: `<answer>` tags before "the answer is" before the last line);
- *negatives*: each line's style-written wrong answers: other lines' answers and small
  content changes of its own (a letter or digit changed, a list item dropped).

A negative is only generated when it differs from the answer in *content*: equal after every
normalization (case, spacing, punctuation, number format, list syntax and order) counts as
the same content. Whether a task accepts a change of form is learned only from labeled
completions, never assumed: synthesis never normalizes by default.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rewardsmith.synth.examples import Example, answer_of
from rewardsmith.synth.primitives import (
    COMPARATORS,
    EXTRACTORS,
    FAILED,
    NORMALIZERS,
    Composition,
    shared_evaluator,
)

Origin = Literal["labeled", "reference_in_style", "other_answer", "perturbed", "prompt_rule"]

# Extractors that locate the answer in a completion, most specific first.
STYLE_EXTRACTORS: tuple[str, ...] = (
    "answer_in_tags",
    "boxed_answer",
    "json_answer_field",
    "answer_after_hashes",
    "answer_after_phrase",
    "code_block",
    "last_line",
    "whole_text",
)
# Styles kept per extractor and in all: enough to show each way of answering.
STYLES_PER_EXTRACTOR = 2
MAX_STYLES = 8
# Wrong answers written per line: other lines' answers and perturbations of its own.
OTHER_ANSWERS_PER_LINE = 2
PERTURBATIONS_PER_LINE = 2
_PUNCTUATION = ".,;:!?'\"`*()[]{}"


@dataclass(frozen=True)
class Style:
    """A way of answering: the text around the answer, and the extractor that finds it."""

    extractor: str
    before: str
    after: str

    def render(self, answer: str) -> str:
        return f"{self.before}{answer}{self.after}"

    def carries(self, answer: str) -> bool:
        """Does the style's own extractor read `answer` back from `render(answer)`?"""
        return shared_evaluator().apply(self.extractor, self.render(answer)) == answer


BARE = Style("whole_text", "", "")

# Each extractor's answer format with nothing around it (the probes use these, so that no
# example's reasoning text, which may hold its answer, leaks into a probe).
CANONICAL_STYLES: dict[str, Style] = {
    "answer_in_tags": Style("answer_in_tags", "<answer>", "</answer>"),
    "boxed_answer": Style("boxed_answer", "\\boxed{", "}"),
    "json_answer_field": Style("json_answer_field", '{"answer": "', '"}'),
    "answer_after_hashes": Style("answer_after_hashes", "#### ", ""),
    "answer_after_phrase": Style("answer_after_phrase", "The answer is ", ""),
    "code_block": Style("code_block", "```\n", "\n```"),
    "last_line": BARE,
    "last_number": BARE,
    "whole_text": BARE,
}


def canonical(style: Style) -> Style:
    """The style's answer format alone, without the example's own text around it."""
    return CANONICAL_STYLES.get(style.extractor, BARE)


@dataclass(frozen=True)
class Case:
    """A (prompt, completion, reference) the tool must score `label` (1 right, 0 wrong)."""

    prompt: str
    completion: str
    reference: str
    label: int
    origin: Origin


def content_key(text: str) -> tuple[str, ...]:
    """`text` with every difference of form removed: lower case, no spacing or outer
    punctuation, canonical numbers, list syntax and item order ignored."""
    ev = shared_evaluator()
    canon = ev.apply("canonical_numbers", text.lower())
    canon = text.lower() if canon is FAILED else canon
    items = ev.apply("list_items", canon.strip().strip("[]"))
    if not isinstance(items, list):
        items = [canon]
    return tuple(sorted("".join(str(i).split()).strip(_PUNCTUATION) for i in items))


def same_content(a: str, b: str) -> bool:
    return content_key(a) == content_key(b)


def derive_style(completion: str) -> Style | None:
    """The completion's style: the most specific extractor that finds an answer which
    appears verbatim in it, with the text around that answer's last occurrence."""
    ev = shared_evaluator()
    for name in STYLE_EXTRACTORS:
        answer = ev.apply(name, completion)
        if not isinstance(answer, str) or not answer:
            continue
        at = completion.rfind(answer)
        if at >= 0:
            return Style(name, completion[:at], completion[at + len(answer) :])
    return None


def styles_of(completions: Sequence[str]) -> list[Style]:
    """The distinct styles of a set of completions (bare answers when there are none)."""
    out: list[Style] = []
    per: dict[str, int] = {}
    for completion in completions:
        style = derive_style(completion)
        if style is None or style in out or per.get(style.extractor, 0) >= STYLES_PER_EXTRACTOR:
            continue
        per[style.extractor] = per.get(style.extractor, 0) + 1
        out.append(style)
        if len(out) >= MAX_STYLES:
            break
    return out or [BARE]


def relation(example: Example) -> str:
    """What a labeled completion teaches: `exact` (an extractor reads the reference's answer
    itself), `form:NAME` (it differs from the answer only in form, and the single normalizer
    or comparator NAME would accept it), `content`, or `none` for a line without a labeled
    completion."""
    if not example.labeled or example.completion is None:
        return "none"
    ev = shared_evaluator()
    answer = answer_of(example.reference)
    found = [ev.apply(name, example.completion) for name in EXTRACTORS]
    texts = [f for f in dict.fromkeys(found) if isinstance(f, str)]
    if answer in texts:
        return "exact"
    for name in (*NORMALIZERS, *COMPARATORS):
        if COMPARATORS.get(name) is not None and COMPARATORS[name].host:
            continue
        one = (
            Composition(("whole_text",), (), name)
            if name in COMPARATORS
            else Composition(("whole_text",), (name,))
        )
        if any(ev.score(one, t, answer) == 1.0 for t in texts):
            return f"form:{name}"
    if any(same_content(t, answer) for t in texts):
        return "form:other"
    return "content"


def perturbations(answer: str) -> list[str]:
    """Small content changes of an answer: its last letter or digit changed; for a list, an
    item dropped or one repeated. Only those that differ in content are returned."""
    out: list[str] = []
    chars = list(answer)
    for i in range(len(chars) - 1, -1, -1):
        ch = chars[i]
        if ch.isdigit():
            chars[i] = str((int(ch) + 1) % 10)
            break
        if ch.isascii() and ch.isalpha():
            base = ord("a") if ch.islower() else ord("A")
            chars[i] = chr(base + (ord(ch) - base + 1) % 26)
            break
    out.append("".join(chars))
    ev = shared_evaluator()
    sep = ev.apply("list_separator", answer)
    items = ev.apply("list_items", answer)
    if isinstance(items, list) and len(items) >= 2 and sep not in ("[", FAILED):
        joiner = {",": ", ", ";": "; "}.get(sep, sep)
        out.append(joiner.join(items[: len(items) // 2] + items[len(items) // 2 + 1 :]))
        out.append(joiner.join([*items, items[0]]))
    return [p for p in dict.fromkeys(out) if p.strip() and not same_content(p, answer)]


def build_cases(
    lines: Sequence[Example],
    styles: Sequence[Style],
    wrong_pool: Sequence[str],
    seed: int = 0,
) -> list[Case]:
    """The cases of `lines`: their labeled completions, their answers in every style that
    can carry them, and wrong answers (from `wrong_pool` and perturbations) in those styles.
    Deterministic for a given seed."""
    rng = random.Random(seed)
    cases: list[Case] = []
    pool = list(dict.fromkeys(wrong_pool))
    for n, line in enumerate(lines):
        if line.labeled and line.completion is not None and line.label is not None:
            cases.append(Case(line.prompt, line.completion, line.reference, line.label, "labeled"))
        answer = answer_of(line.reference)
        fitting = [s for s in styles if s.carries(answer)] or [BARE]
        for style in fitting:
            cases.append(
                Case(line.prompt, style.render(answer), line.reference, 1, "reference_in_style")
            )
        others = [w for w in pool if not same_content(w, answer)]
        rng.shuffle(others)
        wrong = [(w, "other_answer") for w in others[:OTHER_ANSWERS_PER_LINE]]
        wrong += [(w, "perturbed") for w in perturbations(answer)[:PERTURBATIONS_PER_LINE]]
        for k, (text, origin) in enumerate(wrong):
            carriers = [s for s in styles if s.carries(text)] or [BARE]
            style = carriers[(n + k) % len(carriers)]
            cases.append(Case(line.prompt, style.render(text), line.reference, 0, origin))  # type: ignore[arg-type]
    return cases
