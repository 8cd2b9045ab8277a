"""The options a prompt lists and the label a reference names.

- `parse_options(prompt)`: the options a prompt lists, in any of the usual label styles
  (`A.`/`(A)`/`A)`, `(a)`/`a)`, `(1)`/`1.`, `(i)`/`ii)`);
- `reference_label(reference)`: the label a reference names ("B", "(b)", "3", "iv",
  "Option C", "B) Paris").

A letter among the listed options is a multiple-choice answer; a number or roman numeral
among them is an option *index*, which the built-in choice tool (letters only) cannot read.
Pure functions on clipped text; every pattern is linear in the text it reads
(tests/test_linear_time.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_ROMAN = ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x")
# Option label styles and their label sequences, in the order they are tried.
OPTION_STYLES: Mapping[str, tuple[str, ...]] = {
    "upper": tuple("ABCDEFGHIJ"),
    "lower": tuple("abcdefghij"),
    "digit": tuple(str(i) for i in range(1, 11)),
    "roman": _ROMAN,
    "ROMAN": tuple(r.upper() for r in _ROMAN),
}
# A label token: "(A)", "[b]", "1)", "iv.", "C:" after a line start, a space or markdown,
# optionally after "Option"/"Choice". Initials ("A. Smith") and ordinals also match one at a
# time; `parse_options` keeps only runs of consecutive labels, which prose does not make.
_LABEL_TOKEN = re.compile(
    r"(?:^|(?<=[\s*>\-]))(?:(?i:option|choice)\s+)?"
    r"(?:[\(\[](?P<paren>[A-Za-z]{1,4}|\d{1,2})[\)\]]"
    r"|(?P<close>[A-Za-z]{1,4}|\d{1,2})[):.])"
    r"(?=[ \t]++\S)",
    re.MULTILINE,
)
# A reference that names one label: "B", "(b)", "[3]", "iv.", "Option C", "B) Paris" (`\A`:
# for `fullmatch`, and a `search` does not rescan a run of spaces from each one).
_REFERENCE_LABEL = re.compile(
    r"\A(?i:(?:the\s++)?(?:answer|option|choice)(?:\s++is)?\s*+[:\-]?\s*+)?(?:\*\*)?"
    r"(?:[\(\[]?\s*+(?P<bare>[A-Za-z]{1,4}|\d{1,2})\s*+[\)\]]?(?:\*\*)?\s*+[.:]?"
    r"|(?:[\(\[](?P<paren>[A-Za-z]{1,4}|\d{1,2})[\)\]]|(?P<delim>[A-Za-z]{1,4}|\d{1,2})[).:])"
    r"(?:\*\*)?\s++\S.{0,200})",
    re.DOTALL,
)
_LETTER_LABELS = frozenset(OPTION_STYLES["upper"]) | frozenset(OPTION_STYLES["lower"])


@dataclass(frozen=True)
class Options:
    """The option lists a prompt shows: per label style, the run of consecutive labels found
    (a pair of answers with numbered lists inside shows both A-B and 1-4)."""

    runs: Mapping[str, tuple[str, ...]]

    @property
    def style(self) -> str:
        """The style of the longest run (ties: in `OPTION_STYLES` order)."""
        order = list(OPTION_STYLES)
        return max(self.runs, key=lambda k: (len(self.runs[k]), -order.index(k)))

    @property
    def labels(self) -> tuple[str, ...]:
        return self.runs[self.style]

    @property
    def letters(self) -> bool:
        """The main list is lettered (A-J, a-j): what the built-in choice tool reads."""
        return self.style in ("upper", "lower")

    def names(self, label: str) -> bool:
        """Is `label` a listed option (a letter of a lettered list, or a number or roman
        numeral of a numbered one)?"""
        return self.names_letter(label) or self.names_index(label)

    def names_letter(self, label: str) -> bool:
        """Is `label` a letter of a lettered list? Either case matches (the choice tool
        reads "b" as B)."""
        lettered = {x.upper() for k in ("upper", "lower") for x in self.runs.get(k, ())}
        return label.upper() in lettered

    def names_index(self, label: str) -> bool:
        """Is `label` a number or roman numeral of a numbered list?"""
        numbered = {x.lower() for k in ("digit", "roman", "ROMAN") for x in self.runs.get(k, ())}
        return label.lower() in numbered


def parse_options(prompt: str) -> Options | None:
    """Every run of at least two consecutive labels (A, B, C... or 1, 2, 3... or i, ii,
    iii...) the prompt lists, by style; None when it lists none."""
    tokens = [next(g for g in m.groups() if g) for m in _LABEL_TOKEN.finditer(prompt)]
    if len(tokens) < 2:
        return None
    runs: dict[str, tuple[str, ...]] = {}
    for style, sequence in OPTION_STYLES.items():
        found = 0
        for token in tokens:
            if found < len(sequence) and token == sequence[found]:
                found += 1
        if found >= 2:
            runs[style] = sequence[:found]
    return Options(runs) if runs else None


def reference_label(reference: str | None) -> str | None:
    """The option label a reference names ("B", "(b)", "3", "iv", "Option C", "B) Paris"),
    or None when it is not one."""
    if not reference:
        return None
    m = _REFERENCE_LABEL.fullmatch(reference.strip()[:220])
    if m is None:
        return None
    label = next(g for g in m.group("bare", "paren", "delim") if g)
    if label.isdigit() or label in _LETTER_LABELS or label.lower() in _ROMAN:
        # "B) Paris" names B; but "Paris" alone is a word, not a label
        return label
    return None


def label_in_options(label: str, options: Options) -> bool:
    """Is `label` one of the listed options (see `Options.names`)?"""
    return options.names(label)
