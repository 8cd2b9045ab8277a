"""GSM8K: the numeric final answer of a grade-school math word problem.

Rule followed: GSM8K's own grader (openai/grade-school-math, `dataset.py:extract_answer`:
the text after `#### `, commas removed) and veRL's `utils/reward_score/gsm8k.py` (strict
`#### N`, else "flexible": the last number). Like veRL's flexible mode we fall back to the
last number of the completion, and before that we honour the two ways models usually mark a
final answer, `\\boxed{42}` and "The answer is 42.".

Normalization: thousands commas, currency signs ($, €, £), a percent sign, units or words
after the number and a trailing `.0` do not change the value. Values are parsed into exact
`Fraction`s ("5.50" == "5.5" == "11/2"), so integers compare exactly; a tiny relative
tolerance applies only when one side is not an integer (float round-off in "0.1 + 0.2").

The reference may be a bare number ("72", "1,000", "$5.50") or a full GSM8K solution ending
in `#### N`; anything else is an invalid reference.
"""

from __future__ import annotations

import re
from fractions import Fraction

from rewardsmith.errors import InvalidReferenceError
from rewardsmith.tools.base import AnswerVerifier, Verdict
from rewardsmith.tools.reference_shape import check_reference_kind
from rewardsmith.types import ToolSpec

# Python refuses int() of strings over 4,300 digits, and no GSM8K answer has more than ten;
# longer digit runs in a completion are noise, not answers.
MAX_NUMBER_DIGITS = 100
# Only float round-off, never a different answer: applied only when a side is not an integer.
FLOAT_REL_TOL = 1e-9
# "The answer is" is followed by the number within a short span; farther numbers are other text.
ANSWER_PHRASE_SPAN_CHARS = 80

_MINUS = "-\u2212"  # ASCII hyphen-minus and the Unicode minus sign
_NUMBER_RE = re.compile(
    # A minus sign counts only when it is not a hyphen inside "3-4" or "x-2".
    rf"(?P<sign>(?<![\w)\]}}])[{_MINUS}])?"
    r"[$€£]?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)|\d+(?:\.\d+)?|\.\d+)"
    # A plain fraction "3/4"; not a date "3/4/2020".
    r"(?:/(?P<den>\d+)(?![\d/]))?"
)
_FRAC_RE = re.compile(r"\\d?frac\{\s*(-?\d+)\s*\}\{\s*(\d+)\s*\}")
_BOXED_RE = re.compile(r"\\boxed\s*\{")
_ANSWER_PHRASE_RE = re.compile(
    r"\banswer\b\s*(?:is|would\s+be|will\s+be|=|:)\s*:?",
    re.IGNORECASE,
)


def _to_fraction(match: re.Match[str]) -> Fraction | None:
    """The value of one `_NUMBER_RE` match, or None when it is not a usable number."""
    num = match.group("num").replace(",", "")
    den = match.group("den")
    if len(num) > MAX_NUMBER_DIGITS or (den is not None and len(den) > MAX_NUMBER_DIGITS):
        return None
    value = Fraction(num)
    if den is not None and int(den) != 0:
        value /= int(den)
    return -value if match.group("sign") else value


def numbers_in(text: str) -> list[Fraction | None]:
    """Every number in `text`, in order (None for digit runs too long to be an answer)."""
    text = _FRAC_RE.sub(lambda m: f"{m.group(1)}/{m.group(2)}", text)
    return [_to_fraction(m) for m in _NUMBER_RE.finditer(text)]


def _first_number(text: str) -> Fraction | None:
    found = numbers_in(text)
    return found[0] if found else None


def _last_number(text: str) -> Fraction | None:
    found = numbers_in(text)
    return found[-1] if found else None


def _last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}`, braces balanced; None when there is none."""
    starts = [m.end() for m in _BOXED_RE.finditer(text)]
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


def _after_hashes(text: str) -> Fraction | None:
    """The number on the line after the last `####`, as GSM8K solutions end."""
    _, hashes, tail = text.rpartition("####")
    if not hashes:
        return None
    return _first_number(tail.strip().split("\n", 1)[0])


def extract_number(text: str) -> Fraction | None:
    """The final numeric answer of `text`: `#### N`, else the last `\\boxed{}`, else the
    number after the last "the answer is", else the last number; None when there is none."""
    value = _after_hashes(text)
    if value is not None:
        return value
    boxed = _last_boxed(text)
    if boxed is not None:
        value = _last_number(boxed)
        if value is not None:
            return value
    phrases = list(_ANSWER_PHRASE_RE.finditer(text))
    if phrases:
        span = text[phrases[-1].end() : phrases[-1].end() + ANSWER_PHRASE_SPAN_CHARS]
        value = _first_number(span.split("\n", 1)[0])
        if value is not None:
            return value
    return _last_number(text)


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

    def extract(self, completion: str) -> Fraction | None:
        return extract_number(completion)

    def compare(self, answer: Fraction, reference: Fraction) -> Verdict:
        if numbers_equal(answer, reference):
            return Verdict(1.0, reason=f"answer {_show(answer)} equals the reference")
        return Verdict(
            0.0, reason=f"answer {_show(answer)} differs from the reference {_show(reference)}"
        )
