"""Examples and fresh samples of reasoning-gym families for the offline CodeVerify bench.

For a family, everything is judged by reasoning-gym's own `score_answer(answer, entry)`: an
answer is *right* when it scores 1.0. Answers are drawn so that half are right and half
wrong, from:

- right: the entry's answer itself, or a *form variant* of it that the scorer accepts
  (another case, spacing, separator, list syntax, item order, number format...);
- wrong: a form variant the scorer refuses, another entry's answer, or a small content
  change (a character changed, an item dropped or swapped, the answer cut short).

Which variants a family accepts is never assumed: each candidate is scored by the family's
scorer, so a strict family's case variant is a wrong answer and a lenient family's a right
one. Each answer is then written in one of several answer styles (`<answer>` tags, "The
answer is ...", `\\boxed{}`, a bare last line, a code block for multi-line answers), with
reasoning text that sometimes mentions a wrong guess first.

`examples_for(family)` gives the 12 example lines of the bench (8 with labeled completions,
half right; 4 with only prompt and reference); `fresh_samples(family)` gives new samples
from other entries.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

Entry = dict[str, Any]

# Families whose answers none of the library's specific verifiers grade (math, gsm8k,
# multiple_choice, format, translation, length, code): text, words, lists, grids, JSON. The
# generic reasoning_gym tool would need the whole dataset entry as the reference, which a
# user's plain examples do not carry.
FAMILIES: tuple[str, ...] = (
    "spell_backward",
    "word_sorting",
    "letter_jumble",
    "caesar_cipher",
    "word_sequence_reversal",
    "family_relationships",
    "color_cube_rotation",
    "sentence_reordering",
    "group_anagrams",
    "palindrome_partitioning",
    "base_conversion",
    "needle_haystack",
    "number_filtering",
    "figlet_font",
    "rotate_matrix",
)
# Share of right answers written as an accepted form variant (when the family has one), and
# of wrong answers that are a refused form variant (when it has one).
RIGHT_VARIANT_SHARE = 0.35
WRONG_VARIANT_SHARE = 0.3
EXAMPLE_LINES = 12
LABELED_LINES = 8
# Entries tried for a form variant of the wanted kind before settling for a plain answer.
FORM_TRIES = 8

REASONS = (
    "Let me work through this step by step.",
    "I read the question carefully and checked each part.",
    "Working it out:\n- first I looked at the input\n- then I applied the rule",
    "This needs care, so I went over it twice.",
)


@lru_cache(maxsize=64)
def _dataset(family: str, seed: int, size: int) -> Any:
    import reasoning_gym

    return reasoning_gym.create_dataset(family, size=size, seed=seed)


def entries(family: str, seed: int, size: int) -> list[Entry]:
    ds = _dataset(family, seed, size)
    return [ds[i] for i in range(size)]


def scorer(family: str) -> Callable[[str, Entry], float]:
    ds = _dataset(family, 0, 4)
    fn: Callable[[str, Entry], float] = ds.score_answer
    return fn


def is_right(family: str, answer: str, entry: Entry) -> bool:
    try:
        return float(scorer(family)(answer, entry)) >= 1.0
    except Exception:  # a scorer that crashes on an answer gives it nothing
        return False


# -- answer variants -----------------------------------------------------------------------


def _items(text: str) -> tuple[list[str], str] | None:
    for sep in (", ", ",", "; ", "\n", " "):
        if sep in text:
            return text.split(sep), sep
    return None


def form_variants(answer: str) -> dict[str, str]:
    """Changes of form only, by kind: case, spacing, separators, list syntax and order,
    number format, JSON spacing and quotes, a trailing period."""
    out: dict[str, str] = {
        "lower": answer.lower(),
        "upper": answer.upper(),
        "title": answer.title(),
        "period": answer + ".",
        "separator_spacing": (
            answer.replace(", ", ",") if ", " in answer else answer.replace(",", ", ")
        ),
    }
    if " " in answer:
        out["double_space"] = answer.replace(" ", "  ", 1)
    split = _items(answer)
    if split is not None and len(split[0]) >= 2:
        items, sep = split
        out["reversed_items"] = sep.join(reversed(items))
        if sep.strip() == ",":
            out["python_list"] = "[" + ", ".join(f"'{i.strip()}'" for i in items) + "]"
    if answer.startswith("[") and answer.endswith("]"):
        try:
            value = json.loads(answer.replace("'", '"'))
        except ValueError:
            value = None
        if isinstance(value, list):
            out["json_spaced"] = json.dumps(value)
            out["json_compact"] = json.dumps(value, separators=(",", ":"))
            out["single_quotes"] = json.dumps(value).replace('"', "'")
            if len(value) >= 2:
                out["json_reversed"] = json.dumps(list(reversed(value)))
            out["plain_list"] = ", ".join(v if isinstance(v, str) else json.dumps(v) for v in value)
    out["trailing_zero"] = re.sub(r"\b(\d+)\b(?!\.)", r"\1.0", answer, count=1)
    out["no_trailing_zero"] = re.sub(r"(\d)\.0\b", r"\1", answer)
    if "\n" in answer:
        out["trailing_spaces"] = answer.replace("\n", " \n")
        out["one_line"] = answer.replace("\n", " ")
    seen = {answer}
    kept: dict[str, str] = {}
    for kind, v in out.items():
        if v not in seen and v and v.strip() == v:
            seen.add(v)
            kept[kind] = v
    return kept


def content_changes(answer: str, rng: random.Random) -> list[str]:
    """Wrong answers made from the right one: a character changed, an item dropped or two
    swapped, the answer cut short."""
    out = []
    letters = [i for i, ch in enumerate(answer) if ch.isalnum()]
    if letters:
        i = rng.choice(letters)
        ch = answer[i]
        new = (
            str((int(ch) + rng.randint(1, 9)) % 10)
            if ch.isdigit()
            else rng.choice([c for c in "abcdefghijklmnopqrstuvwxyz" if c != ch.lower()])
        )
        if ch.isupper():
            new = new.upper()
        out.append(answer[:i] + new + answer[i + 1 :])
    split = _items(answer)
    if split is not None and len(split[0]) >= 3:
        items, sep = split
        k = rng.randrange(len(items))
        out.append(sep.join(items[:k] + items[k + 1 :]))
        a, b = rng.sample(range(len(items)), 2)
        swapped = list(items)
        swapped[a], swapped[b] = swapped[b], swapped[a]
        out.append(sep.join(swapped))
    if len(answer) > 3:
        out.append(answer[: len(answer) * 2 // 3].rstrip())
    return [v for v in out if v and v != answer and v.strip() == v]


# -- styles --------------------------------------------------------------------------------


# Styles where the answer is delimited (tags, a box, a bare line): a trailing period there is
# part of the answer; after "The answer is: X." it ends the sentence (rewardsmith.answers).
DELIMITED_STYLES = (0, 3, 4)


def write_in_style(
    answer: str,
    rng: random.Random,
    distractor: str | None,
    style: int | None = None,
    delimited: bool = False,
) -> str:
    """A completion that gives `answer` in one of the bench's answer styles (style number
    `style` modulo their count, or a random one); `delimited`: only in `DELIMITED_STYLES`
    (a trailing period is only a different answer there)."""
    reason = rng.choice(REASONS)
    if distractor is not None and rng.random() < 0.4:
        reason += f"\nMy first guess was {distractor}, but that does not fit."
    if "\n" in answer:
        styles = [
            f"<think>{reason}</think>\n<answer>{answer}</answer>",
            f"{reason}\nFinal grid:\n```\n{answer}\n```",
            f"{reason}\n<answer>\n{answer}\n</answer>",
        ]
    else:
        styles = [
            f"<think>{reason}</think>\n<answer>{answer}</answer>",
            f"{reason}\nThe answer is: {answer}",
            f"{reason}\nSo the final answer is {answer}",
            f"{reason}\n\\boxed{{{answer}}}",
            f"{reason}\n\n{answer}",
        ]
    if delimited and "\n" not in answer:
        styles = [styles[i] for i in DELIMITED_STYLES]
    return styles[style % len(styles)] if style is not None else rng.choice(styles)


# -- samples -------------------------------------------------------------------------------


def draw_answer(
    family: str,
    entry: Entry,
    right: bool,
    pool: list[Entry],
    rng: random.Random,
    variant: str | None = None,
    avoid: frozenset[str] = frozenset(),
) -> tuple[str, str] | None:
    """(answer, how) with an answer that reasoning-gym scores right (1.0) or wrong (< 1.0),
    or None. `variant`: "form" to ask for a form variant, "plain" for none (the exact answer
    or a content change); by default the bench's shares decide. Form variants of the kinds
    in `avoid` are drawn only when no other kind fits."""
    gold = entry["answer"]
    variants = form_variants(gold)
    judged = {kind: (v, is_right(family, v, entry)) for kind, v in variants.items()}
    matching = {kind: v for kind, (v, ok) in judged.items() if ok == right}
    share = RIGHT_VARIANT_SHARE if right else WRONG_VARIANT_SHARE
    want_form = variant == "form" or (variant is None and rng.random() < share)
    if matching and want_form:
        fresh = sorted(k for k in matching if f"form:{k}" not in avoid)
        kind = rng.choice(fresh or sorted(matching))
        return matching[kind], f"form:{kind}"
    if variant == "form":
        return None
    if right:
        return (gold, "exact") if is_right(family, gold, entry) else None
    others = [e["answer"] for e in pool if e["answer"] != gold]
    choices = content_changes(gold, rng)
    if others and (not choices or rng.random() < 0.5):
        choices = [rng.choice(others)]
    wrong = [c for c in choices if not is_right(family, c, entry)]
    return (rng.choice(wrong), "content") if wrong else None


def labeled_sample(
    family: str,
    entry: Entry,
    right: bool,
    pool: list[Entry],
    rng: random.Random,
    variant: str | None = None,
    style: int | None = None,
    avoid: frozenset[str] = frozenset(),
) -> dict[str, Any] | None:
    """`{prompt, reference, completion, label, answer, how}` with the label from
    reasoning-gym, or None when no answer of the wanted kind could be drawn."""
    drawn = draw_answer(family, entry, right, pool, rng, variant, avoid)
    if drawn is None:
        return None
    answer, how = drawn
    others = [
        e["answer"] for e in pool if e["answer"] != entry["answer"] and "\n" not in e["answer"]
    ]
    distractor = rng.choice(others) if others else None
    return {
        "prompt": entry["question"],
        "reference": entry["answer"],
        "completion": write_in_style(answer, rng, distractor, style, how == "form:period"),
        "label": int(is_right(family, answer, entry)),
        "answer": answer,
        "how": how,
    }


# What the 8 labeled lines show: right answers as given and in accepted forms, wrong
# answers in refused forms and with wrong content ("form" falls back to "plain" for a
# family without such variants).
LABELED_PLAN: tuple[tuple[bool, str], ...] = (
    (True, "plain"),
    (False, "form"),
    (True, "form"),
    (False, "plain"),
    (True, "form"),
    (False, "form"),
    (True, "form"),
    (False, "plain"),
)


def examples_for(family: str, seed: int = 0) -> list[dict[str, Any]]:
    """The bench's 12 example lines: 8 labeled (4 right, 4 wrong, see `LABELED_PLAN`: like a
    user showing what the task accepts, in each answer style their model uses), 4 with
    prompt and reference only. Form variants of a kind already shown are avoided while
    others remain."""
    rng = random.Random(f"examples:{family}:{seed}")
    pool = entries(family, 1000 + seed, 40)
    labeled_pool, plain_pool = pool[:-4], pool[-4:]
    lines: list[dict[str, Any]] = []
    shown: set[str] = set()
    k = 0
    for n, (right, variant) in enumerate(LABELED_PLAN):
        line = None
        for attempt in range(len(labeled_pool)):
            entry = labeled_pool[(k + attempt) % len(labeled_pool)]
            # A family without the wanted form variant gets the plain kind instead.
            want = variant if attempt < FORM_TRIES else "plain"
            line = labeled_sample(
                family, entry, right, pool, rng, want, style=n, avoid=frozenset(shown)
            )
            if line is not None:
                k += attempt + 1
                break
        assert line is not None, f"{family}: cannot draw a labeled example"
        shown.add(line.pop("how"))
        line.pop("answer")
        lines.append(line)
    for entry in plain_pool[: EXAMPLE_LINES - LABELED_LINES]:
        lines.append({"prompt": entry["question"], "reference": entry["answer"]})
    return lines


def fresh_samples(family: str, n: int = 200, seed: int = 0) -> list[dict[str, Any]]:
    """`n` new labeled samples (half right), from entries the examples never used."""
    rng = random.Random(f"fresh:{family}:{seed}")
    pool = entries(family, 5000 + seed, max(n, 50))
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < n and i < 20 * n:
        entry = pool[i % len(pool)]
        sample = labeled_sample(family, entry, len(out) % 2 == 0, pool, rng)
        i += 1
        if sample is not None and sample["label"] == (len(out) % 2 == 0):
            sample["entry"] = entry
            out.append(sample)
    return out
