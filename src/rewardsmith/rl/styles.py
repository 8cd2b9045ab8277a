"""Answer styles of the multi-task testbed: how its completions are written, and the one
reading of a final answer that the testbed's own graders use.

A completion is intermediate steps (or none: a *direct* answer) followed by the final answer
in one of the styles real models use:

| style | with steps | direct |
|---|---|---|
| `tags` | `<thinking>S</thinking><solution>A</solution>` | `<solution>A</solution>` |
| `think_answer` | `<think>S</think>\\n<answer>A</answer>` | `<answer>A</answer>` |
| `boxed` | `S So the answer is \\boxed{A}.` | `\\boxed{A}` |
| `answer_is` | `S The answer is A.` | `The answer is A.` |
| `final` | `S\\nFinal answer: A` | `Final answer: A` |
| `hashes` | `S\\n#### A` | `#### A` |

`final_answer(text)` reads the answer back whatever the style: each marked style is read
(its last occurrence), and when the marks disagree, or one answer names two candidates
("31 or 32"; not for answers that are lists of words, `words=True`), the completion is a
*hedge* and has no answer. Without any mark the last
non-empty line is the answer. Pure Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STYLES = ("tags", "think_answer", "boxed", "answer_is", "final", "hashes")

_TAGGED = (
    re.compile(r"<solution>(.*?)</solution>", re.DOTALL),
    re.compile(r"<answer>(.*?)</answer>", re.DOTALL),
)
_BOXED = re.compile(r"\\boxed\s*\{")
_FINAL = re.compile(r"final answer\s*:\s*([^\n]*)", re.IGNORECASE)
_ANSWER_IS = re.compile(r"the answer is\s*:?\s*([^\n]*)", re.IGNORECASE)
_HASHES = re.compile(r"####\s*([^\n]*)")
# "31 or 32", "B or C": two candidates in one answer.
_HEDGE = re.compile(r"\s(?:or|and/or)\s", re.IGNORECASE)
# Where the answer after "the answer is" ends: the sentence's full stop (not a decimal point).
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
# Text markers of every style: a completion holding one but no readable answer is
# "format only" (see `read_answer`).
_MARKERS = re.compile(
    r"</?(?:thinking|solution|think|answer)>|\\boxed|final answer|the answer is|####",
    re.IGNORECASE,
)


def render(style: str, steps: str, answer: str, kind: str = "text") -> str:
    """A completion in `style`: `steps` (empty: a direct answer) then `answer`. A letter
    answer (`kind="letter"`) is written `(B)` after "The answer is", as models write it."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; expected one of {STYLES}")
    shown = f"({answer})" if kind == "letter" and style == "answer_is" else answer
    if style == "tags":
        return (
            f"<thinking>{steps}</thinking><solution>{shown}</solution>"
            if steps
            else (f"<solution>{shown}</solution>")
        )
    if style == "think_answer":
        head = f"<think>{steps}</think>\n" if steps else ""
        return f"{head}<answer>{shown}</answer>"
    if style == "boxed":
        return f"{steps} So the answer is \\boxed{{{shown}}}." if steps else f"\\boxed{{{shown}}}"
    if style == "answer_is":
        return f"{steps} The answer is {shown}." if steps else f"The answer is {shown}."
    if style == "final":
        return f"{steps}\nFinal answer: {shown}" if steps else f"Final answer: {shown}"
    return f"{steps}\n#### {shown}" if steps else f"#### {shown}"


def _last_boxed(text: str) -> str | None:
    starts = [m.end() for m in _BOXED.finditer(text)]
    for start in reversed(starts):
        depth = 1
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[start:i]
    return None


def _clean(answer: str) -> str:
    """Strip spaces, a sentence's full stop and quotes or parentheses around the answer."""
    text = answer.strip()
    text = text.rstrip(".").strip()
    while len(text) >= 2 and (text[0], text[-1]) in {("(", ")"), ('"', '"'), ("'", "'")}:
        text = text[1:-1].strip()
    return text


def _answer_is(text: str) -> str | None:
    found = _ANSWER_IS.findall(text)
    if not found:
        return None
    tail = found[-1]
    if _BOXED.search(tail):  # "the answer is \\boxed{42}": the boxed reading is the answer
        return _last_boxed(tail)
    end = _SENTENCE_END.search(tail)
    return tail[: end.start()] if end else tail


@dataclass(frozen=True)
class ReadAnswer:
    """What a completion's final answer is, and how it was written."""

    answer: str | None
    hedged: bool = False
    marked: bool = False  # written in a marked style (tags, boxed, a phrase), not a bare line

    @property
    def format_only(self) -> bool:
        """Style markers with nothing readable behind them (an empty `<solution></solution>`)."""
        return self.marked and not self.answer and not self.hedged


def read_answer(text: str, *, words: bool = False) -> ReadAnswer:
    """The final answer of a completion in any of the testbed's styles (module docstring).
    `words=True`: the answer is a list of words, where "or" is a word, not a hedge (marks
    that disagree still are)."""
    marked: list[str] = []
    for pattern in _TAGGED:
        found = pattern.findall(text)
        if found:
            marked.append(found[-1])
    for reader in (_last_boxed, _answer_is):
        value = reader(text)
        if value is not None:
            marked.append(value)
    for pattern in (_FINAL, _HASHES):
        found = pattern.findall(text)
        if found:
            marked.append(found[-1])
    has_marker = bool(_MARKERS.search(text))
    answers = {_clean(a) for a in marked}
    answers.discard("")
    if len(answers) > 1:
        return ReadAnswer(None, hedged=True, marked=True)
    if answers:
        answer = answers.pop()
    elif has_marker:
        return ReadAnswer(None, marked=True)
    else:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        answer = _clean(lines[-1]) if lines else ""
    if not answer:
        return ReadAnswer(None, marked=has_marker)
    if not words and _HEDGE.search(f" {answer} "):
        return ReadAnswer(None, hedged=True, marked=has_marker)
    return ReadAnswer(answer, marked=has_marker)


def final_answer(text: str, *, words: bool = False) -> str | None:
    """The completion's final answer, or None (no answer, or a hedge)."""
    return read_answer(text, words=words).answer
