"""GSM8K: the numeric final answer of a grade-school math word problem.

Rule followed: GSM8K's own grader (openai/grade-school-math, `dataset.py:extract_answer`:
the text after `#### `, commas removed) and veRL's `utils/reward_score/gsm8k.py` (strict
`#### N`, else "flexible": the last number). Like veRL's flexible mode we fall back to the
last number of the completion, and before that we honour every common way of marking a
final answer (`#### 42`, `\\boxed{42}`, "The answer is 42.", "Final answer: 42",
`<answer>42</answer>`: `rewardsmith.answers`).

Hedges score 0.0 (reason `hedged: ...`): a GSM8K answer is one number, so a completion that
offers several different ones is wrong, whichever comes first: markers that disagree
("#### 72" and "The answer is 73"), or one answer naming alternatives ("72 or 73", "72, 73,
74", "72 (or maybe 73)", a bare "72 or 73" at the end). A value under a negation ("the
answer is not 42", "72, not 73") is not offered. Numbers in the reasoning before a marked
answer, or joined to it by anything but a separator ("72 because 8 * 9 = 72"), do not count.

Normalization: thousands commas, currency signs ($, €, £), a percent sign, units or words
after the number and a trailing `.0` do not change the value. Values are parsed into exact
`Fraction`s ("5.50" == "5.5" == "11/2"), so integers compare exactly; a tiny relative
tolerance applies only when one side is not an integer (float round-off in "0.1 + 0.2").

The reference may be a bare number ("72", "1,000", "$5.50") or a full GSM8K solution ending
in `#### N`; anything else is an invalid reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from rewardsmith.answers import clean, first_offered, marked_answers, negated, value_run
from rewardsmith.errors import InvalidReferenceError
from rewardsmith.tools.base import AnswerVerifier, Hedged, Verdict
from rewardsmith.tools.reference_shape import check_reference_kind
from rewardsmith.types import ToolSpec

# Python refuses int() of strings over 4,300 digits, and no GSM8K answer has more than ten;
# longer digit runs in a completion are noise, not answers.
MAX_NUMBER_DIGITS = 100
# Only float round-off, never a different answer: applied only when a side is not an integer.
FLOAT_REL_TOL = 1e-9

_MINUS = "-\u2212"  # ASCII hyphen-minus and the Unicode minus sign
# A run of digits and commas ("1,000", "72,73", "1,22"), with decimals; split in Python
# (`_pieces`): one pass, no backtracking (a comma-heavy completion once cost seconds).
_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
# What an empty answer may still hold: spacing, emphasis, the closing tags around it.
_EMPTY = re.compile(r"[\s*_.:$]|</?[A-Za-z]{1,20}>")
_FRAC_RE = re.compile(r"\\d?frac\{[ \t]{0,3}(-?\d+)[ \t]{0,3}\}\{[ \t]{0,3}(\d+)[ \t]{0,3}\}")


@dataclass(frozen=True)
class _Number:
    """One number of a text: where it is, and what its value is made of (parsed only for
    the numbers an answer offers: a Fraction per number would cost most of the reading)."""

    start: int
    end: int
    digits: str
    den: str | None
    negative: bool

    @property
    def value(self) -> Fraction | None:
        """The exact value (None: too long to be an answer)."""
        return _value(self.digits, self.den, self.negative)


def _pieces(text: str, match: re.Match[str]) -> list[tuple[int, int]]:
    """The numbers of one digit run: itself when its commas group thousands ("1,000"),
    else each comma-separated part ("72,73" is two numbers)."""
    run = match.group().rstrip(",")
    start = match.start()
    if "," not in run or _THOUSANDS.fullmatch(run):
        return [(start, start + len(run))]
    out = []
    for part in run.split(","):
        if part:
            out.append((start, start + len(part)))
        start += len(part) + 1
    return out


def _value(digits: str, den: str | None, negative: bool) -> Fraction | None:
    digits = digits.replace(",", "")
    if len(digits) > MAX_NUMBER_DIGITS or (den is not None and len(den) > MAX_NUMBER_DIGITS):
        return None
    value = Fraction(digits)
    if den is not None and int(den) != 0:
        value /= int(den)
    return -value if negative else value


def _numbers(text: str, start: int = 0, end: int | None = None) -> list[_Number]:
    """Every number in text[start:end], in order: a minus sign counts when it is not a
    hyphen ("3-4", "x-2"); "3/4" is a fraction (not a date "3/4/2020"); `\\frac{a}{b}` is
    read by `numbers_in` before this."""
    out: list[_Number] = []
    skip_to = -1
    for match in _DIGITS.finditer(text, start, len(text) if end is None else end):
        for start, end in _pieces(text, match):
            if start < skip_to:
                continue
            den = None
            if text[end : end + 1] == "/" and text[start - 1 : start] != "/":
                tail = _DIGITS.match(text, end + 1)
                if tail is not None and "," not in tail.group() and "." not in tail.group():
                    after = text[tail.end() : tail.end() + 1]
                    if after != "/" and not after.isdigit():
                        den, skip_to = tail.group(), tail.end()
            lead = start - 1
            while lead >= 0 and text[lead] in " $€£" and start - lead <= 2:
                lead -= 1
            negative = lead >= 0 and text[lead] in _MINUS
            before = text[lead - 1 : lead] if lead > 0 else ""
            if negative and (before.isalnum() or before in (")", "]", "}", "_")):
                negative = False  # a hyphen: "3-4", "x-2"
            if (
                negative
                and start - lead > 1
                and before.strip() == ""
                and _at_line_start(text, lead)
            ):
                negative = False  # a list bullet: "- 72"
            out.append(
                _Number(
                    lead if negative else start,
                    skip_to if den else end,
                    text[start:end],
                    den,
                    negative,
                )
            )
    return out


def _at_line_start(text: str, i: int) -> bool:
    """Whether only spaces stand between the line's start and `i`."""
    line_start = text.rfind("\n", 0, i) + 1
    return i - line_start <= 8 and not text[line_start:i].strip()


