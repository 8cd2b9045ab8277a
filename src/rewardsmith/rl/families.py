"""The task families of the multi-task testbed (`testbed-multi`), each with its own grader.

Seven procedural families, so that a policy trained on all of them meets answers of several
kinds (a number, a letter, a list of numbers, a list of words, a clock time):

| family | source | answer | example |
|---|---|---|---|
| `arith_word` | rewardsmith (`rl.problems`) | number | a two- or three-step word problem |
| `chain_sum` | reasoning-gym `chain_sum` | number | `98 + 93 - 77 =` |
| `leg_counting` | reasoning-gym `leg_counting` | number | legs of 4 butterflies and 2 crabs |
| `choice` | rewardsmith | letter | `What is 7 * 6 - 5? (A) 37 (B) 35 ...` |
| `sort_numbers` | rewardsmith | number list | `Sort these numbers in ascending order: 73, 8, 64` |
| `clock` | rewardsmith | time `H:MM` | a start time plus a duration |
| `word_reversal` | reasoning-gym `word_sequence_reversal` | word list | `Reverse this list of words: ...` |

Every task carries worked *steps* (the intermediate results a solver writes) and its answer;
`rl.multitask` writes them as completions in the answer styles of `rl.styles`. Each family
grades an answer with its own rule (`Family.correct`): the reasoning-gym families with
reasoning-gym's own `score_answer` (full credit only), the others exactly (numbers by value,
lists in order, times by value). The same (family, n, seed) always gives the same tasks.
Pure Python (reasoning-gym has no torch dependency).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

from rewardsmith.rl import problems as P

AnswerKind = str  # number | letter | number_list | word_list | time


@dataclass(frozen=True)
class Task:
    """One problem: its question, the steps a worked solution writes, and its answer."""

    family: str
    question: str
    steps: tuple[str, ...]
    answer: str

    @property
    def reference(self) -> str:
        """The gold answer, as a training stream's `reference` holds it."""
        return self.answer

    @property
    def task(self) -> str:
        """The stream's `task` field: the family's name."""
        return self.family


@dataclass(frozen=True)
class Family:
    """A task family: how to draw its tasks and how to grade an answer to one."""

    name: str
    kind: AnswerKind
    source: str
    generate: Callable[[int, int], list[Task]]
    correct: Callable[[str, str], bool]


# -- graders -----------------------------------------------------------------------------------

_NUMBER = re.compile(r"^[-\u2212]?\d+(?:\.\d+)?$")


def _number(text: str) -> Fraction | None:
    text = text.strip().replace(",", "").replace("\u2212", "-")
    return Fraction(text) if _NUMBER.match(text) else None


def number_equal(answer: str, reference: str) -> bool:
    """One number, equal in value to the reference (`32`, `32.0`; not `32 apples`)."""
    a, r = _number(answer), _number(reference)
    return a is not None and a == r


@cache
def _rg_scorer(dataset: str) -> Any:
    import reasoning_gym

    return reasoning_gym.get_score_answer_fn(dataset)


def rg_correct(dataset: str) -> Callable[[str, str], bool]:
    """reasoning-gym's own `score_answer` for `dataset`; right means full credit. These
    scorers read only the entry's `answer`, which is the reference."""

    def correct(answer: str, reference: str) -> bool:
        entry = {"answer": reference, "metadata": {"source_dataset": dataset}}
        return float(_rg_scorer(dataset)(answer.strip(), entry)) == 1.0

    return correct


def letter_equal(answer: str, reference: str) -> bool:
    return (
        answer.strip().strip("()").upper() == reference.strip().upper()
        and len(answer.strip().strip("()")) == 1
    )


def _number_list(text: str) -> list[Fraction] | None:
    parts = [p for p in re.split(r"[,\s]+", text.strip().strip("[]")) if p]
    values = [_number(p.strip("'\"")) for p in parts]
    return None if not values or any(v is None for v in values) else values  # type: ignore[return-value]


