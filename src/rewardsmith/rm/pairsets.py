"""Evaluation pairs that can decide: a true worked solution against the same solution made wrong.

For each held-out problem the true solution is paired with copies that differ in one place:

- `final`: the final answer is wrong: the result of the last calculation and every later
  mention of it (GSM8K's `#### N`, the testbed's `<solution>N</solution>`) are replaced by a
  nearby wrong number; every earlier line is unchanged;
- `step`: an intermediate calculation is wrong (its expression stays, its result is off by a
  few) and the error is carried through: every later calculation that used that result uses
  the wrong one, is recomputed, and the final answer follows, as a solution with one
  arithmetic slip reads.

Both kinds of wrong solutions look exactly like true ones except for the arithmetic, so a
reward model that tells them apart checks the numbers, not the style. Sources: the testbed's
procedural problems (steps `a*b=c.` inside `<thinking>`) and GSM8K (steps are its calculator
annotations `<<a*b=c>>c`, removed from the text shown). Rows carry their problem as `group`
(`rm eval` resamples whole problems for its intervals) and their `kind`.
"""

from __future__ import annotations

import ast
import json
import operator
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

from rewardsmith.files import atomic_write
from rewardsmith.rm.corpora import CALCULATOR

KINDS = ("final", "step")
#: Wrong numbers are the true one plus or minus this much (never the true one, never < 0
#: for a number that was >= 0): near misses, as arithmetic slips are.
MAX_OFFSET = 10
#: Draws tried for a variant before a problem is skipped (a result no later step uses...).
ATTEMPTS = 20

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\d])")
# `(?<!\d)`: a step starts where its number does (from every digit of a long run, the
# pattern would rescan the run).
_TESTBED_STEP = re.compile(r"(?<!\d)(\d++)([+\-*])(\d++)=(\d++)")
_FINAL = re.compile(r"####\s*(.+)$")
_GSM8K_STEP = re.compile(r"<<([^<>=]*)=([^<>]*)>>([\-\d,.]*\d)?")
_OPS: dict[type, Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


@dataclass(frozen=True)
class PairRow:
    """One evaluation pair in the format `rm eval` reads (RewardBench-style, grouped)."""

    prompt: str
    chosen: str
    rejected: str
    group: str
    kind: str


def _value(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _format(value: Fraction, like: str) -> str:
    """`value` written as the number it replaces was (thousands commas, decimals)."""
    if value.denominator == 1:
        text = str(value.numerator)
    else:
        text = f"{float(value):.2f}".rstrip("0").rstrip(".")
    if "," in like and value.denominator == 1 and abs(value) >= 1000:
        text = f"{value.numerator:,}"
    return text


def _evaluate(expr: str) -> Fraction | None:
    """An arithmetic expression of numbers, + - * / and parentheses; None for anything else."""
    try:
        tree = ast.parse(expr.replace(",", "").strip(), mode="eval")
    except SyntaxError:
        return None

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return Fraction(str(node.value))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError("not plain arithmetic")

    try:
        return walk(tree.body)
    except (ValueError, ZeroDivisionError):
        return None


def _nearby(value: Fraction, rng: random.Random) -> Fraction:
    while True:
        new = value + rng.choice([d for d in range(-MAX_OFFSET, MAX_OFFSET + 1) if d])
        if new != value and (new >= 0 or value < 0):
            return new


def _substitute(text: str, changed: dict[Fraction, Fraction]) -> str:
    """Every number of `text` whose value was changed, written anew."""

    def repl(m: re.Match[str]) -> str:
        old = _value(m.group())
        return _format(changed[old], m.group()) if old in changed else m.group()

    return _NUMBER.sub(repl, text)


# -- the testbed: `<thinking>3*6=18. 14+18=32.</thinking><solution>32</solution>` --------------


def testbed_wrong(completion: str, kind: str, rng: random.Random) -> str | None:
    """A testbed solution made wrong (`final` or `step`, see the module doc), or None."""
    steps = list(_TESTBED_STEP.finditer(completion))
    if not steps:
        return None
    pick = (
        len(steps) - 1
        if kind == "final"
        else rng.randrange(len(steps) - 1)
        if len(steps) > 1
        else None
    )
    if pick is None:
        return None
    changed: dict[Fraction, Fraction] = {}
    out, last = [], 0
    for j, m in enumerate(steps):
        a, op, b, c = m.groups()
        if j > pick:
            a, b = (_substitute(x, changed) for x in (a, b))
        result = _value(c)
        new = _nearby(result, rng) if j == pick else _evaluate(f"{a}{op}{b}")
        if new is None or new < 0 or new.denominator != 1:
            return None
        if new != result:
            changed[result] = new
        out += [completion[last : m.start()], f"{a}{op}{b}={new.numerator}"]
        last = m.end()
    tail = _substitute(completion[last:], changed)  # `.</thinking><solution>N</solution>`
    wrong = "".join(out) + tail
    return wrong if wrong != completion and _value(steps[-1].group(4)) in changed else None


# -- GSM8K: `Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n...\n#### 72` -------------------


def _final_region(text: str) -> str:
    """The end of `text` where `_FINAL` can match: its last line and a `####` that ends the
    lines before it (searched in the whole text, the pattern rescans a line from each `####`)."""
    cut = text.rfind("\n")
    return text if cut < 0 else text[max(len(text[:cut].rstrip()) - 4, 0) :]


def gsm8k_wrong(answer: str, kind: str, rng: random.Random) -> str | None:
    """A GSM8K solution (annotated, as in the dataset) made wrong and shown without its
    annotations (`final` or `step`, see the module doc), or None when it cannot be."""
    steps = list(_GSM8K_STEP.finditer(answer))
    final_match = _FINAL.search(_final_region(answer.strip()))
    if not steps or final_match is None:
        return None
    try:
        final = _value(final_match.group(1).strip())
    except (ValueError, ZeroDivisionError):
        return None
    if kind == "final":
        # The last calculation that states the final answer goes wrong, and what follows it.
        at = [j for j, m in enumerate(steps) if (_evaluate(m.group(2)) == final)]
        if not at:
            return None
        pick = at[-1]
    elif len(steps) > 1:
        pick = rng.randrange(len(steps) - 1)
    else:
        return None
    changed: dict[Fraction, Fraction] = {}
    out, last = [], 0
    for j, m in enumerate(steps):
        expr, result_text, shown = m.group(1), m.group(2), m.group(3)
        result = _evaluate(result_text)
        if result is None:
            return None
        before = answer[last : m.start()]
        if j > pick:
            # A later line that used a changed result shows the wrong number and recomputes.
            used = {v for v in changed if v in {_value(x) for x in _NUMBER.findall(expr)}}
            before = _substitute(before, {v: changed[v] for v in used})
            expr = _substitute(expr, changed)
            new = _evaluate(expr)
        else:
            new = _nearby(result, rng) if j == pick else result
        if new is None:
            return None
        if new != result:
            changed[result] = new
        out += [before, "" if shown is None else _format(new, shown)]
        last = m.end()
    tail = answer[last:]
    wrong = CALCULATOR.sub("", "".join(out) + _substitute(tail, changed)).strip()
    if final not in changed:
        return None  # the slip never reached the answer: not a wrong solution
    return wrong


# -- building sets ------------------------------------------------------------------------------


def build_pairs(
    problems: Iterable[tuple[str, str, str]],
    wrong: Callable[[str, str, random.Random], str | None],
    *,
    n_problems: int,
    per_kind: int = 2,
    seed: int = 0,
) -> list[PairRow]:
    """`per_kind` pairs of each kind for each of the first `n_problems` problems that give
    them all. `problems` yields (problem id, prompt, raw solution); `wrong` makes a wrong
    copy of a raw solution; the chosen text is the raw solution as shown
    (`CALCULATOR` annotations removed)."""
    rows: list[PairRow] = []
    used = 0
    for pid, prompt, raw in problems:
        if used == n_problems:
            break
        rng = random.Random(f"pairs:{seed}:{pid}")
        shown = CALCULATOR.sub("", raw).strip()
        mine: list[PairRow] = []
        for kind in KINDS:
            seen: set[str] = set()
            for _ in range(ATTEMPTS):
                bad = wrong(raw, kind, rng)
                if bad is not None and bad != shown and bad not in seen:
                    seen.add(bad)
                    mine.append(PairRow(prompt, shown, bad, f"problem {pid}", kind))
                if len(seen) == per_kind:
                    break
        if len(mine) == per_kind * len(KINDS):
            rows += mine
            used += 1
    return rows


def gsm8k_problems(path: str | Path) -> list[tuple[str, str, str]]:
    """(line number, question, annotated answer) of a GSM8K JSONL file."""
    from rewardsmith.jsonl import iter_jsonl

    return [
        (str(i), str(r["question"]).strip(), str(r["answer"])) for i, r in iter_jsonl(Path(path))
    ]


def write_pairs(rows: Sequence[PairRow], out: str | Path) -> Path:
    """JSONL, one pair per line (`prompt, chosen, rejected, group, kind`)."""
    out = Path(out).expanduser()
    return atomic_write(out, "".join(json.dumps(asdict(row)) + "\n" for row in rows))
