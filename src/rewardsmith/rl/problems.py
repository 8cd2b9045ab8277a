"""Procedural arithmetic word problems with worked solutions: the testbed's data.

Each problem is a short story with two or three operations (add, subtract, multiply) on small
numbers, a worked solution that writes every intermediate result, and a numeric answer:

    Question: Mia has 14 pens. She buys 3 boxes with 6 pens each. How many pens does Mia have now?
    Answer: <thinking>3*6=18. 14+18=32.</thinking><solution>32</solution>

This is the CPU stand-in for GSM8K (grade-school word problems with chain-of-thought and a
final number): the same reward tools (`gsm8k`, `format_tags`) score it, and its difficulty is
set by the number ranges so a tiny model gets some of it right and has room to improve.

Problems are drawn from a seeded `random.Random`, one stream per split, so the same
(split, seed, n) always gives the same list; the held-out split leaves out every question that
the training splits at the same seed can produce in their first `n` draws (see `split_problems`).
Pure Python: no torch import.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rewardsmith.rl.answers import TAGS

SPLITS = ("sft", "rl", "test")
# Different streams per split; the offsets are arbitrary but fixed forever (changing them
# changes every cached testbed).
_SPLIT_OFFSETS = {"sft": 0, "rl": 1_000_003, "test": 2_000_029}

NAMES = ("Mia", "Tom", "Ava", "Leo", "Zoe", "Sam", "Ivy", "Max", "Eli", "Ada", "Ben", "Kim")
ITEMS = ("apples", "pens", "books", "coins", "cards", "shells", "stamps", "marbles", "cookies")
CONTAINERS = ("boxes", "bags", "packs", "jars", "crates")
PRONOUN = {n: ("She" if n in {"Mia", "Ava", "Zoe", "Ivy", "Ada", "Kim"} else "He") for n in NAMES}


@dataclass(frozen=True)
class Problem:
    """A question, its worked solution (the `<thinking>` text) and its numeric answer."""

    question: str
    thinking: str
    answer: int

    @property
    def prompt(self) -> str:
        """The text the testbed policy continues."""
        return testbed_prompt(self.question)

    @property
    def completion(self) -> str:
        """The target completion of the supervised warm start."""
        think, sol = TAGS
        return f"<{think}>{self.thinking}</{think}><{sol}>{self.answer}</{sol}>"

    @property
    def reference(self) -> str:
        return str(self.answer)


def testbed_prompt(question: str) -> str:
    """`Question: ...\\nAnswer: ` (the completion starts with `<thinking>`)."""
    return f"Question: {question}\nAnswer: "


def _add_then_sub(rng: random.Random) -> Problem:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = rng.randint(5, 60), rng.randint(2, 40)
    c = rng.randint(1, a + b - 1)
    s = a + b
    q = (
        f"{name} has {a} {item}. {PRONOUN[name]} buys {b} more and then gives away {c}. "
        f"How many {item} does {name} have now?"
    )
    return Problem(q, f"{a}+{b}={s}. {s}-{c}={s - c}.", s - c)


def _boxes_plus(rng: random.Random) -> Problem:
    name, item, box = rng.choice(NAMES), rng.choice(ITEMS), rng.choice(CONTAINERS)
    a, n, k = rng.randint(2, 50), rng.randint(2, 9), rng.randint(2, 12)
    m = n * k
    q = (
        f"{name} has {a} {item}. {PRONOUN[name]} buys {n} {box} with {k} {item} each. "
        f"How many {item} does {name} have now?"
    )
    return Problem(q, f"{n}*{k}={m}. {a}+{m}={a + m}.", a + m)


def _share_left(rng: random.Random) -> Problem:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    friends, each = rng.randint(2, 6), rng.randint(2, 9)
    given = friends * each
    a = given + rng.randint(1, 50)
    q = (
        f"{name} has {a} {item}. {PRONOUN[name]} gives {each} {item} to each of {friends} "
        f"friends. How many {item} are left?"
    )
    return Problem(q, f"{friends}*{each}={given}. {a}-{given}={a - given}.", a - given)


def _three_steps(rng: random.Random) -> Problem:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b, c = rng.randint(2, 40), rng.randint(2, 40), rng.randint(2, 30)
    s1 = a + b
    d = rng.randint(1, s1 + c - 1)
    s2 = s1 + c
    q = (
        f"{name} picks {a} {item} on Monday, {b} on Tuesday and {c} on Wednesday, "
        f"then loses {d}. How many {item} does {name} have?"
    )
    return Problem(q, f"{a}+{b}={s1}. {s1}+{c}={s2}. {s2}-{d}={s2 - d}.", s2 - d)


def _price(rng: random.Random) -> Problem:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    n, price = rng.randint(2, 9), rng.randint(2, 15)
    cost = n * price
    paid = cost + rng.randint(1, 60)
    q = (
        f"{name} buys {n} {item} at {price} dollars each and pays with {paid} dollars. "
        f"How much change does {name} get?"
    )
    return Problem(q, f"{n}*{price}={cost}. {paid}-{cost}={paid - cost}.", paid - cost)


TEMPLATES: tuple[Callable[[random.Random], Problem], ...] = (
    _add_then_sub,
    _boxes_plus,
    _share_left,
    _three_steps,
    _price,
)


def generate(n: int, seed: int = 0, split: str = "sft") -> list[Problem]:
    """`n` problems of one split, the same for the same (n, seed, split)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    rng = random.Random(seed * 7_919 + _SPLIT_OFFSETS[split])
    return [rng.choice(TEMPLATES)(rng) for _ in range(n)]


def split_problems(
    n: int, seed: int = 0, split: str = "test", exclude: Iterable[Problem] = ()
) -> list[Problem]:
    """`n` distinct problems of `split` whose questions are not in `exclude` (the held-out set
    leaves out the questions the policy was trained on)."""
    seen = {p.question for p in exclude}
    out: list[Problem] = []
    for p in generate(n * 4 + 100, seed, split):
        if p.question not in seen:
            seen.add(p.question)
            out.append(p)
            if len(out) == n:
                return out
    raise ValueError(f"could not draw {n} distinct {split} problems; ask for fewer")


def corpus(problems: Iterable[Problem]) -> list[str]:
    """Full training texts (prompt + completion), e.g. to train the tokenizer."""
    return [p.prompt + p.completion for p in problems]