def list_equal(answer: str, reference: str) -> bool:
    """The same numbers in the same order (`8, 11, 64` = `8,11,64` = `[8, 11, 64]`)."""
    a, r = _number_list(answer), _number_list(reference)
    return a is not None and a == r


_TIME = re.compile(r"^(\d{1,2}):(\d{2})$")


def time_equal(answer: str, reference: str) -> bool:
    """The same clock time (`9:05` = `09:05`)."""
    a, r = _TIME.match(answer.strip()), _TIME.match(reference.strip())
    return bool(a and r) and (int(a[1]), int(a[2])) == (int(r[1]), int(r[2]))  # type: ignore[index]


# -- generators ----------------------------------------------------------------------------------


def _rng(family: str, seed: int) -> random.Random:
    # Not keyed on n: the first k of n tasks are the k tasks asked for alone.
    return random.Random(f"{family}:{seed}")


def _arith_word(n: int, seed: int) -> list[Task]:
    rng = _rng("arith_word", seed)
    out = []
    for _ in range(n):
        p = rng.choice(P.TEMPLATES)(rng)
        steps = tuple(s.strip() for s in p.thinking.split(". ") if s.strip().strip("."))
        out.append(Task("arith_word", p.question, tuple(s.rstrip(".") for s in steps), p.reference))
    return out


def _expression_steps(terms: list[int], ops: list[str]) -> tuple[str, ...]:
    steps, value = [], terms[0]
    for op, term in zip(ops, terms[1:], strict=True):
        new = value + term if op == "+" else value - term if op == "-" else value * term
        steps.append(f"{value}{op}{term}={new}")
        value = new
    return tuple(steps)


def _rg_entries(dataset: str, n: int, seed: int, **config: Any) -> list[dict[str, Any]]:
    import reasoning_gym

    return list(reasoning_gym.create_dataset(dataset, size=n, seed=seed, **config))


def _chain_sum(n: int, seed: int) -> list[Task]:
    entries = _rg_entries("chain_sum", n, seed, min_terms=2, max_terms=3, max_digits=2)
    out = []
    for e in entries:
        tokens = e["metadata"]["expression"].split()
        terms, ops = [int(t) for t in tokens[0::2]], tokens[1::2]
        out.append(Task("chain_sum", e["question"], _expression_steps(terms, ops), e["answer"]))
    return out


def _leg_counting(n: int, seed: int) -> list[Task]:
    from reasoning_gym.arithmetic.leg_counting import ANIMALS

    entries = _rg_entries(
        "leg_counting", n, seed, min_animals=2, max_animals=3, min_instances=1, max_instances=5
    )
    out = []
    for e in entries:
        counts = e["metadata"]["animals"]
        steps, total = [], 0
        for name, count in counts.items():
            legs = ANIMALS[name]
            steps.append(f"{name} {count}*{legs}={count * legs}")
        for k, (name, count) in enumerate(counts.items()):
            part = count * ANIMALS[name]
            if k:
                steps.append(f"{total}+{part}={total + part}")
            total += part
        out.append(Task("leg_counting", e["question"], tuple(steps), e["answer"]))
    return out


LETTERS = "ABCD"


