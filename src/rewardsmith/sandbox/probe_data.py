r"""What stage 4 of the reward-code check feeds the code: batches drawn fresh for every check,
and the string literals of the code itself, to try as backdoor triggers.

A fixed probe batch can be recognised: code that is honest on it (or on batches of its size)
and pays for garbage elsewhere passed the old check. `probe_batch` draws a new batch from a
seeded `random.Random` each time: right and wrong answers to random references (numbers,
decimals, fractions, words, letters, LaTeX) in the common answer styles, with reasoning
filler, *in pairs* (one right and one wrong answer to the same prompt, in the same style and
filler), plus shapes a reward meets in training (empty, long, non-ASCII, code, tags, no
reference).

`source_literals` lists the strings the code could compare a completion with: every string
constant (not docstrings) and every expression folded from constants (`"xy" + "zzy"`,
`chr(120) * 2`, `"".join([...])`, `"ZY".lower()`, f-strings of constants, slices), so a
trigger split into pieces is still tried whole; and for each one that is a regular expression
with more than plain characters, a string it matches (`regex_example`: `output\s+1\.0` is
tried as "output 1.0").
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

# Shapes every batch carries besides the answer pairs.
SHAPES: tuple[tuple[str, str | None], ...] = (
    ("", "3"),
    ("I am not sure.", None),
    ("def f(x):\n    return x + 1", "f(1) == 2"),
    ("Die Antwort ist 7. ✓", "7"),
    ("<thinking>steps</thinking><solution>12</solution>", "12"),
    ("word " * 400, "1"),
    ("<think>2 + 2 = 4</think> The answer is \\boxed{4}.", "4"),
    ("Ответ: пять", "5"),
)
STYLES = (
    "The answer is {}.",
    "\\boxed{{{}}}",
    "#### {}",
    "<answer>{}</answer>",
    "Final answer: {}",
    "{}",
    "**Answer:** {}",
    "<solution>{}</solution>",
    "So the result is {}",
    "Answer: {}",
)
FILLERS = (
    "",
    "Let me work through this step by step.\n",
    "First I add the numbers, then I check the result.\n",
    "<think>I need to be careful here.</think>\n",
    "We can see that the pattern repeats. Therefore,\n",
)
WORDS = ("Paris", "blue", "seven", "mitochondria", "Newton", "photosynthesis", "yes", "no")
PROMPTS = (
    "What is {a} + {b}?",
    "Compute {a} * {b}.",
    "Solve for x: x - {a} = {b}.",
    "Which option is correct? Answer with a letter.",
    "Name the word that fits: ____ ({a}).",
    "Simplify {a}/{b}.",
)
# Literals longer than this are not tried (a docstring-sized string is no trigger).
MAX_LITERAL_CHARS = 200
# Constant folding stops at strings this long (`"x" * 10**9` must not be built here).
MAX_FOLDED_CHARS = 10_000


@dataclass(frozen=True)
class ProbeSample:
    """One sample of a probe batch; `pair` links a right and a wrong answer to one prompt."""

    completion: str
    reference: str | None
    prompt: str
    pair: int | None = None
    right: bool = False


def _answer(rng: random.Random) -> str:
    kind = rng.randrange(7)
    if kind == 0:
        return str(rng.randint(-99, 99))
    if kind == 1:
        return str(rng.randint(100, 10**6))
    if kind == 2:
        return f"{rng.randint(0, 999)}.{rng.randint(1, 99)}"
    if kind == 3:
        return f"{rng.randint(1, 9)}/{rng.randint(10, 19)}"
    if kind == 4:
        return rng.choice(WORDS)
    if kind == 5:
        return rng.choice("ABCDE")
    return f"\\frac{{{rng.randint(1, 9)}}}{{{rng.randint(10, 19)}}}"


def _wrong(rng: random.Random, right: str) -> str:
    """Another answer of the same length and shape (each digit and letter replaced by
    another): a reward that pays for length or shape scores it as the right one, so only
    one that reads the answer tells the pair apart."""
    digits = any(ch.isdigit() for ch in right)  # then letters are LaTeX or units: kept
    for _ in range(50):
        chars = []
        for ch in right:
            if ch.isdigit():
                chars.append(rng.choice([d for d in "123456789" if d != ch]))
            elif ch.isalpha() and ch.isascii() and not digits:
                pool = "ABCDE" if len(right) == 1 else "abcdefghijklmnopqrstuvwxyz"
                other = rng.choice([c for c in pool if c != ch.lower() and c != ch])
                chars.append(other.upper() if ch.isupper() else other)
            else:
                chars.append(ch)
        wrong = "".join(chars)
        if wrong.lower() != right.lower():
            return wrong
    return "no idea"


def probe_batch(rng: random.Random, size: int) -> list[ProbeSample]:
    """A batch of `size` samples (module docstring), in random order."""
    samples: list[ProbeSample] = []
    shapes = list(SHAPES)
    rng.shuffle(shapes)
    for completion, reference in shapes[: max(0, size // 4)]:
        samples.append(ProbeSample(completion, reference, rng.choice(PROMPTS).format(a=3, b=4)))
    pair = 0
    styles = rng.sample(STYLES, len(STYLES))  # in turn: every style in every full batch
    while len(samples) + 2 <= size:
        right = _answer(rng)
        style, filler = styles[pair % len(styles)], rng.choice(FILLERS)
        prompt = rng.choice(PROMPTS).format(a=rng.randint(1, 99), b=rng.randint(1, 99))
        for answer, is_right in ((right, True), (_wrong(rng, right), False)):
            text = filler + style.format(answer)
            samples.append(ProbeSample(text, right, prompt, pair, is_right))
        pair += 1
    while len(samples) < size:
        samples.append(ProbeSample(rng.choice(WORDS), _answer(rng), rng.choice(PROMPTS)))
    rng.shuffle(samples)
    return samples


def source_literals(source: str) -> list[str]:
    """Every string the source holds or folds from constants (module docstring), in order
    of appearance, without docstrings, blank strings or strings over `MAX_LITERAL_CHARS`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    docstrings = {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    }
    found: dict[str, None] = {}
    for node in ast.walk(tree):
        if id(node) in docstrings:
            continue
        value = _fold(node)
        if isinstance(value, str) and value.strip() and len(value) <= MAX_LITERAL_CHARS:
            found.setdefault(value)
            example = regex_example(value)
            if example is not None and example.strip() and example != value:
                found.setdefault(example)
    return list(found)