def numbers_in(text: str) -> list[Fraction | None]:
    """Every number in `text`, in order (None for digit runs too long to be an answer)."""
    return [n.value for n in _numbers(_FRAC_RE.sub(lambda m: f"{m.group(1)}/{m.group(2)}", text))]


def _first_number(text: str) -> Fraction | None:
    found = numbers_in(text)
    return found[0] if found else None


def _after_hashes(text: str) -> Fraction | None:
    """The number on the line after the last `####`, as GSM8K solutions end."""
    _, hashes, tail = text.rpartition("####")
    if not hashes:
        return None
    return _first_number(tail.strip().split("\n", 1)[0])


def _distinct(values: list[Fraction]) -> list[Fraction]:
    out: list[Fraction] = []
    for v in values:
        if not any(numbers_equal(v, seen) for seen in out):
            out.append(v)
    return out


def _last_statement(text: str, numbers: list[_Number]) -> int | None:
    """The index of the number unmarked text ends with: the last one, or, when a negation
    rules it out ("72, not 73"), the one before it in the same sentence; None when the
    last statement rules out its only number ("The answer isn't 42.")."""
    last = len(numbers) - 1
    if not negated(text, numbers[last].start, numbers[last].end):
        return last
    for i in range(last - 1, max(-1, last - 4), -1):
        between = text[numbers[i].end : numbers[last].start]
        if any(ch in between for ch in ".!?\n"):
            return None
        if not negated(text, numbers[i].start, numbers[i].end):
            return i
    return None


_OPERATOR = re.compile(r"[*×/+]")


def _result_start(text: str, start: int, end: int) -> int:
    """Where a marked answer's value starts: after its last "=" when it begins with a
    calculation ("the final answer is 15 * 8 = 120 pints"), else where it starts."""
    equals = text.rfind("=", start, end)
    if equals < 0:
        return start
    first = text.find("=", start, end)
    if not (_OPERATOR.search(text, start, first) and any(c.isdigit() for c in text[start:first])):
        return start
    return equals + 1


