"""Multiple choice: the answer letter of a completion against the reference letter.

Rule followed: the answer-extraction cascade of the common MCQ evaluators (MMLU-Pro's
`extract_answer`: "answer is (X)", then "Answer: X", then a last standalone letter; lm-eval
harness's `multiple_choice` regex filters), made stricter about the article "A": a letter
counts only when something anchors it as an answer. In order, the last match of:

1. every marked answer (`rewardsmith.answers`): `\\boxed{B}` (also `\\boxed{(B)}`,
   `\\boxed{\\text{B}}`), `<answer>B</answer>`, `#### B`, an answer phrase ("the answer is
   (B)", "Answer: B", "Final answer: **B**", "the correct option is D");
2. else the last non-empty line (of a fenced block that ends the completion) when it is
   just the letter ("B", "(B)", "**B**", "B.") or starts with the letter and its option text
   ("B) Paris", "(B) Paris", "B. Paris");
3. else a bold or parenthesized letter anywhere: "**B**", "(B)" (unless the text lists three
   options or more, "(A) Oxygen (B) Nitrogen (C) Helium": an echo of the question);
4. else a standalone capital letter that ends the completion: "... so I pick C."

Hedges score 0.0 (reason `hedged: ...`): one letter is the answer, so marked answers that
disagree ("Answer: B" then "Answer: C"), an answer naming several letters ("The answer is
(B) or (A).", "Answer: B, C", "B/C", "B (or maybe C)") or a bare list of letters at the end
("(A) or (B)", one letter per line) offer several answers. A letter under a negation ("the
answer is not B") is not offered; an answer withdrawn before a later one ("Wait, no: the
answer is B") does not count.

Lower-case letters count only where nothing else can be meant ("(b)", "Answer: b" alone on
its line). The reference may be "B", "(B)", "B) some text", "B. some text" or "b". Every
pattern has bounded repetitions, so reading is linear in the completion's length.
"""

from __future__ import annotations

import bisect
import re
import string
from collections.abc import Sequence

from rewardsmith.answers import clean, first_offered, last_fenced, marked_answers, value_run
from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.tools.base import AnswerVerifier, Hedged, Verdict
from rewardsmith.types import ToolSpec

DEFAULT_LETTERS = "ABCDEFGHIJ"  # MMLU-Pro has ten options, A-J; MMLU and GPQA use A-D
# Only the end of a completion holds its final answer; the cascade runs on this tail.
ANSWER_TAIL_CHARS = 4_000
# Unmarked text that lists this many options ("(A) Oxygen (B) Nitrogen (C) ...") repeats the
# question: none of its letters is an answer.
OPTION_LISTING = 3
# The task's own answer phrases besides "the answer is" (`rewardsmith.answers`): "the correct
# option is", "choice:".
_OPTION_PHRASE = re.compile(
    r"\b(?:option|choice)(?:[ \t]{1,3}(?:is|would[ \t]be|will[ \t]be|should[ \t]be)\b)?"
    r"[ \t]{0,3}(?:\*\*|__)?[ \t]{0,3}[:：]?(?=[ \t]{0,3}(?:\*\*|__|\\text\{)?[ \t]{0,3}[(\[]?[A-Za-z]\b)",
    re.IGNORECASE,
)