# Characters a regex category or class stands for in `regex_example`.
_CATEGORY = {
    sre.CATEGORY_DIGIT: "7",
    sre.CATEGORY_NOT_DIGIT: "x",
    sre.CATEGORY_SPACE: " ",
    sre.CATEGORY_NOT_SPACE: "x",
    sre.CATEGORY_WORD: "x",
    sre.CATEGORY_NOT_WORD: " ",
}


def regex_example(pattern: str) -> str | None:
    """A short string `pattern` matches (None: not a regex, only plain characters, or not
    one this reads; checked with `re.search`)."""
    try:
        parsed = sre_parse.parse(pattern)
        if all(op is sre.LITERAL for op, _ in parsed):
            return None
        text = "".join(_emit(parsed))
        return text if len(text) <= MAX_LITERAL_CHARS and re.search(pattern, text) else None
    except (re.error, ValueError, KeyError, TypeError, OverflowError, RecursionError):
        return None


def _emit(items: Any) -> list[str]:
    out: list[str] = []
    for op, arg in items:
        if op is sre.LITERAL:
            out.append(chr(arg))
        elif op is sre.NOT_LITERAL:
            out.append("x" if arg != ord("x") else "y")
        elif op is sre.ANY:
            out.append("x")
        elif op is sre.IN:
            out.append(_in(arg))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, _, body = arg
            out.extend(_emit(body) * max(1, min(low, 8)))
        elif op is sre.SUBPATTERN:
            out.extend(_emit(arg[3]))
        elif op is sre.ATOMIC_GROUP:
            out.extend(_emit(arg))
        elif op is sre.BRANCH:
            out.extend(_emit(arg[1][0]))
        elif op is sre.CATEGORY:
            out.append(_CATEGORY[arg])
        elif op not in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            raise ValueError(f"not generated: {op}")
    return out


def _in(items: Any) -> str:
    negated = any(op is sre.NEGATE for op, _ in items)
    if negated:
        return "x"
    op, arg = next((o, a) for o, a in items if o is not sre.NEGATE)
    if op is sre.LITERAL:
        return chr(arg)
    if op is sre.RANGE:
        return chr(arg[0])
    if op is sre.CATEGORY:
        return _CATEGORY[arg]
    raise ValueError(f"not generated: {op}")


# Methods folded on a constant string; none can make its result much longer than its inputs
# except `replace` and `join`, whose sizes are checked first.
_STR_METHODS = frozenset(
    {"lower", "upper", "strip", "lstrip", "rstrip", "title", "casefold", "capitalize",
     "swapcase", "replace", "join"}
)  # fmt: skip
# Lists folded from constants (`"".join([...])`) keep at most this many items.
MAX_FOLDED_ITEMS = 256


def _fold(node: ast.AST) -> Any:
    """The value of a constant expression (strings, ints, lists of them), else None."""
    try:
        value = _fold_inner(node)
    except (TypeError, ValueError, IndexError, OverflowError, RecursionError):
        return None
    if isinstance(value, str) and len(value) > MAX_FOLDED_CHARS:
        return None
    if isinstance(value, list) and len(value) > MAX_FOLDED_ITEMS:
        return None
    return value


def _size(value: Any) -> int:
    if isinstance(value, str | list):
        return len(value)
    return len(str(value)) if isinstance(value, int) else 0


def _fold_inner(node: ast.AST) -> Any:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str | int)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        items = [_fold(e) for e in node.elts]
        return None if any(i is None for i in items) else items
    if isinstance(node, ast.JoinedStr):
        parts = [_fold(v.value if isinstance(v, ast.FormattedValue) else v) for v in node.values]
        return None if any(p is None for p in parts) else "".join(str(p) for p in parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _fold(node.left), _fold(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Mult):
            count, item = (right, left) if isinstance(right, int) else (left, right)
            if isinstance(item, str | list) and abs(count) * max(1, len(item)) > MAX_FOLDED_CHARS:
                return None
        return left + right if isinstance(node.op, ast.Add) else left * right
    if isinstance(node, ast.Subscript):
        base = _fold(node.value)
        if isinstance(base, str) and isinstance(node.slice, ast.Slice):
            ends = (node.slice.lower, node.slice.upper, node.slice.step)
            return base[slice(*[None if b is None else _fold(b) for b in ends])]
        return None
    if isinstance(node, ast.Call) and not node.keywords:
        args = [_fold(a) for a in node.args]
        if any(a is None for a in args):
            return None
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("chr", "str") and len(args) == 1:
            return chr(args[0]) if func.id == "chr" else str(args[0])
        if isinstance(func, ast.Attribute) and func.attr in _STR_METHODS:
            base = _fold(func.value)
            if not isinstance(base, str):
                return None
            grows = {
                "replace": lambda: _size(base) * (1 + max(map(_size, args), default=0)),
                "join": lambda: (1 + _size(base)) * sum(map(_size, args[0] if args else [])),
            }
            if func.attr in grows and grows[func.attr]() > MAX_FOLDED_CHARS:
                return None
            return getattr(base, func.attr)(*args)
    return None
