"""Held-out tasks for the offline CodeVerify bench: families the project never used, answers
in styles the examples never show.

- `pick_families(seed)`: reasoning-gym families named nowhere in the repository (a
  `git grep -w` of each name, this module and the bench excluded), whose own answer is a
  string of at most `MAX_ANSWER_CHARS` that their scorer pays 1.0; `HELD_OUT_SEED`'s pick
  is `HELD_OUT_FAMILIES` (recomputed by `bench_codeverify.py --pick`).
- two tasks of our own with their own scorers: `date_conversion` (a date written in words
  to ISO 8601, exact) and `sort_by_length` (words sorted by length then alphabetically, a
  comma list, spacing ignored), whose examples answer `ISO date: ...` / `Sorted: ...`.

`heldout_examples` gives 8 labeled lines (4 right, 4 wrong) whose completions use at most
`EXAMPLE_STYLES` styles; `heldout_samples` gives fresh samples written in `FRESH_STYLES`
(9 styles, multi-line answers in the 4 that hold one). Labels always come from the
task's own scorer.
"""

from __future__ import annotations

import datetime
import json
import random
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.bench import codeverify_data as rg

Entry = dict[str, Any]
HELD_OUT_SEED = 22
MAX_ANSWER_CHARS = 200
N_FAMILIES = 15
# Picked by `pick_families(HELD_OUT_SEED)` on the repository of issue 22.
HELD_OUT_FAMILIES: tuple[str, ...] = (
    "n_queens",
    "survo",
    "shortest_path",
    "simple_integration",
    "acre",
    "sudoku",
    "cryptarithm",
    "tsumego",
    "binary_alternation",
    "aiw",
    "knights_knaves",
    "rectangle_count",
    "largest_island",
    "coin_flip",
    "countdown",
)
OWN_TASKS = ("date_conversion", "sort_by_length")

# The examples' styles (at most 3) and the fresh samples' (6+), as templates on the answer.
EXAMPLE_STYLES = ("<answer>{a}</answer>", "{label}: {a}", "{r}\n\n{a}")
EXAMPLE_MULTILINE = ("<answer>{a}</answer>", "{label}:\n{a}")
FRESH_STYLES = (
    "<think>{r}</think>\n<answer>{a}</answer>",
    "{r}\n\\boxed{{a}}",
    "{r}\nThe answer is {a}.",
    "{r}\nFinal answer: {a}",
    "{r}\n\n{a}",
    "{r}\n```\n{a}\n```",
    '{r}\n{"answer": {j}}',
    "{r}\n**Answer:** {a}",
    "{r}\n{label}: {a}",
)
MULTILINE_STYLES = (0, 5, 6, 3)
# (examples', fresh samples') styles where an answer is delimited: tags, box, bare line...
DELIMITED = ((0, 2), (0, 1, 4, 5, 6))


@dataclass(frozen=True)
class Task:
    """A task: its entries (question, answer) and its scorer (answer, entry) -> [0, 1]."""

    name: str
    entries: Callable[[int, int], list[Entry]]
    score: Callable[[str, Entry], float]
    label: str = "Result"


def _rg_task(family: str) -> Task:
    return Task(family, lambda seed, n: rg.entries(family, seed, n), rg.scorer(family))


# -- our own tasks ------------------------------------------------------------------------

WORDS = [
    "apple",
    "kiwi",
    "fig",
    "banana",
    "cherry",
    "plum",
    "grape",
    "lemon",
    "mango",
    "peach",
    "pear",
    "lime",
    "melon",
    "date",
    "papaya",
    "guava",
    "quince",
    "olive",
    "walnut",
    "pecan",
    "almond",
    "cashew",
    "hazel",
]


def _date_entries(seed: int, n: int) -> list[Entry]:
    rng = random.Random(f"dates:{seed}")
    out = []
    for _ in range(n):
        day = datetime.date(1990, 1, 1) + datetime.timedelta(days=rng.randrange(15000))
        words = f"{day.strftime('%B')} {day.day}, {day.year}"
        out.append({"question": f"Convert {words} to an ISO 8601 date.", "answer": day.isoformat()})
    return out


def _date_score(answer: str, entry: Entry) -> float:
    return 1.0 if answer.strip() == entry["answer"] else 0.0


def _sort_entries(seed: int, n: int) -> list[Entry]:
    rng = random.Random(f"sort:{seed}")
    out = []
    for _ in range(n):
        words = rng.sample(WORDS, rng.randint(3, 6))
        ordered = sorted(words, key=lambda w: (len(w), w))
        question = f"Sort these words by length, shortest first: {', '.join(words)}"
        out.append({"question": question, "answer": ", ".join(ordered)})
    return out


def _sort_score(answer: str, entry: Entry) -> float:
    items = [w.strip() for w in answer.split(",")]
    return 1.0 if items == [w.strip() for w in entry["answer"].split(",")] else 0.0


def task(name: str) -> Task:
    """A held-out task by name: one of `OWN_TASKS` or a reasoning-gym family."""
    if name == "date_conversion":
        return Task(name, _date_entries, _date_score, "ISO date")
    if name == "sort_by_length":
        return Task(name, _sort_entries, _sort_score, "Sorted")
    return _rg_task(name)


# -- picking families ---------------------------------------------------------------------


def _named_in_repo(name: str, root: Path) -> bool:
    excluded = [":!src/rewardsmith/bench/codeverify_heldout.py", ":!bench/bench_codeverify.py"]
    cmd = ["git", "-C", str(root), "grep", "-qw", name, "--", ".", *excluded]
    return subprocess.run(cmd, check=False).returncode == 0


