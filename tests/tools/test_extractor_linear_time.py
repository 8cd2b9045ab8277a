"""Every answer extractor of the built-in tools stays linear-time on hostile text.

A completion is untrusted: one ordinary-looking 4,000-character completion once cost the
multiple-choice extractor 17 minutes of regex backtracking (cubic), and a 1 KB one held
`score` for 18 s. Each extractor here is fed long adversarial strings of every family below
at n and 4n characters, and the growth of its CPU time (this thread's, so a busy machine
does not count) must stay linear: a ratio near 4, far below the 16 of quadratic or the 64
of cubic work. No wall clock decides anything.

math-verify's own parser (the `math` tool's `parse`/`verify`) is a library with super-linear
corners of its own; it is bounded by the tool's deadline and worker processes
(`tests/tools/test_math.py`), not here. What the `math` tool reads itself (`read_math`) is.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from rewardsmith.answers import alternatives, marked_answers, read_answers
from rewardsmith.tools.choice import MultipleChoiceTool
from rewardsmith.tools.code.suite import extract_code
from rewardsmith.tools.format import FormatTagsTool, ThinkFormatTool
from rewardsmith.tools.gsm8k import GSM8KTool, extract_number
from rewardsmith.tools.math_answers import read_math
from rewardsmith.tools.reasoning_gym import answer_texts
from rewardsmith.tools.reference_shape import foreign_reference
from rewardsmith.tools.translation import strip_label
from rewardsmith.types import ToolSpec

# Linear work grows 4x from n to 4n; quadratic 16x. Between them, with room for noise.
MAX_GROWTH = 8.0
# Each timing is at least this long (the call is repeated), and the best of REPEATS.
MIN_SECONDS = 0.004
REPEATS = 3

# Hostile text families, each a function of its length: what backtracking feeds on
# (whitespace runs after a phrase, unclosed openers, comma-digit runs, alternation chains,
# nesting, markers by the thousand, invisible characters).
FAMILIES: dict[str, Callable[[int], str]] = {
    "spaces after a phrase": lambda n: "answer" + " " * n + "x",
    "spaces around a colon": lambda n: "answer is" + " " * (n // 2) + ":" + " " * (n // 2),
    "unclosed answer tags": lambda n: "<answer>" * (n // 8),
    "unclosed boxes": lambda n: "\\boxed{" * (n // 7),
    "hash markers": lambda n: "####" * (n // 4),
    "fences": lambda n: "```" * (n // 3),
    "open braces": lambda n: "{" * n,
    "open parentheses": lambda n: "(" * n + "72",
    "dollars": lambda n: "$" * n,
    "thousands that never close": lambda n: "1,111" * (n // 5) + "1",
    "comma runs": lambda n: "1," * (n // 2),
    "an endless or": lambda n: "72 or " * (n // 6),
    "a letter list": lambda n: "B, " * (n // 3),
    "parenthesized letters": lambda n: "(A) " * (n // 4),
    "repeated answers": lambda n: "The answer is 72. " * (n // 18),
    "answer lines": lambda n: "Answer: B\n" * (n // 10),
    "negations": lambda n: "not " * (n // 4) + "72",
    "blank lines": lambda n: "\n" * n + "x",
    "one long word": lambda n: "a" * n + " translation:",
    "zero-width characters": lambda n: "\u200b" * n + "72",
    "the word answer": lambda n: "answer" * (n // 6),
    "pronouns": lambda n: "I " * (n // 2),
    "a def line": lambda n: "def f(" + ")" * n,
    "stars then spaces": lambda n: "*" * (n // 2) + " " * (n // 2) + "x",
    "a phrase then newlines": lambda n: "Final answer:" + "\n" * n,
    "display openers": lambda n: "The answer is:\n" + "\\[\n" * (n // 3),
    "retractions": lambda n: "Answer: 1 wait " * (n // 15),
    "slashes": lambda n: "1/" * (n // 2),
    "groups over slashes": lambda n: "(1, 2)/" * (n // 7),
    "words over slashes": lambda n: "(" * (n // 2) + "a/b" * (n // 6),
    "bullets": lambda n: "- " * (n // 2) + "1",
}


def _quietly(fn: Callable[[str], object]) -> Callable[[str], object]:
    """Reference parsers raise on junk; only their time matters here."""

    def call(text: str) -> object:
        try:
            return fn(text)
        except Exception:
            return None

    return call


def _tools() -> dict[str, tuple[Callable[[str], object], int]]:
    """Every extractor, with the length n it is measured at (below any clipping of its own:
    the choice tool reads only the last 4,000 characters)."""
    choice = MultipleChoiceTool(ToolSpec(name="multiple_choice"))
    gsm8k = GSM8KTool(ToolSpec(name="gsm8k"))
    tags = FormatTagsTool(ToolSpec(name="format_tags"))
    think = ThinkFormatTool(ToolSpec(name="think_format"))
    return {
        "answers.read_answers": (read_answers, 4000),
        "answers.marked_answers": (marked_answers, 4000),
        "answers.alternatives": (alternatives, 4000),
        "gsm8k.extract": (extract_number, 4000),
        "gsm8k.parse_reference": (_quietly(gsm8k.parse_reference), 4000),
        "multiple_choice.extract": (choice.extract, 1000),
        "multiple_choice.parse_reference": (_quietly(choice.parse_reference), 4000),
        "math.read_math": (read_math, 4000),
        "reasoning_gym.answer_texts": (answer_texts, 4000),
        "translation.strip_label": (strip_label, 4000),
        "reference_shape.foreign_reference": (foreign_reference, 4000),
        "code.extract_code": (extract_code, 4000),
        "format_tags.compare": (lambda t: tags.compare(t, None), 4000),
        "think_format.compare": (lambda t: think.compare(t, None), 4000),
    }


TOOLS = _tools()


def _cpu_seconds(fn: Callable[[str], object], text: str, calls: int) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.thread_time()
        for _ in range(calls):
            fn(text)
        best = min(best, time.thread_time() - start)
    return best


def growth(fn: Callable[[str], object], make: Callable[[int], str], n: int) -> float:
    """CPU time on `make(4n)` over CPU time on `make(n)`."""
    small, big = make(n), make(4 * n)
    calls = 1
    while _cpu_seconds(fn, small, calls) < MIN_SECONDS and calls < 1 << 16:
        calls *= 2
    return _cpu_seconds(fn, big, calls) / max(_cpu_seconds(fn, small, calls), 1e-9)


@pytest.mark.parametrize("name", list(TOOLS))
def test_extractor_time_grows_linearly_on_every_hostile_family(name: str) -> None:
    fn, n = TOOLS[name]
    slow = {}
    for family, make in FAMILIES.items():
        ratio = growth(fn, make, n)
        if ratio > MAX_GROWTH:
            ratio = min(ratio, growth(fn, make, n))  # a second look: a noisy neighbour
        if ratio > MAX_GROWTH:
            slow[family] = round(ratio, 1)
    assert slow == {}, f"{name}: time grows faster than linear on {slow}"


def test_the_growth_measure_tells_quadratic_from_linear() -> None:
    # the yardstick itself: a scan is linear, rescanning every prefix is quadratic
    def rescan(text: str) -> int:
        return sum(text[:i].count("a") for i in range(0, len(text), 8))

    assert growth(lambda t: t.count("x"), lambda n: "a" * n, 4000) < MAX_GROWTH
    assert growth(rescan, lambda n: "a" * n, 2000) > MAX_GROWTH
