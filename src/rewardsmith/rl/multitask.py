"""The multi-task testbed's data: a seeded mix of the task families (`rl.families`), the
completions its warm start imitates, its training stream and its held-out sets.

**Completions.** Each warm-start completion is one task's answer written in an answer style
(`rl.styles`), with the worked steps or without them (a direct answer), drawn at random:

- each family has a *habit*, the style it is most often answered in (`HABITS`: word problems
  end in `#### N` as GSM8K does, chain sums in `\\boxed{}` ...), drawn `HABIT_WEIGHT` times as
  often as each other style; the `tags` style (`<thinking>/<solution>`) is nobody's habit;
- whether steps are written depends on the style (`STEPS_SHARE`): nearly always inside
  `<thinking>`, rarely before `####`. A tiny model answers multi-step problems far better with
  the steps written out, so the style a reward favours changes how often answers are right;
- a small share of completions hedge (`HEDGE_SHARE`: "The answer is 31 or 32.", one of them
  right), the habit a lenient grader pays and a strict one refuses.

**Splits.** `sft` (the warm start), `rl` (training prompts) and `test` (held out); each split
draws from its own seeds, and the held-out set drops every question of the first `sft` and
`rl` draws. Pure Python.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rewardsmith.rl.families import FAMILIES, Task, family
from rewardsmith.rl.problems import testbed_prompt
from rewardsmith.rl.styles import STYLES, render

#: The families of `testbed-multi`, in a fixed order.
MIX: tuple[str, ...] = tuple(FAMILIES)
SPLITS = ("sft", "rl", "test")
_SPLIT_OFFSETS = {"sft": 0, "rl": 1_000_003, "test": 2_000_029}
HABITS = {
    "arith_word": "hashes",
    "chain_sum": "boxed",
    "leg_counting": "answer_is",
    "choice": "answer_is",
    "sort_numbers": "final",
    "clock": "final",
    "word_reversal": "think_answer",
}
HABIT_WEIGHT = 3.0
STEPS_SHARE = {
    "tags": 0.9,
    "think_answer": 0.8,
    "boxed": 0.6,
    "answer_is": 0.45,
    "final": 0.4,
    "hashes": 0.3,
}
HEDGE_SHARE = 0.03
# Answer kinds a hedge can be written for (two candidates of a list read as one longer list).
_HEDGE_KINDS = {"number", "letter", "time"}


@dataclass(frozen=True)
class Example:
    """A task with the completion the warm start trains on."""

    task: Task
    style: str
    with_steps: bool
    hedged: bool
    completion: str

    @property
    def prompt(self) -> str:
        return testbed_prompt(self.task.question)


def _split_seed(seed: int, split: str) -> int:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return seed * 7_919 + _SPLIT_OFFSETS[split]


def draw(n: int, seed: int = 0, split: str = "sft", families: Sequence[str] = MIX) -> list[Task]:
    """`n` tasks of one split, families in a seeded random order (about n/len each)."""
    base = _split_seed(seed, split)
    rng = random.Random(base)
    picks = [rng.randrange(len(families)) for _ in range(n)]
    per_family = {
        name: family(name).generate(picks.count(k), base) for k, name in enumerate(families)
    }
    cursor = dict.fromkeys(families, 0)
    out = []
    for k in picks:
        name = families[k]
        out.append(per_family[name][cursor[name]])
        cursor[name] += 1
    return out


def _hedge(task: Task, rng: random.Random) -> str:
    kind = family(task.family).kind
    if kind == "letter":
        other = rng.choice([c for c in "ABCD" if c != task.answer])
    elif kind == "time":
        h, _, m = task.answer.partition(":")
        other = f"{h}:{(int(m) + rng.choice([5, 10, 50, 55])) % 60:02d}"
    else:
        other = str(int(float(task.answer)) + rng.choice([-2, -1, 1, 2]))
    pair = [task.answer, other]
    rng.shuffle(pair)
    return f"{pair[0]} or {pair[1]}"


def write_example(task: Task, rng: random.Random) -> Example:
    """The task answered in a random style, with or without its steps (module docstring)."""
    habit = HABITS.get(task.family)
    weights = [HABIT_WEIGHT if s == habit else 1.0 for s in STYLES]
    style = rng.choices(STYLES, weights)[0]
    with_steps = rng.random() < STEPS_SHARE[style]
    kind = family(task.family).kind
    hedged = kind in _HEDGE_KINDS and rng.random() < HEDGE_SHARE
    answer = _hedge(task, rng) if hedged else task.answer
    steps = ". ".join(task.steps) + "." if with_steps else ""
    completion = render(style, steps, answer, "letter" if kind == "letter" else "text")
    return Example(task, style, with_steps, hedged, completion)


def sft_examples(n: int, seed: int = 0, families: Sequence[str] = MIX) -> list[Example]:
    """The warm start's `n` examples (the `sft` split), each in a drawn style."""
    rng = random.Random(f"styles:{seed}")
    return [write_example(t, rng) for t in draw(n, seed, "sft", families)]


def held_out(
    n: int,
    seed: int = 0,
    families: Sequence[str] = MIX,
    exclude: Iterable[Task] = (),
) -> list[Task]:
    """`n` distinct `test` tasks whose questions are not in `exclude`."""
    seen = {t.question for t in exclude}
    out: list[Task] = []
    for t in draw(n * 2 + 200, seed, "test", families):
        if t.question not in seen:
            seen.add(t.question)
            out.append(t)
            if len(out) == n:
                return out
    raise ValueError(f"could not draw {n} distinct held-out tasks; ask for fewer")
