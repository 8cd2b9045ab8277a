"""Multiple choice: the answer letter of a completion against the reference letter.

Rule followed: the answer-extraction cascade of the common MCQ evaluators (MMLU-Pro's
`extract_answer`: "answer is (X)", then "Answer: X", then a last standalone letter; lm-eval
harness's `multiple_choice` regex filters), made stricter about the article "A": a letter
counts only when something anchors it as an answer. In order, the last match of:

1. `\\boxed{B}` (also `\\boxed{(B)}`, `\\boxed{\\text{B}}`);
2. an answer phrase: "the answer is (B)", "Answer: B", "correct option: **B**";
3. the last non-empty line when it is just the letter ("B", "(B)", "**B**", "B.") or starts
   with the letter and its option text ("B) Paris", "(B) Paris", "B. Paris");
4. a bold or parenthesized letter anywhere: "**B**", "(B)";
5. a standalone capital letter that ends the completion: "... so I pick C."

Lower-case letters count only where nothing else can be meant ("(b)", "Answer: b" alone on
its line). The reference may be "B", "(B)", "B) some text", "B. some text" or "b".
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.tools.base import AnswerVerifier, Verdict
from rewardsmith.types import ToolSpec

DEFAULT_LETTERS = "ABCDEFGHIJ"  # MMLU-Pro has ten options, A-J; MMLU and GPQA use A-D
# Only the end of a completion holds its final answer; the cascade runs on this tail, which
# also keeps regexes with several alternatives fast on long completions.
ANSWER_TAIL_CHARS = 4_000


def _patterns(letters: str) -> list[re.Pattern[str]]:
    """The extraction cascade for an alphabet of upper-case letters, strongest first."""
    up = f"[{letters}]"
    lo = f"[{letters.lower()}]"
    either = f"[{letters}{letters.lower()}]"
    phrase = (
        r"(?i:\b(?:answer|option|choice)\b(?:\s+(?:is|would\s+be|will\s+be|should\s+be))?)"
        r"\s*[:：]?\s*"
    )
    return [
        # 1. \boxed{B}, \boxed{(B)}, \boxed{\text{B}}, \boxed{\textbf{b}}
        re.compile(rf"\\boxed\{{\s*(?:\\text(?:bf)?\{{)?\s*\(?({either})\)?\s*\}}?\s*\}}"),
        # 2. "answer is (B)", "Answer: **B**", "option B)" - anchored by the phrase; a bare
        #    lower-case letter only in parentheses or alone before the line end; "I" followed
        #    by a lower-case word is the pronoun ("Answer: I think it is B").
        re.compile(
            rf"{phrase}(?:\*\*|__)?\s*[\(\[]?({up})(?![\w'’])(?!(?<=I)\s+[a-z])"
            rf"|{phrase}(?:\*\*|__)?\s*[\(\[]({lo})[\)\]]"
            rf"|{phrase}(?:\*\*|__)?\s*({lo})(?:\*\*|__)?\s*\.?\s*$",
            re.MULTILINE,
        ),
        # 3. the last line is the letter, or the letter with its option text: "B) Paris"
        re.compile(
            rf"\A\s*(?:\*\*|__)?[\(\[]?({up})[\)\]]?(?:\*\*|__)?\s*[.:]?\s*\Z"
            rf"|\A\s*(?:\*\*|__)?(?:[\(\[]({up})[\)\]]|({up})[\)\].:])\s"
        ),
        # 4. a bold or parenthesized letter anywhere
        re.compile(rf"\*\*\s*\(?({up})\)?\s*\*\*|\(({up})\)"),
        # 5. a standalone capital letter that ends the completion
        re.compile(rf"(?<![\w'’])({up})\s*[.!)\]]*\s*\Z"),
    ]


def _letter(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g).upper()


class MultipleChoiceTool(AnswerVerifier):
    """Scores 1.0 when the completion's answer letter is the reference letter, else 0.0."""

    def __init__(self, spec: ToolSpec, *, letters: str | Sequence[str] = DEFAULT_LETTERS) -> None:
        super().__init__(spec)
        self.letters = _check_letters(letters)
        self._patterns = _patterns(self.letters)
        self._reference_re = re.compile(
            rf"\s*[\(\[]?\s*([{self.letters}])\s*[\)\]]?\s*[.:]?\s*"
            rf"|\s*(?:[\(\[]\s*([{self.letters}])\s*[\)\]]|([{self.letters}])\s*[\)\].:])\s.*",
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

    def extract(self, completion: str) -> str | None:
        text = completion[-ANSWER_TAIL_CHARS:]
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            return None
        for i, pattern in enumerate(self._patterns):
            # the last-line pattern (index 2) looks at the last non-empty line only
            target = lines[-1] if i == 2 else text
            matches = list(pattern.finditer(target))
            if matches:
                return _letter(matches[-1])
        return None

    def compare(self, answer: str, reference: str) -> Verdict:
        if answer == reference:
            return Verdict(1.0, reason=f"answer {answer} is the reference letter")
        return Verdict(0.0, reason=f"answer {answer} differs from the reference {reference}")


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
