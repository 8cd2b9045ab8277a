"""Text a policy or a dataset wrote costs time linear in its length, outside the tools too:
every regex of the router's features and content checks, the GRPO answer parser, the search
pool and report, the reward-model pair builders and the LLM answer readers. (The built-in
tools' extractors are checked in tests/tools.)

Timing is judged by growth, never by a wall clock: the time for 4n characters over the time
for n. Linear code gives about 4, a backtracking regex that rescans a run from each of its
characters 16 or more. A case cheap at 4n (`CHEAP_S_PER_CHAR`) cannot hide a square and
passes unmeasured.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from types import ModuleType

import pytest

from rewardsmith import plaintext
from rewardsmith.rl import answers
from rewardsmith.rm import corpora, data, pairsets
from rewardsmith.router import content, features, language, options
from rewardsmith.search import generator, llm_generator, loop, response_pool, results
from rewardsmith.synth import codeverify_llm, session
from rewardsmith.types import Sample

# Past ~8,000 characters: the regex engine's cost per character steps up (2-3x) somewhere
# below that on some large patterns, then stays flat; measured across the step it would
# look superlinear.
N = 8_000
# Linear is 4; n log n about 4.6; a square 16.
MAX_RATIO = 10.0
# Seconds per character at 4n below which a case passes unmeasured: rescanning a run of 4n
# characters from each of its characters costs 50-200 times this; the slowest linear
# pattern here (a long case-blind alternation tried at every position) costs a fifth of it.
CHEAP_S_PER_CHAR = 10e-6

# The modules whose regexes read completions, prompts, references, model answers or strings
# from run folders.
MODULES: tuple[ModuleType, ...] = (
    features,
    content,
    options,
    language,
    answers,
    response_pool,
    pairsets,
    data,
    corpora,
    loop,
    llm_generator,
    codeverify_llm,
    plaintext,  # what the terminal and report pages show of data
    results,
    generator,
    session,
)

# Repeated units that make backtracking patterns rescan: runs of space, digits, separators,
# labels, openers without a closer, words a pattern anchors on.
UNITS = (
    " ",
    "\t ",
    "\n",
    "\n \n",
    "1",
    "1,",
    "1.",
    "1 ",
    "a",
    "ab ",
    "A ",
    "A) ",
    "(A) ",
    "$",
    "$1 ",
    "\\",
    "\\frac",
    "answer ",
    "answer is ",
    "<answer>",
    "<solution>",
    "<think>",
    "####",
    "#### 1\n",
    "x=",
    "1+1",
    "<<1=",
    "Human: ",
    "\nEnglish (",
    "def f",
    "assert ",
    "Option ",
    '"""\n',
    "```python\n",
    "1.1.",
    "- ",
)