def _choice(n: int, seed: int) -> list[Task]:
    rng = _rng("choice", seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        terms, ops = [a, b], [rng.choice("+*")]
        if rng.random() < 0.6:
            ops.append(rng.choice("+-"))
            terms.append(rng.randint(1, 30))
        steps = _expression_steps(terms, ops)
        value = int(steps[-1].rpartition("=")[2])
        if value < 0:  # keep answers non-negative: flip the last operation
            ops[-1] = "+"
            steps = _expression_steps(terms, ops)
            value = int(steps[-1].rpartition("=")[2])
        expr = " ".join(f"{t} {o}" for t, o in zip(terms, ops, strict=False)) + f" {terms[-1]}"
        options = {value}
        while len(options) < len(LETTERS):
            options.add(max(0, value + rng.choice([-10, -3, -2, -1, 1, 2, 3, 10, 11])))
        shown = sorted(options, key=lambda _: rng.random())
        letter = LETTERS[shown.index(value)]
        listed = " ".join(f"({L}) {v}" for L, v in zip(LETTERS, shown, strict=True))
        question = f"What is {expr}?\n{listed}\nAnswer with the letter."
        out.append(Task("choice", question, (*steps, f"{value} is ({letter})"), letter))
    return out


def _sort_numbers(n: int, seed: int) -> list[Task]:
    rng = _rng("sort_numbers", seed)
    out = []
    for _ in range(n):
        values = rng.sample(range(1, 100), rng.randint(3, 5))
        descending = rng.random() < 0.5
        order = "descending" if descending else "ascending"
        ordered = sorted(values, reverse=descending)
        question = f"Sort these numbers in {order} order: {', '.join(map(str, values))}"
        sign = ">" if descending else "<"
        steps = (f"{len(values)} numbers", sign.join(map(str, ordered)))
        out.append(Task("sort_numbers", question, steps, ", ".join(map(str, ordered))))
    return out


_CLOCK_TEMPLATES = (
    "A train leaves at {t} and the trip takes {d}. At what time does it arrive?",
    "A movie starts at {t} and lasts {d}. At what time does it end?",
    "{name} starts baking at {t} and bakes for {d}. At what time does {pron} finish?",
    "A meeting begins at {t} and runs for {d}. At what time is it over?",
)


def _clock(n: int, seed: int) -> list[Task]:
    rng = _rng("clock", seed)
    out = []
    for _ in range(n):
        h, m = rng.randint(0, 19), rng.randint(0, 59)
        dh, dm = rng.randint(1, 3), rng.randint(5, 55)
        name = rng.choice(P.NAMES)
        hours = "hour" if dh == 1 else "hours"
        question = rng.choice(_CLOCK_TEMPLATES).format(
            t=f"{h}:{m:02d}",
            d=f"{dh} {hours} {dm} minutes",
            name=name,
            pron=P.PRONOUN[name].lower(),
        )
        raw_h, raw_m = h + dh, m + dm
        steps = [f"{h}:{m:02d}+{dh}:{dm:02d}={raw_h}:{raw_m:02d}"]
        end_h, end_m = raw_h + raw_m // 60, raw_m % 60
        if raw_m >= 60:
            steps.append(f"{raw_h}:{raw_m}={end_h}:{end_m:02d}")
        out.append(Task("clock", question, tuple(steps), f"{end_h}:{end_m:02d}"))
    return out


def _word_reversal(n: int, seed: int) -> list[Task]:
    entries = _rg_entries("word_sequence_reversal", n, seed, min_words=3, max_words=4)
    out = []
    for e in entries:
        words = e["metadata"]["words"]
        steps = (f"{len(words)} words", f"last is {words[-1]}")
        out.append(Task("word_reversal", e["question"], steps, e["answer"]))
    return out


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("arith_word", "number", "rewardsmith", _arith_word, number_equal),
        Family(
            "chain_sum", "number", "reasoning_gym:chain_sum", _chain_sum, rg_correct("chain_sum")
        ),
        Family(
            "leg_counting",
            "number",
            "reasoning_gym:leg_counting",
            _leg_counting,
            rg_correct("leg_counting"),
        ),
        Family("choice", "letter", "rewardsmith", _choice, letter_equal),
        Family("sort_numbers", "number_list", "rewardsmith", _sort_numbers, list_equal),
        Family("clock", "time", "rewardsmith", _clock, time_equal),
        Family(
            "word_reversal",
            "word_list",
            "reasoning_gym:word_sequence_reversal",
            _word_reversal,
            rg_correct("word_sequence_reversal"),
        ),
    )
}


def family(name: str) -> Family:
    """The family called `name` (KeyError names the known ones)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown task family {name!r}; known: {sorted(FAMILIES)}") from None
