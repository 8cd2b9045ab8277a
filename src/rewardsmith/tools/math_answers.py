"""What the `math` tool reads from a completion: the answers it offers, so that a hedge, a
negated answer or a number lifted from the question is not paid.

math-verify alone reads one answer (the last `\\boxed{}`, else "the answer is", else the
last expression anywhere) and pays when it matches: "The answer is 2 or 3." pays for 2,
"It is definitely not 2." pays for 2, the question given back pays when it ends with the
answer's number, and an answer in `<answer>` tags is not read at all. `read_math` reads a
completion in three ways, the first that applies:

- *marked*: every standing marker's answer (tags, boxes, `####`, answer phrases:
  `rewardsmith.answers`; an answer withdrawn before a later one does not count), each split
  into the alternatives it offers, negated ones dropped;
- *bare*: without markers, the final answer (a fenced block that ends the completion, else
  the last line) when it is math, not prose ("p - q", "\\\\left(3, \\\\frac{\\\\pi}{2}\\\\right)",
  "2 or 3"), with any bare value lines right above it ("5\\n2220\\n4": a list);
- *prose*: otherwise math-verify's own reading of the text, trusted only when the expression
  it read is in the last line, is not under a negation, and the last line is not a question;
  a last line offering alternatives ("4, or 9 if I misread it") offers each.

`MathTool.compare` then decides with the reference: a reference with one value (a number,
an expression, an equation) is matched only when every answer offered matches it; a
reference with several values (a set, a tuple, an interval, the roots "2, 3") is compared
with the answers together ("x = 2 or x = 3" for the roots 2 and 3).
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
    last_line_span,
    marked_answers,
    negated,
    same_key,
    split_top_level,
)

# More distinct candidates than this is a hedge whatever they are: none is parsed.
MAX_CANDIDATES = 8
# Bare value lines above the final one that are read as one list with it.
MAX_LIST_LINES = 8
BARE_LINE_CHARS = 40
# A word of three letters or more outside LaTeX commands makes a candidate prose.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_LATEX_TEXT = re.compile(
    r"\\(?:text|mathrm|textbf|mbox|operatorname|begin|end)[ \t]{0,3}\{[^{}]{0,200}\}"
)
# Two-letter words of a sentence that no answer writes as math ("So it is 5.", "It is 3.5.").
_SHORT_WORD = re.compile(r"(?<![\\A-Za-z])(?:[Ii][ts]|[Ss]o|[Ww]e)(?![A-Za-z])")
_HEDGE_WORDS = frozenset({"either", "maybe", "perhaps", "possibly", "probably", "could", "might"})
_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")
_NUMBER_LIKE = re.compile(r"[\s\d.,+\-]+")
# A prose last line is split into alternatives only when short and offering some.
HEDGE_LINE_CHARS = 160
_HEDGE_CONNECTIVE = re.compile(r"\b(?:or|either|maybe|perhaps|possibly|could|might)\b", re.I)
# Where math is in a line: a number, a `$...$` or a LaTeX command.
_MATH_TOKEN = re.compile(r"\d(?:[\d,.]*\d)?|\$[^$]{0,200}\$|\\[A-Za-z]+|\\[\[\]()]")
# LaTeX in an expression: a slash in it joins LaTeX ("\\sqrt{51}/\\frac{14}{3}",
# "90^\\circ/3\\sqrt{13}"), which math-verify's prose reading cuts at the slash.
_LATEX = re.compile(r"\\[A-Za-z]|[{}]")
# A number with thousands separators, whole: "1,000", "12,345,678" (not "1,0001" nor "0.1,000").
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,]|\.\d)")
_DELIMITED = re.compile(r"(?<!\\)\$|\\[\[(]")
# A word of prose (three letters or more, not a LaTeX command): where the final math starts.
_PROSE_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z'’]{3,}")
# Blanks, "=", ":" and words of prose before the final math ("it is", "Result:", "= "; in
# "so x is" x is math and kept).
_LEADING_WORDS = re.compile(r"(?:[\s=:]|[A-Za-z]{2,}\s)*")
# An alternative that leads with a value ("9 if I misread it"), not with words.
_VALUE_FIRST = re.compile(r"[$\\(\[{\-+.\d]|[A-Za-z](?![A-Za-z])")


@dataclass(frozen=True)
class MathReading:
    """A completion as the `math` tool reads it (see the module docstring): `how` it was
    read, the answers offered (`groups`: one tuple of alternatives per marked answer, or
    the bare final answer's), and for prose the text math-verify reads and its last line."""

    how: str
    text: str
    groups: tuple[tuple[str, ...], ...] = field(default_factory=tuple)
    negated: int = 0
    final_line: str = ""

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
    """Whether `text` has words (three letters or more, or a short word of a sentence: "So
    it is 5."; outside LaTeX commands and `\\text{}`), other than hedge words."""
    plain = _LATEX_TEXT.sub(" ", text)
    words = _WORD.findall(plain)
    return _SHORT_WORD.search(plain) is not None or any(
        w.lower() not in _HEDGE_WORDS for w in words
    )


def _bare_value_line(line: str) -> bool:
    text = line.strip().strip("*-•").strip()
    return bool(text) and len(text) <= BARE_LINE_CHARS and "=" not in text and not is_prose(text)


def _bare(text: str) -> tuple[str, ...] | None:
    """The bare final answer's alternatives (with bare value lines above it), or None."""
    fenced = last_fenced(text)
    span = fenced if fenced is not None else last_line_span(text)
    if span is None or is_prose(text[span[0] : span[1]]):
        return None
    items, _ = alternatives(text[span[0] : span[1]].lstrip("=: \t"))  # "= 3\\sqrt{13}"
    if not items:
        return None
    above = text[: span[0]].rstrip("\n").split("\n")[-MAX_LIST_LINES:] if fenced is None else []
    listed: list[str] = []
    for line in reversed(above):
        if not _bare_value_line(line):
            break
        listed.insert(0, line.strip().strip("*-•").strip())
    return (*listed, *items)


def read_math(text: str) -> MathReading:
    """The reading of a clipped completion (see the module docstring)."""
    text = clean(text)
    groups: list[tuple[str, ...]] = []
    dropped = 0
    marks = marked_answers(text)
    for _, start, end, _ in marks:
        items, neg = alternatives(text[start:end])
        dropped += neg
        if items:
            groups.append(tuple(items))
    if marks:
        return MathReading("marked", text, tuple(groups), dropped)
    bare = _bare(text)
    if bare is not None:
        return MathReading("bare", text, (bare,))
    span = last_line_span(text)
    line = text[span[0] : span[1]] if span is not None else ""
    offered: list[str] = []
    if len(line) <= HEDGE_LINE_CHARS and _HEDGE_CONNECTIVE.search(line):
        items, _ = alternatives(line)
        offered = [items[0], *(i for i in items[1:] if _VALUE_FIRST.match(i))] if items else []
    if len(offered) < 2:
        offered = _slash_alternatives(line)
    return MathReading("prose", text, (tuple(offered),) if len(offered) > 1 else (), 0, line)


def _latex_slash(expression: str) -> bool:
    return "/" in expression and _LATEX.search(expression) is not None


def _slash_alternatives(line: str) -> list[str]:
    """The answers a slash offers in the prose's final math ("it is \\frac{14}{3}/\\text{Evelyn}":
    math-verify reads only the fraction), as the bare reading splits them; [] for one
    quotient ("\\sqrt{51}/\\frac{14}{3}") or no slash."""
    span = final_expression(line)
    if span is None or not _latex_slash(line[span[0] : span[1]]):
        return []
    items, _ = alternatives(line[span[0] : span[1]])
    return items if len(items) > 1 else []


def final_expression(line: str) -> tuple[int, int] | None:
    """(start, end) in `line` of its final math: from the end of the last prose word before
    its last number, `$...$` or LaTeX command, to the end of that; None without math."""
    tokens = list(_MATH_TOKEN.finditer(line))
    if not tokens:
        return None
    last = tokens[-1]
    start = 0
    # words inside `\text{...}` are part of the math ("\text{Evelyn}/\frac{14}{3}")
    masked = _LATEX_TEXT.sub(lambda m: " " * len(m.group()), line)
    for word in _PROSE_WORD.finditer(masked, 0, last.start()):
        start = word.end()
    end = _arguments_end(line, last.end())
    while end < len(line) and line[end] in "}])$":  # the closing braces of the expression
        end += 1
    # short words before the math are prose too ("it is \\frac{14}{3}")
    lead = _LEADING_WORDS.match(line, start, last.start())
    return (lead.end() if lead else start), end


def _arguments_end(line: str, end: int) -> int:
    """The end of a LaTeX command's brace arguments starting at `end` ("\\text{Evelyn}"),
    or `end` when none follows."""
    while end < len(line) and line[end] == "{":
        depth = 0
        for i in range(end, len(line)):
            depth += {"{": 1, "}": -1}.get(line[i], 0)
            if depth == 0:
                end = i + 1
                break
        else:
            return len(line)
    return end


def prose_answer_stands(reading: MathReading) -> bool:
    """Whether the prose's last line can hold an answer: it has math (a digit, `$` or a
    LaTeX command) not under a negation ("It is definitely not 2.", "The answer isn't
    2."), and it is no question (the prompt given back)."""
    line = reading.final_line.rstrip()
    if not line or line.endswith("?"):
        return False
    span = final_expression(line)
    return span is not None and not negated(line, *span)


def prose_latex(reading: MathReading) -> str | None:
    """The prose's final expression as LaTeX when it holds LaTeX without delimiters ("It is
    3\\sqrt{13}.", "it is \\sqrt{51}/\\frac{14}{3}"): math-verify's prose reading takes
    only a number or the part after a slash there; None otherwise (no LaTeX, or `$...$`,
    `\\(...\\)` that math-verify reads itself)."""
    span = final_expression(reading.final_line)
    if span is None:
        return None
    expression = _last_clause(reading.final_line[span[0] : span[1]])
    if _DELIMITED.search(expression) or not _LATEX.search(expression) or is_prose(expression):
        return None
    return as_latex(expression)


def _last_clause(expression: str) -> str:
    """The last of `expression`'s top-level pieces (`split_top_level`: cut at commas outside
    brackets and numbers, ";", "and", ...), after its last short word of a sentence ("so",
    "is"), without leading words: in "\\sqrt{4} = 2, x = 2" the answer is "x = 2";
    "\\left(3, \\pi\\right)" and "1,000\\sqrt{2}" stay whole."""
    clause = split_top_level(expression)[-1]
    words = list(_SHORT_WORD.finditer(clause))  # "x^2 = 4 so x = \\pm 2"
    if words:
        clause = clause[words[-1].end() :]
    lead = _LEADING_WORDS.match(clause)
    return clause[lead.end() :] if lead else clause


def as_latex(candidate: str) -> str:
    """A candidate answer as math-verify reads exactly it: `\\boxed{...}`, unless it is prose
    (math-verify finds the math in it), already delimited by `$`, or digits and separators
    only ("1000,99": its expression reading of a number beats LaTeX's, which reads a set)."""
    if (
        is_prose(candidate)
        or _NUMBER_LIKE.fullmatch(candidate)
        or _UNESCAPED_DOLLAR.search(candidate)
    ):
        return candidate  # math-verify reads `$...$` itself
    return "\\boxed{" + _UNESCAPED_DOLLAR.sub("", candidate) + "}"


def without_thousands(candidate: str) -> str | None:
    """`candidate` with its thousands separators dropped ("x = 1,000" -> "x = 1000", which
    math-verify would read as a set beside "x ="), or None when it has none."""
    plain = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), candidate)
    return plain if plain != candidate else None


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