def _eligible(family: str) -> bool:
    try:
        t = _rg_task(family)
        entries = t.entries(0, 6)
        return all(
            isinstance(e["answer"], str)
            and 0 < len(e["answer"]) <= MAX_ANSWER_CHARS
            and t.score(e["answer"], e) >= 1.0
            for e in entries
        )
    except Exception:  # a family that cannot build or score its own entries is not usable
        return False


def pick_families(seed: int = HELD_OUT_SEED, root: Path | None = None) -> list[str]:
    """`N_FAMILIES` eligible families never named in the repository, drawn with `seed`."""
    from reasoning_gym.factory import DATASETS

    root = root or Path(__file__).resolve().parents[3]
    unnamed = [f for f in sorted(DATASETS) if f != "composite" and not _named_in_repo(f, root)]
    rng = random.Random(seed)
    rng.shuffle(unnamed)
    picked: list[str] = []
    for family in unnamed:
        if len(picked) == N_FAMILIES:
            break
        if _eligible(family):
            picked.append(family)
    return picked


# -- examples and samples -----------------------------------------------------------------


def _is_right(t: Task, answer: str, entry: Entry) -> bool:
    try:
        return float(t.score(answer, entry)) >= 1.0
    except Exception:  # a scorer that crashes on an answer gives it nothing
        return False


def _write(t: Task, answer: str, template: str, rng: random.Random) -> str:
    reason = rng.choice(rg.REASONS)
    text = template.replace("{r}", reason).replace("{label}", t.label)
    return text.replace("{j}", json.dumps(answer)).replace("{a}", answer)


def _answer(
    t: Task,
    entry: Entry,
    right: bool,
    pool: list[Entry],
    rng: random.Random,
    variant: str | None = None,
) -> str | None:
    """A right or wrong answer; `variant` "form": a form variant the scorer accepts (right)
    or refuses (wrong), else None; "plain": the answer itself or a content change; None:
    a form variant at the bench's shares."""
    gold = entry["answer"]
    variants = list(rg.form_variants(gold).values())
    matching = [v for v in variants if _is_right(t, v, entry) == right]
    share = rg.RIGHT_VARIANT_SHARE if right else rg.WRONG_VARIANT_SHARE
    if matching and (variant == "form" or (variant is None and rng.random() < share)):
        return rng.choice(matching)
    if variant == "form":
        return None
    if right:
        return gold if _is_right(t, gold, entry) else None
    choices = rg.content_changes(gold, rng) + [e["answer"] for e in pool if e["answer"] != gold][:3]
    wrong = [c for c in choices if not _is_right(t, c, entry)]
    return rng.choice(wrong) if wrong else None


def _sample(
    t: Task,
    entry: Entry,
    right: bool,
    pool: list[Entry],
    rng: random.Random,
    styles: tuple[str, ...],
    k: int,
    variant: str | None = None,
) -> dict[str, Any] | None:
    answer = _answer(t, entry, right, pool, rng, variant)
    if answer is None:
        return None
    usable = list(range(len(styles)))
    if "\n" in answer and styles is FRESH_STYLES:
        usable = list(MULTILINE_STYLES)
    elif answer.endswith(".") and not entry["answer"].endswith("."):
        # a trailing period is a different answer only where the answer is delimited
        usable = list(DELIMITED[styles is FRESH_STYLES])
    style = usable[k % len(usable)]
    return {
        "prompt": entry["question"],
        "reference": entry["answer"],
        "completion": _write(t, answer, styles[style], rng),
        "label": int(_is_right(t, answer, entry)),
        "style": style,
    }


def heldout_examples(name: str, seed: int = 0) -> list[dict[str, Any]]:
    """8 labeled lines, right and wrong as in the first round's `LABELED_PLAN` (what the
    task accepts and refuses in form, where it has form variants), in at most 3 styles."""
    t = task(name)
    rng = random.Random(f"heldout-examples:{name}:{seed}")
    pool = t.entries(1000 + seed, 40)
    lines: list[dict[str, Any]] = []
    k = 0
    for n, (right, variant) in enumerate(rg.LABELED_PLAN):
        for attempt in range(len(pool)):
            entry = pool[(k + attempt) % len(pool)]
            styles = EXAMPLE_MULTILINE if "\n" in entry["answer"] else EXAMPLE_STYLES
            want = variant if attempt < rg.FORM_TRIES else "plain"
            line = _sample(t, entry, right, pool, rng, styles, n // 2, want)
            if line is not None and line["label"] == right:
                line.pop("style")
                lines.append(line)
                k += attempt + 1
                break
    assert len(lines) == 8, f"{name}: cannot draw 8 labeled examples"
    return lines


def heldout_samples(name: str, n: int = 200, seed: int = 0) -> list[dict[str, Any]]:
    """`n` fresh labeled samples (half right) from entries the examples never used, in
    every style of `FRESH_STYLES` in turn."""
    t = task(name)
    rng = random.Random(f"heldout-fresh:{name}:{seed}")
    pool = t.entries(5000 + seed, max(n, 50))
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < n and i < 20 * n:
        entry = pool[i % len(pool)]
        right = len(out) % 2 == 0
        sample = _sample(t, entry, right, pool, rng, FRESH_STYLES, len(out) // 2)
        i += 1
        if sample is not None and sample["label"] == right:
            out.append(sample)
    return out
