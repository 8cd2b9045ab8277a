"""What the `math` tool reads from a completion besides math-verify's own reading: the
candidate answers it offers, so that a hedge scores 0.

math-verify reads one answer (the last `\\boxed{}`, else "the answer is", else the last
expression) and pays when it matches: "The answer is 2 or 3." pays for 2, "The answer is
not 2." pays for 2, and an answer in `<answer>` tags is not read at all. `read_math` adds
the reading of `rewardsmith.answers`:

- the standing markers' answers (tags, boxes, `####`, answer phrases; an answer withdrawn
  before a later one does not count), each split into the alternatives it offers;
- without markers, the last line (or a fenced block that ends the completion) when it is a
  short list of math alternatives ("2 or 3", "x = 2 or x = 3", "either 2 or 3"); a prose
  line ("adding 3 and 4 we get 7") stays math-verify's to read;
- answers under a negation are not offered.

`MathTool.compare` then decides with the reference: a reference with one value (a number,
an expression, an equation) is matched only when every offered answer matches it; a
reference with several values (a set, a tuple, an interval, the roots "2, 3") compares the
alternatives together, as a set ("x = 2 or x = 3" for the roots 2 and 3).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.answers import (
    alternatives,
    clean,
    last_fenced,
    last_line,
    marked_answers,
    same_key,
)

# More distinct candidates than this is a hedge whatever they are: none is parsed.
MAX_CANDIDATES = 8
# A word of three letters or more outside LaTeX commands makes a candidate prose.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|textbf|mbox|operatorname)[ \t]{0,3}\{[^{}]{0,200}\}")
_HEDGE_WORDS = frozenset({"either", "maybe", "perhaps", "possibly", "probably", "could", "might"})
_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")


@dataclass(frozen=True)
class MathReading:
    """A completion as the `math` tool reads it: the text math-verify parses, the answers
    it offers (`groups`: one tuple of alternatives per standing marker, or the last line's),
    and whether it was marked."""

    text: str
    groups: tuple[tuple[str, ...], ...] = field(default_factory=tuple)
    negated: int = 0

    @property
    def candidates(self) -> list[str]:
        """Every distinct answer offered, in order."""
        seen: set[str] = set()
        out = []
        for group in self.groups:
            for item in group:
                if same_key(item) not in seen:
                    seen.add(same_key(item))
                    out.append(item)
        return out


def is_prose(text: str) -> bool:
    """Whether `text` has words (three letters or more, outside LaTeX commands and
    `\\text{}`), other than hedge words."""
    words = _WORD.findall(_LATEX_TEXT.sub(" ", text))
    return any(w.lower() not in _HEDGE_WORDS for w in words)


def read_math(text: str) -> MathReading:
    """The reading of a clipped completion (see the module docstring)."""
    text = clean(text)
    groups: list[tuple[str, ...]] = []
    dropped = 0
    for _, start, end, _ in marked_answers(text):
        items, neg = alternatives(text[start:end])
        dropped += neg
        if items:
            groups.append(tuple(items))
    if not groups and not dropped:
        fenced = last_fenced(text)
        span = fenced if fenced is not None else last_line(text)
        if span is not None:
            # a negation in unmarked prose ("not 10, it's 1,000.99") is math-verify's to read
            items, _ = alternatives(text[span[0] : span[1]])
            # only a list of alternatives: a single answer is math-verify's to read
            if len(items) > 1 and not any(is_prose(i) for i in items[1:]):
                groups.append(tuple(items))
    return MathReading(text, tuple(groups), dropped)


def as_latex(candidate: str) -> str:
    """A candidate answer as math-verify reads exactly it: `\\boxed{...}`, unless it is prose
    (then math-verify finds the math in it)."""
    if is_prose(candidate):
        return candidate
    return "\\boxed{" + _UNESCAPED_DOLLAR.sub("", candidate) + "}"


def as_one(items: Sequence[str]) -> str:
    """Several answers as one expression math-verify reads as a set: `\\boxed{a, b}`."""
    return "\\boxed{" + ", ".join(_UNESCAPED_DOLLAR.sub("", i) for i in items) + "}"


def single_valued(gold: list[Any]) -> bool:
    """Whether a parsed reference is one value (not a set, tuple, interval, matrix or list,
    nor an equation with such a side). A reference math-verify reads two ways ("1,22": a
    decimal and a set) has several; one it keeps only as text is judged by its writing."""
    from sympy import MatrixBase, Set, Tuple
    from sympy.core.relational import Relational

    def several(value: Any) -> bool:
        if isinstance(value, Relational):  # "a = 4, -8, -10": an equation with a set side
            return several(value.lhs) or several(value.rhs)
        return isinstance(value, Set | Tuple | MatrixBase | list | tuple)

    if any(several(g) for g in gold if not isinstance(g, str)):
        return False
    # what math-verify could not turn into an expression: by how it is written
    return not any(len(alternatives(g)[0]) > 1 for g in gold if isinstance(g, str))