def read_numbers(text: str) -> list[Fraction | None]:
    """The numbers `text` offers as its final answer, each once (several: a hedge): those of
    every standing marker (`#### N`, `\\boxed{}`, "the answer is", answer tags: see
    `rewardsmith.answers`), else the last number with any joined to it ("72 or 73"); values
    under a negation left out. Empty when there is none, and when the only answer marked
    is empty ("#### " after reasoning that holds numbers: the format without an answer)."""
    text = clean(_FRAC_RE.sub(lambda m: f"{m.group(1)}/{m.group(2)}", text))
    found: list[Fraction | None] = []
    marks = marked_answers(text)
    for _, start, end, _ in marks:  # only the numbers of marked answers are read
        start = _result_start(text, start, end)
        numbers = _numbers(text, start, end)
        spans = [(n.start, n.end) for n in numbers]
        starts = [n.start for n in numbers]
        found += [numbers[i].value for i in first_offered(text, spans, starts, start, end)]
    if not found and any(not _EMPTY.sub("", text[a:b]) for _, a, b, _ in marks):
        return []  # "#### " or "\\boxed{}": the answer's place, left empty
    if not found:
        numbers = _numbers(text)
        if not numbers:
            return []
        last = _last_statement(text, numbers)
        if last is None:
            return []
        spans = [(n.start, n.end) for n in numbers]
        found = [numbers[i].value for i in value_run(text, spans, last, False, False)]
    usable = [v for v in found if v is not None]
    return [None] if not usable else list(_distinct(usable))


def extract_number(text: str) -> Fraction | Hedged | None:
    """The final numeric answer of `text` (see `read_numbers`): one value, a `Hedged` when
    it offers several different ones, None when there is none."""
    values = read_numbers(text)
    if not values or values[0] is None:
        return None
    if len(values) > 1:
        return Hedged(tuple(_show(v) for v in values if v is not None))
    return values[0]


def _show(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}" if len(str(value)) > 12 else str(value)


def numbers_equal(answer: Fraction, reference: Fraction) -> bool:
    """Exact equality; a relative tolerance of `FLOAT_REL_TOL` when a side is not an integer."""
    if answer == reference:
        return True
    if answer.denominator == 1 and reference.denominator == 1:
        return False
    return abs(answer - reference) <= FLOAT_REL_TOL * max(abs(answer), abs(reference))


class GSM8KTool(AnswerVerifier):
    """Scores 1.0 when the completion's final number equals the reference number, else 0.0."""

    blanks_prompt_copies = True  # an echoed question's numbers are no answer

    def __init__(self, spec: ToolSpec) -> None:
        super().__init__(spec)

    def parse_reference(self, reference: str) -> Fraction:
        """A bare number ("72", "1,000", "$5.50") or a GSM8K solution ending in `#### N`."""
        text = reference.strip()
        if not text:
            raise InvalidReferenceError("empty reference")
        foreign = check_reference_kind("gsm8k", "a number like '72' or '#### 72'", text)
        if foreign:
            raise InvalidReferenceError(foreign)
        if "####" in text:
            value = _after_hashes(text)
            if value is None:
                raise InvalidReferenceError(f"no number after '####' in reference {text[-80:]!r}")
            return value
        found = numbers_in(text)
        if len(found) != 1 or found[0] is None:
            raise InvalidReferenceError(
                f"reference {text[:80]!r} is not a number; expected a number like '72' or "
                "'$1,000', or a GSM8K solution ending in '#### N'"
            )
        return found[0]

    def extract(self, completion: str) -> Fraction | Hedged | None:
        return extract_number(completion)

    def compare(self, answer: Fraction, reference: Fraction) -> Verdict:
        if numbers_equal(answer, reference):
            return Verdict(1.0, reason=f"answer {_show(answer)} equals the reference")
        return Verdict(
            0.0, reason=f"answer {_show(answer)} differs from the reference {_show(reference)}"
        )