def _seconds(fn: Callable[[str], object], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def _ratio(fn: Callable[[str], object], unit: str, n: int) -> float:
    small = unit * (n // len(unit) + 1)
    large = unit * (4 * n // len(unit) + 1)
    return _seconds(fn, large, 3) / max(_seconds(fn, small, 5), 1e-6)


def growth(
    fn: Callable[[str], object], unit: str, n: int = N, cheap: float = CHEAP_S_PER_CHAR
) -> float:
    """Time on `unit` repeated to 4n characters over time on n characters (1.0 when fast).

    A square shows at every scale, a one-off step in the cost per character (see `N`) at one:
    the ratio counts as its smaller value at n and at 2n, each measured again when high (a
    busy machine)."""
    large = unit * (4 * n // len(unit) + 1)
    if _seconds(fn, large, 1) < cheap * len(large):
        return 1.0
    ratios = []
    for scale in (n, 2 * n):
        ratio = _ratio(fn, unit, scale)
        if ratio > MAX_RATIO:
            ratio = min(ratio, _ratio(fn, unit, scale))
        ratios.append(ratio)
    return min(ratios)


def _patterns(module: ModuleType) -> dict[str, re.Pattern[str]]:
    """Every compiled pattern a module keeps at module level (alone, in a dict or a tuple)."""
    found: dict[str, re.Pattern[str]] = {}
    for name, value in vars(module).items():
        items: list[tuple[str, object]] = [(name, value)]
        if isinstance(value, dict):
            items = [(f"{name}[{k}]", v) for k, v in value.items()]
        elif isinstance(value, tuple):
            items = [
                (f"{name}[{i}]", v[0] if isinstance(v, tuple) and v else v)
                for i, v in enumerate(value)
            ]
        for label, item in items:
            if isinstance(item, re.Pattern) and isinstance(item.pattern, str):
                found[f"{module.__name__}.{label}"] = item
    return found


PATTERNS = {k: v for m in MODULES for k, v in _patterns(m).items()}


def test_the_sweep_finds_the_patterns() -> None:
    # the introspection is what keeps new patterns covered: it must see the known ones
    assert "rewardsmith.router.features._CHOICE" in PATTERNS
    assert "rewardsmith.router.features._MARKERS[translate]" in PATTERNS
    assert "rewardsmith.router.content._LETTER_ANSWER" in PATTERNS
    assert len(PATTERNS) >= 30


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_is_linear_in_every_use(name: str) -> None:
    rx = PATTERNS[name]
    slow = []
    for unit in UNITS:
        for use in (rx.findall, rx.search, rx.fullmatch):
            ratio = growth(use, unit)
            if ratio > MAX_RATIO:
                slow.append(f"{use.__name__} on {unit!r}: x{ratio:.1f}")
    assert slow == []


# The functions the router runs on every sample, with their own clipping: n and 4n both
# under the clip (`MAX_FEATURE_CHARS`), so the growth measured is the parsing's own; at
# that length a square is cheaper per character, so fewer cases pass unmeasured.
FEATURE_N = 900
FEATURE_CHEAP = 0.5e-6
ROUTER_FUNCTIONS: dict[str, Callable[[str], object]] = {
    "reference_format": features.reference_format,
    "markers": features.markers,
    "parse_options": options.parse_options,
    "reference_label": options.reference_label,
    "math_notation": content.math_notation,
    "word_problem": content.word_problem,
    "completion_fit(number)": lambda t: content.completion_fit("number", t),
    "completion_fit(latex)": lambda t: content.completion_fit("latex", t),
    "completion_fit(choice)": lambda t: content.completion_fit("choice", t),
    "completion_fit(json_entry)": lambda t: content.completion_fit("json_entry", t),
    "completion_fit(unit_tests)": lambda t: content.completion_fit("unit_tests", t),
    "sample_features(completion)": lambda t: features.sample_features(Sample(t, "Q?", "3")),
    "sample_features(prompt)": lambda t: features.sample_features(Sample("3", t, "3")),
    "sample_features(reference)": lambda t: features.sample_features(Sample("3", "Q?", t)),
}


@pytest.mark.parametrize("name", sorted(ROUTER_FUNCTIONS))
def test_router_features_are_linear_on_crafted_text(name: str) -> None:
    fn = ROUTER_FUNCTIONS[name]
    ratios = {u: growth(fn, u, FEATURE_N, FEATURE_CHEAP) for u in UNITS}
    slow = [f"{u!r}: x{r:.1f}" for u, r in ratios.items() if r > MAX_RATIO]
    assert slow == []


# Parsers outside the router that read completions, dataset text or model answers.
OTHER_FUNCTIONS: dict[str, Callable[[str], object]] = {
    "rl.answers.extract_answer": answers.extract_answer,
    "rl.answers.solution_blocks": answers.solution_blocks,
    "search.loop.doc_line": loop.doc_line,
    "search.response_pool._first_block": lambda t: response_pool._first_block(t, "think"),
    "rm.pairsets.gsm8k_wrong": lambda t: pairsets.gsm8k_wrong(
        t, "final", __import__("random").Random(0)
    ),
    "rm.pairsets.testbed_wrong": lambda t: pairsets.testbed_wrong(
        t, "final", __import__("random").Random(0)
    ),
    "rm.data._ends_sentence": lambda t: [data._ends_sentence(t, i) for i in range(0, len(t), 97)],
    "synth.codeverify_llm.extract_code": codeverify_llm.extract_code,
}


@pytest.mark.parametrize("name", sorted(OTHER_FUNCTIONS))
def test_other_text_parsers_are_linear_on_crafted_text(name: str) -> None:
    fn = OTHER_FUNCTIONS[name]
    ratios = {u: growth(fn, u, N, FEATURE_CHEAP) for u in UNITS}
    slow = [f"{u!r}: x{r:.1f}" for u, r in ratios.items() if r > MAX_RATIO]
    assert slow == []


# The rewrites read the same as the patterns they replace.
SAME_AS_REGEX = [
    # (text, what `<solution>(.*?)</solution>` finds)
    ("<solution>3</solution>", ["3"]),
    ("<solution>1</solution> then <solution>2</solution>", ["1", "2"]),
    ("<solution>a<solution>b</solution>", ["a<solution>b"]),
    ("<solution>open only", []),
    ("<solution>x</solution><solution>unclosed", ["x"]),
]


@pytest.mark.parametrize(("text", "blocks"), SAME_AS_REGEX)
def test_solution_blocks_read_like_the_regex(text: str, blocks: list[str]) -> None:
    assert answers.solution_blocks(text) == blocks
    assert re.findall(r"<solution>(.*?)</solution>", text, re.DOTALL) == blocks


@pytest.mark.parametrize(
    ("source", "line"),
    [
        # the text after the opening quotes, as the regex it replaces read it
        ('def reward():\n    """Rewards short answers."""\n', 'Rewards short answers."""'),
        ('"""\n\n    Counts the steps.\n    More.\n"""', "Counts the steps."),
        ("x = 1\n", None),
        ("'''one'''", "one'''"),
    ],
)
def test_doc_line_reads_the_first_docstring_line(source: str, line: str | None) -> None:
    assert loop.doc_line(source) == line


@pytest.mark.parametrize(
    ("prefix", "ends"),
    [
        ("It rained.", True),
        ('He said "stop."  ', True),
        ("a list:\n", True),
        ("first line\n  ", True),
        ("in the middle", False),
        ("", False),
    ],
)
def test_sentence_ends_read_like_before(prefix: str, ends: bool) -> None:
    assert data._ends_sentence(prefix, len(prefix)) is ends
