"""Benchmark: crafted text against the router's feature checks and the GRPO answer parser,
before and after they were made linear, in one run.

The baseline is each pattern as it was (copied here), run the way its caller ran it; the
new side is the function that replaced it. Each attack is timed at n and 4n characters, and
the script prints both times and the growth ratio (about 4 when linear, 16 for a square,
64 for a cube). Timings on a shared 2-vCPU machine vary by +-20%; the ratios are what matter.

Run from the repository root:

    .venv/bin/python bench/bench_hostile_text.py [--n 300]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from rewardsmith.rl.answers import solution_blocks
from rewardsmith.rm import pairsets
from rewardsmith.router import content, features

# The patterns as they were (router/content.py, router/features.py, rl/answers.py,
# rm/pairsets.py before the change).
OLD_LETTER_ANSWER = re.compile(
    r"(?i:answer|option|choice)\s*(?:is)?\s*[:\-]?\s*\(?[A-Ja-j]\)?(?![\w'])"
    r"|\([A-Ja-j]\)\s*\W{0,3}\s*\Z|(?<![\w'])[A-J]\s*[.)]?\s*\Z"
)
OLD_CHOICE = re.compile(
    r"\s*[\(\[]?\s*[A-J]\s*[\)\]]?\s*[.:]?\s*|\s*(?:[\(\[]\s*[A-J]\s*[\)\]]|[A-J]\s*[\)\].:])\s.*",
    re.IGNORECASE | re.DOTALL,
)
OLD_DIALOGUE = re.compile(r"(^|\n)\s*(Human|User|Assistant|AI)\s*:", re.IGNORECASE)
OLD_SOLUTION = re.compile(r"<solution>(.*?)</solution>", re.DOTALL)
OLD_TESTBED_STEP = re.compile(r"(\d+)([+\-*])(\d+)=(\d+)")

# (name, text of about n characters, old check, new check)
Attack = tuple[str, Callable[[int], str], Callable[[str], object], Callable[[str], object]]
ATTACKS: list[Attack] = [
    (
        "choice answer form: 'answer' + spaces (completion tail)",
        lambda n: "answer" + " " * n + "!",
        OLD_LETTER_ANSWER.search,
        lambda t: content.completion_fit("choice", t),
    ),
    (
        "choice reference: a run of spaces and tabs",
        lambda n: " \t" * (n // 2) + "x",
        OLD_CHOICE.fullmatch,
        features._CHOICE.fullmatch,
    ),
    (
        "dialogue check: blank lines (prompt)",
        lambda n: "\n" * n + "x",
        OLD_DIALOGUE.findall,
        features._DIALOGUE.findall,
    ),
    (
        "GRPO answer: unclosed <solution> tags",
        lambda n: "<solution>" * (n // 10),
        OLD_SOLUTION.findall,
        solution_blocks,
    ),
    (
        "testbed steps: a run of digits",
        lambda n: "1" * n,
        OLD_TESTBED_STEP.findall,
        pairsets._TESTBED_STEP.findall,
    ),
]


def seconds(fn: Callable[[str], object], text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="characters of the smaller text")
    args = parser.parse_args()
    n = args.n
    print(f"{'attack':58} {'side':4} {'t(n) s':>10} {'t(4n) s':>10} {'ratio':>7}")
    for name, make, old, new in ATTACKS:
        for side, fn in (("old", old), ("new", new)):
            small, large = seconds(fn, make(n)), seconds(fn, make(4 * n))
            ratio = large / max(small, 1e-9)
            print(f"{name:58} {side:4} {small:10.5f} {large:10.5f} {ratio:7.1f}")


if __name__ == "__main__":
    main()
