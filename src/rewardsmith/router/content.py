"""What a sample's *content* says about its task, where surface markers (`\\boxed`,
`####`, "Translate") are absent or misleading (options and labels: `router.options`;
languages: `router.language`).

- `rg_entry_readable(reference)`: does reasoning-gym's own reference parser accept it (an
  entry with `metadata.source_dataset` naming a registered dataset and a string answer)?
  `{"answer": "Paris"}` is JSON but no dataset entry.
- `math_notation(text)`: how much of a prompt is mathematics (equations, exponents,
  functions, LaTeX, symbols; integers, primes, polynomials, triangles) rather than an
  everyday narrative with quantities.
- `word_problem(text)`: how much of a prompt is an everyday story with quantities (money,
  time, things bought and shared, people's names): the grade-school word problem.
- `completion_fit(fmt, completion, ...)`: does a completion answer the way the tools of a
  reference format expect (a final number, a math expression, an option letter, text in the
  reference's language)? It is averaged over a prompt's completions (see router.py), so one
  completion cannot swing a decision.

Pure functions on clipped text; results of the costly ones are cached by text.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from rewardsmith.router.language import (
    LANGUAGE_CHARS,
    detect_language,
    length_fit,
    same_language,
    text_units,
)

# Mathematical notation: an operator between terms, exponents, function application,
# a coefficient on a variable, a LaTeX command, a math symbol, an inequality.
_MATH = re.compile(
    r"[\w)]\s*+[\^=<>≤≥≠]\s*+[-\w(\\]"
    r"|\b[a-z]\s*+[-+*/]\s*+[\da-z]\b(?!['’])"
    r"|\b[a-zA-Z]\s*+\(\s*+[a-z\d]\s*+\)"
    r"|(?<![\w.])\d++[a-z]\b(?!['’])"
    r"|\\[a-zA-Z]++"
    r"|[√π∑∏∫≤≥≠∞±·×÷°]"
    r"|[\d)]\s*+[*/]\s*+[\d(a-z]|\)\s*+[-+]\s*+[\w(]"
    r"|\b(?:sqrt|log|ln|sin|cos|tan|mod|gcd|lcm|pi)\b"
)
# Objects of mathematics rather than of everyday life: a word problem about apples and
# money uses none of them, a competition problem several.
_MATH_WORDS = re.compile(
    r"\b(?:integers?|primes?|divisors?|divisible|polynomials?|digits?|remainders?|probability|"
    r"triangles?|circles?|radius|diameter|circumference|hypotenuse|equations?|functions?|"
    r"sequence|real numbers?|coordinates?|vertices|vertex|angles?|matrix|matrices|vectors?|"
    r"logarithms?|parabola|hyperbola|ellipse|quadratic|exponents?|modulo|congruent|"
    r"inequalit(?:y|ies)|slope|intercept|simplify|simplest|evaluate|expression|"
    r"common fraction|radical|factorial|permutations?|combinations?|geometric|arithmetic "
    r"(?:sequence|series|mean)|roots?|solutions?|domain|asymptotes?|trapezoid|"
    r"parallelogram|rectangle|squares?|cubes?|spheres?|cylinders?|cones?|ordered pairs?|"
    r"how many (?:different |distinct )?ways|arrangements?|distinct|consecutive|multiples?|"
    r"(?:inversely|directly) proportional|units digit|in base \d+)\b",
    re.IGNORECASE,
)
# Quantities of everyday life (money, time, distance, things people buy and count) and the
# verbs of buying, selling and sharing: the stuff of grade-school word problems.
_EVERYDAY = re.compile(
    r"\$\s?\d|\b(?<![\d,.])\d[\d,.]*+\s*+(?:dollars?|cents?|hours?|minutes?|seconds?|days?|"
    r"weeks?|months?|years?|miles?|km|kilometers?|meters?|feet|foot|inches|pounds?|kg|"
    r"kilograms?|grams?|liters?|gallons?|cups?|pieces?|pages?|people|students?|apples?|boxes|"
    r"bags?|cookies|eggs|books?|cars?|times)\b|\b(?:each|per|total|altogether|left|spent|earns?|pays?|"
    r"bought|sold|buys?|sells?|costs?|saves?|profit|price|money|weekly|daily|monthly)\b",
    re.IGNORECASE,
)
# A capitalized word after a lower-case word or comma: mostly people's names in a story.
_NAME = re.compile(r"(?<=[a-z,] )[A-Z][a-z]{2,}\b")
# What the patterns anchored at `\Z` read (from every start, a long tail costs its square).
END_CHARS = 80
_NUMBER_END = re.compile(r"[-+]?\$?\d[\d,]*+(?:\.\d++)?\s*+(?:%|[a-zA-Z]{1,10})?\W{0,3}\Z")
_ANSWER_NUMBER = re.compile(r"(?i:answer|result|total)\D{0,20}[-+]?\$?\d")
_MATH_ANSWER = re.compile(r"\\boxed|\$[^$\n]++\$|\\\(|\\frac|\\sqrt|(?i:answer\s*+(?:is|:))\s*+\S")
_LETTER_ANSWER = re.compile(
    r"(?i:answer|option|choice)\s*+(?:is)?\s*+[:\-]?\s*+\(?[A-Ja-j]\)?(?![\w'])"
)
_LETTER_END = re.compile(r"\([A-Ja-j]\)\s*+\W{0,3}\Z|(?<![\w'])[A-J]\s*+[.)]?\Z")
_CODE = re.compile(r"```|\bdef\s++\w++\s*+\(|\breturn\b|\bimport\s++\w")
_TAGS = re.compile(r"</?[a-zA-Z_][\w-]{0,20}>")


# -- JSON references ----------------------------------------------------------------------


@lru_cache(maxsize=4_096)
def rg_entry_readable(reference: str) -> bool:
    """Does reasoning-gym's scorer read this reference (the `reasoning_gym` tool's own
    parser accepts it: a registered `source_dataset`, a string answer)?"""
    try:
        data = json.loads(reference)
    except ValueError:
        return False
    if not isinstance(data, dict) or not ("metadata" in data or "entry" in data):
        return False  # nothing could name the dataset: skip importing reasoning-gym
    from rewardsmith.errors import InvalidReferenceError
    from rewardsmith.tools.reasoning_gym import parse_rg_reference

    try:
        parse_rg_reference(reference)
    except InvalidReferenceError:
        return False
    return True


# -- prompt and completion content --------------------------------------------------------


def math_notation(text: str) -> float:
    """0..1: mathematics in the text, as notation (equations, exponents, functions, LaTeX,
    symbols) or as its objects (integers, primes, polynomials, triangles...): three or more
    spots count fully."""
    text = text[:3000]
    return min(1.0, (len(_MATH.findall(text)) + len(_MATH_WORDS.findall(text))) / 3.0)


def word_problem(text: str) -> float:
    """0..1: an everyday story with quantities (money, time, things bought and shared,
    people's names): four or more spots count fully."""
    text = text[:3000]
    return min(1.0, (len(_EVERYDAY.findall(text)) + len(_NAME.findall(text))) / 4.0)


def completion_fit(
    fmt: str, completion: str, reference_language: str = "", source_units: float = 0.0
) -> float:
    """0..1: does the completion answer in the form a reference of format `fmt` is graded
    in? (number: ends in or states a number; latex: a math expression; choice: an option
    letter; free_text with a known language: text in that language of about the source's
    length; json_entry: <answer> tags; unit_tests: code.)"""
    # answers often sit in tags (<solution>36</solution>): read the text, not the markup
    tail = _TAGS.sub(" ", completion[-600:])
    if not tail.strip():
        return 0.0
    end = tail.rstrip()[-END_CHARS:]
    if fmt == "number":
        return 1.0 if _NUMBER_END.search(end) or _ANSWER_NUMBER.search(tail) else 0.0
    if fmt == "latex":
        return 1.0 if _MATH_ANSWER.search(tail) or math_notation(tail) >= 0.67 else 0.0
    if fmt == "choice":
        return 1.0 if _LETTER_ANSWER.search(tail) or _LETTER_END.search(end) else 0.0
    if fmt == "json_entry":  # `<answer>.*?</answer>`, in one pass
        at = completion[-600:].find("<answer>")
        return 1.0 if at >= 0 and "</answer>" in completion[-600:][at:] else 0.0
    if fmt == "unit_tests":
        return 1.0 if _CODE.search(completion[:4000]) else 0.0
    if fmt == "free_text" and reference_language:
        lang, _ = detect_language(completion[:LANGUAGE_CHARS])
        if not lang or not same_language(lang, reference_language):
            return 0.0
        if source_units <= 0:
            return 0.5
        return length_fit(text_units(completion[:LANGUAGE_CHARS]) / source_units)
    return 0.0