def _patterns(letters: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The unmarked cascade for an alphabet of upper-case letters: (letters that may be
    values, the last line's letter, a bold or parenthesized letter). Every repetition is
    bounded, so each pattern is linear in the text."""
    up = f"[{letters}]"
    lo = f"[{letters.lower()}]"
    value = re.compile(
        # an upper-case letter standing alone ("I" before a lower-case word is the pronoun),
        # or a lower-case one in parentheses
        rf"(?<![A-Za-z0-9'’])({up})(?![A-Za-z0-9'’])(?!(?<=I)[ \t]+[a-z])"
        rf"|(?<=[(\[])({lo})(?=[)\]])"
        # or alone after a colon at the end of its line ("Answer: b")
        rf"|(?<=[:：])[ \t]{{0,3}}(?:\*\*|__)?({lo})(?=(?:\*\*|__)?[ \t]{{0,3}}\.?[ \t]{{0,3}}$)",
        re.MULTILINE,
    )
    last_line = re.compile(
        rf"[ \t]{{0,3}}(?:\*\*|__)?[\(\[]?({up})[\)\]]?(?:\*\*|__)?[ \t]{{0,3}}[.:]?[ \t]{{0,3}}\Z"
        rf"|[ \t]{{0,3}}(?:\*\*|__)?(?:[\(\[]({up})[\)\]]|({up})[\)\].:])[ \t]"
    )
    bold_or_paren = re.compile(rf"\*\*[ \t]{{0,3}}\(?({up})\)?[ \t]{{0,3}}\*\*|\(({up})\)")
    return value, last_line, bold_or_paren


def _letter(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g).upper()


def _letter_start(match: re.Match[str]) -> int:
    """Where the letter itself is in a match (a pattern may match text around it)."""
    return match.start(next(i for i, g in enumerate(match.groups(), 1) if g))


class MultipleChoiceTool(AnswerVerifier):
    """Scores 1.0 when the completion's answer letter is the reference letter, else 0.0."""

    def __init__(self, spec: ToolSpec, *, letters: str | Sequence[str] = DEFAULT_LETTERS) -> None:
        super().__init__(spec)
        self.letters = _check_letters(letters)
        self._values, self._last_line, self._bold_or_paren = _patterns(self.letters)
        # an option as a prompt lists it: "(B) Nitrogen"
        self._listed = re.compile(rf"[(\[]([{self.letters}])[)\]][ \t]{{1,3}}\w")
        # Bounded repetitions: references come from files, and a whitespace-heavy one must
        # not cost polynomial time (the reference is stripped first).
        self._reference_re = re.compile(
            rf"[\(\[]?[ \t]{{0,3}}([{self.letters}])[ \t]{{0,3}}[\)\]]?[ \t]{{0,3}}[.:]?"
            rf"|(?:[\(\[][ \t]{{0,3}}([{self.letters}])[ \t]{{0,3}}[\)\]]"
            rf"|([{self.letters}])[ \t]{{0,3}}[\)\].:])\s.*",
            re.IGNORECASE | re.DOTALL,
        )

    def parse_reference(self, reference: str) -> str:
        """The reference letter, upper case: from "B", "(B)", "B) some text" or "b"."""
        match = self._reference_re.fullmatch(reference.strip())
        if match is None:
            raise InvalidReferenceError(
                f"reference {reference[:80]!r} is not a choice letter; expected one of "
                f"{', '.join(self.letters)}, as 'B', '(B)' or 'B) option text'"
            )
        return _letter(match)

    def extract(self, completion: str) -> str | Hedged | None:
        text = clean(completion[-ANSWER_TAIL_CHARS:])
        values = [
            (_letter_start(m), _letter_start(m) + 1, _letter(m))
            for m in self._values.finditer(text)
        ]
        spans = [(a, b) for a, b, _ in values]
        starts = [a for a, _, _ in values]
        found: list[str] = []
        for _, start, end, _ in marked_answers(text, _OPTION_PHRASE):
            found += [values[i][2] for i in first_offered(text, spans, starts, start, end)]
        if not found:
            found = self._unmarked(text, values, spans)
        letters = list(dict.fromkeys(found))
        if len(letters) > 1:
            return Hedged(tuple(letters))
        return letters[0] if letters else None

    def _unmarked(
        self, text: str, values: list[tuple[int, int, str]], spans: list[tuple[int, int]]
    ) -> list[str]:
        """The letters of unmarked text, by the cascade of the module docstring, with those
        offered together with it ("(A) or (B)", one letter per line)."""
        body = text.rstrip()
        fenced = last_fenced(body)
        if fenced is not None:  # a fenced block ends the completion: its last line
            body = body[: fenced[1]].rstrip()
        if len({m.group(1) for m in self._listed.finditer(body)}) >= OPTION_LISTING:
            body = body[:0]  # the options listed (an echo of the prompt): no unmarked answer
        line_start = body.rfind("\n") + 1
        anchors = []
        line = self._last_line.match(body, line_start)
        if line is not None:
            anchors.append(_letter_start(line))
        bold = [_letter_start(m) for m in self._bold_or_paren.finditer(body)]
        anchors += bold[-1:]
        tail = body.rstrip(" \t.!)]")
        if tail and tail[-1] in self.letters and not _word_char(tail[-2:-1]):
            anchors.append(len(tail) - 1)
        starts = [a for a, _, _ in values]
        for at in anchors:
            i = bisect.bisect_left(starts, at)
            if i < len(values) and values[i][0] == at:
                run = value_run(text, spans, i, False, False)
                run += value_run(text, spans, i, True, False)
                return [values[k][2] for k in sorted(set(run))]
        return []

    def compare(self, answer: str, reference: str) -> Verdict:
        if answer == reference:
            return Verdict(1.0, reason=f"answer {answer} is the reference letter")
        return Verdict(0.0, reason=f"answer {answer} differs from the reference {reference}")


def _word_char(ch: str) -> bool:
    return bool(ch) and (ch.isalnum() or ch in "'’")


def _check_letters(letters: str | Sequence[str]) -> str:
    """The alphabet as an upper-case string; ConfigError when it is not distinct A-Z letters."""
    # a str is itself a Sequence of one-character strings
    if not isinstance(letters, Sequence) or not all(isinstance(x, str) for x in letters):
        raise ConfigError(
            f"letters must be a string like 'ABCD' or a list of letters, got {letters!r}"
        )
    items = [x.strip().upper() for x in letters]
    if not items or any(len(x) != 1 or x not in string.ascii_uppercase for x in items):
        raise ConfigError(f"letters must be single letters A-Z, like 'ABCD'; got {letters!r}")
    if len(set(items)) != len(items):
        raise ConfigError(f"letters must not repeat; got {letters!r}")
    return "".join(items)
