"""Reward programs the offline generator evolves: weighted terms over feature primitives and
an answer check, rendered as readable Python.

A `RewardProgram` is a sum of `Term`s. Each term measures one feature of the response
(`rewardsmith.synth.features`: lines, length, arithmetic density, equations, tags...) or
whether its answer matches the reference (`answer_correct`, read and compared by a
`Composition` of `rewardsmith.synth.primitives`), turns the raw value into a number in
[0, 1] by a *shape*, and adds it with a weight in [-1, 1]; a term may count only for
responses whose answer is right (`when="correct"`) or wrong (`when="wrong"`). The program's
`BOUNDS` are the sums of its negative and of its positive weights.

Shapes (x is the feature's raw value, t the term's parameter):

| shape | value |
|---|---|
| `value` | x clipped to [0, 1] (shares and flags) |
| `at_least` | 1 if x >= t else 0 |
| `at_most` | 1 if x <= t else 0 |
| `near` | max(0, 1 - abs(x - t) / max(t, 1)) |
| `up_to` | min(1, x / t) |

`mutate_program` and `crossover_program` are the evolutionary operators; the answer check
evolves with the shared `variation.mutate` and `variation.crossover`.
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rewardsmith.synth.features import (
    DEFAULT_ANSWER_TAG,
    DEFAULT_THINK_TAG,
    FEATURE_CONSTANTS,
    FEATURE_INFO,
    FEATURES,
    FeatureInfo,
)
from rewardsmith.synth.primitives import (
    MAX_COMPLETION_CHARS,
    Composition,
    primitive_source,
    render_check,
)
from rewardsmith.synth.variation import crossover, mutate

#: The term that checks the answer against the reference with the program's composition.
ANSWER_CORRECT = "answer_correct"
SHAPES: tuple[str, ...] = ("value", "at_least", "at_most", "near", "up_to")
#: Shapes that make sense for each unit of raw value.
SHAPES_FOR_UNIT: dict[str, tuple[str, ...]] = {
    "share": ("value", "at_least", "at_most"),
    "flag": ("value",),
    "count": ("at_least", "at_most", "near", "up_to"),
    "chars": ("at_most", "near", "up_to", "at_least"),
}
WHEN: tuple[str | None, ...] = (None, "correct", "wrong")
WEIGHTS: tuple[float, ...] = (-1.0, -0.5, -0.25, 0.25, 0.5, 1.0)
MAX_TERMS = 4
# Edits tried before `mutate_program` gives up finding one that changes the program.
MUTATION_TRIES = 50
#: The answer check a random program starts from: the answer tag's content as a number.
DEFAULT_ANSWER = Composition(("whole_text",), (), "same_number")
_ANSWER_INFO = FeatureInfo("flag", needs_reference=True)


def feature_info(name: str) -> FeatureInfo:
    """The unit and thresholds of a feature (or of `answer_correct`)."""
    if name == ANSWER_CORRECT:
        return _ANSWER_INFO
    if name not in FEATURE_INFO:
        raise ValueError(f"unknown feature {name!r}; known: {', '.join(FEATURE_INFO)}")
    return FEATURE_INFO[name]


@dataclass(frozen=True)
class Term:
    """One weighted part of a program: `weight * shape(feature(response), param)`, counted
    only for right (`when="correct"`) or wrong (`"wrong"`) answers when `when` is set."""

    feature: str
    weight: float = 1.0
    shape: str = "value"
    param: float = 1.0
    when: str | None = None

    def __post_init__(self) -> None:
        info = feature_info(self.feature)
        if self.shape not in SHAPES_FOR_UNIT[info.unit]:
            raise ValueError(f"shape {self.shape!r} does not fit {self.feature} ({info.unit})")
        if self.when not in WHEN:
            raise ValueError(f"when must be one of {WHEN}, got {self.when!r}")
        if not (-1.0 <= self.weight <= 1.0) or self.weight == 0:
            raise ValueError(f"weight must be non-zero within [-1, 1], got {self.weight}")
        if self.shape == "up_to" and self.param <= 0:
            raise ValueError("up_to needs a positive parameter")

    @property
    def key(self) -> tuple[str, str | None]:
        """A program holds at most one term per (feature, when)."""
        return (self.feature, self.when)

    def describe(self) -> str:
        """`+0.50 x char_length near 120 (right answers only)`."""
        how = (
            self.feature if self.shape == "value" else f"{self.feature} {self.shape} {self.param:g}"
        )
        when = {None: "", "correct": " (right answers only)", "wrong": " (wrong answers only)"}
        return f"{self.weight:+.2f} x {how}{when[self.when]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "feature": self.feature,
            "weight": self.weight,
            "shape": self.shape,
            "param": self.param,
            "when": self.when,
        }


@dataclass(frozen=True)
class RewardProgram:
    """Terms (summed) and the answer check they may use (see the module docstring)."""

    terms: tuple[Term, ...]
    answer: Composition = field(default=DEFAULT_ANSWER)
    #: Read the answer inside the answer tag (None when there is no such block); else read
    #: it from the whole response.
    answer_in_tag: bool = True

    def __post_init__(self) -> None:
        if not self.terms:
            raise ValueError("a reward program needs at least one term")
        keys = [t.key for t in self.terms]
        if len(set(keys)) != len(keys):
            raise ValueError(f"a (feature, when) pair is listed twice: {keys}")
        if self.answer.host:
            raise ValueError("a reward program runs in the sandbox: no host comparators")

    @property
    def bounds(self) -> tuple[float, float]:
        return (
            float(sum(t.weight for t in self.terms if t.weight < 0)),
            float(sum(t.weight for t in self.terms if t.weight > 0)),
        )

    @property
    def checks_answer(self) -> bool:
        return any(t.feature == ANSWER_CORRECT or t.when for t in self.terms)

    @property
    def structural(self) -> bool:
        """True when no term reads the reference."""
        return not any(t.when or feature_info(t.feature).needs_reference for t in self.terms)

    def describe(self) -> str:
        return "; ".join(t.describe() for t in self.terms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "terms": [t.to_dict() for t in self.terms],
            "answer": self.answer.to_dict(),
            "answer_in_tag": self.answer_in_tag,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardProgram:
        return cls(
            terms=tuple(Term(**t) for t in data["terms"]),
            answer=Composition.from_dict(data.get("answer") or DEFAULT_ANSWER.to_dict()),
            answer_in_tag=bool(data.get("answer_in_tag", True)),
        )


# -- rendering ------------------------------------------------------------------------------

_SHAPE_SOURCE = '''
def shaped(value, shape, target):
    """A raw feature value as a number in [0, 1] (see the shapes in the docstring)."""
    if shape == "at_least":
        return 1.0 if value >= target else 0.0
    if shape == "at_most":
        return 1.0 if value <= target else 0.0
    if shape == "near":
        return max(0.0, 1.0 - abs(value - target) / max(target, 1.0))
    if shape == "up_to":
        return min(1.0, max(0.0, value / target))
    return min(1.0, max(0.0, float(value)))
'''.strip()


def render_program(
    program: RewardProgram,
    *,
    name: str,
    origin: str = "",
    think_tag: str = DEFAULT_THINK_TAG,
    answer_tag: str = DEFAULT_ANSWER_TAG,
) -> str:
    """The program as a Python module `def reward(completions, references, prompts=None,
    **kwargs) -> list[float]` with `BOUNDS`, readable and sandbox-safe."""
    low, high = program.bounds
    features = sorted({t.feature for t in program.terms if t.feature != ANSWER_CORRECT})
    imports, sources = primitive_source([*features, "tag_content"])
    if program.checks_answer:
        check_imports, check_sources = render_check(program.answer)
        imports = sorted(set(imports) | set(check_imports), key=_import_order)
        sources += [s for s in check_sources if s not in sources]
    doc = [f"Reward program {name}" + (f": {origin}." if origin else "."), ""]
    doc.append("The sum of these terms (each in [0, 1] before its weight):")
    doc += [f"- {t.describe()}" for t in program.terms]
    if program.checks_answer:
        where = f"inside <{answer_tag}>" if program.answer_in_tag else "in the whole response"
        doc += ["", *textwrap.wrap(f"Answer check ({where}): {program.answer.describe()}.", 88)]
    constants = [
        f"BOUNDS = ({low!r}, {high!r})",
        f"THINK_TAG = {think_tag!r}",
        f"ANSWER_TAG = {answer_tag!r}",
        f"MAX_COMPLETION_CHARS = {MAX_COMPLETION_CHARS}",
        *(f"{k} = {v!r}" for k, v in FEATURE_CONSTANTS.items()),
    ]
    header = ['"""' + "\n".join(doc).replace("\\", "\\\\") + '\n"""']
    if imports:
        header.append("\n".join(imports))
    header.append("\n".join(constants))
    body = ["    total = 0.0"]
    if program.checks_answer:
        region = (
            "tag_content(completion, ANSWER_TAG) or ''" if program.answer_in_tag else "completion"
        )
        body.insert(0, f"    correct = answer_matches({region}, reference)")
    for t in program.terms:
        value = (
            "(1.0 if correct else 0.0)"
            if t.feature == ANSWER_CORRECT
            else f"shaped({t.feature}(completion, reference, prompt), {t.shape!r}, {t.param!r})"
        )
        line = f"total += {t.weight!r} * {value}"
        if t.when:
            line = f"if {'' if t.when == 'correct' else 'not '}correct:\n        {line}"
        body.append(f"    # {t.describe()}\n    {line}")
    body.append("    return round(total, 6)")
    score_one = (
        "def score_one(completion, reference, prompt):\n"
        '    """The weighted sum of the terms for one response."""\n' + "\n".join(body)
    )
    reward = (
        "def reward(completions, references, prompts=None, **kwargs):\n"
        '    """One score per completion; a response that breaks a helper scores 0.0."""\n'
        "    prompts = prompts or [None] * len(completions)\n"
        "    scores = []\n"
        "    for completion, reference, prompt in zip(completions, references, prompts):\n"
        "        try:\n"
        '            text = (completion or "")[-MAX_COMPLETION_CHARS:]\n'
        "            scores.append(score_one(text, reference, prompt))\n"
        "        except Exception:\n"
        "            scores.append(0.0)\n"
        "    return scores"
    )
    parts = ["\n\n".join(header), *sources, _SHAPE_SOURCE, score_one, reward]
    return "\n\n\n".join(parts) + "\n"


def _import_order(line: str) -> tuple[int, str]:
    return (line.startswith("from "), line)


# -- the evolutionary operators -----------------------------------------------------------


def _params(info: FeatureInfo) -> tuple[float, ...]:
    return info.thresholds or (1.0,)


def random_term(rng: random.Random, features: Sequence[str] | None = None) -> Term:
    """A random term over `features` (default: every feature and the answer check)."""
    pool = list(features or [ANSWER_CORRECT, *FEATURES])
    feature = rng.choice(pool)
    info = feature_info(feature)
    shape = rng.choice(SHAPES_FOR_UNIT[info.unit])
    param = float(rng.choice(_params(info)))
    if shape == "up_to" and param <= 0:
        param = 1.0
    when = None if feature == ANSWER_CORRECT else rng.choice(WHEN)
    return Term(feature, rng.choice(WEIGHTS), shape, param, when)


def random_program(rng: random.Random, features: Sequence[str] | None = None) -> RewardProgram:
    """One to three random terms (a seed of the evolutionary search)."""
    terms: dict[tuple[str, str | None], Term] = {}
    for _ in range(rng.randint(1, 3)):
        term = random_term(rng, features)
        terms.setdefault(term.key, term)
    return RewardProgram(tuple(terms.values()))


def _retune(term: Term, rng: random.Random) -> Term:
    info = feature_info(term.feature)
    options = [
        p for p in _params(info) if p != term.param and not (term.shape == "up_to" and p <= 0)
    ]
    return replace(term, param=float(rng.choice(options))) if options else term


def mutate_program(
    program: RewardProgram, rng: random.Random, features: Sequence[str] | None = None
) -> tuple[RewardProgram, str]:
    """One random edit and what it was: a term's weight, shape, parameter or condition
    changed, a term added, dropped or swapped for another feature, or the answer check
    mutated (`variation.mutate`). The result is a valid program that differs from the
    parent (when no edit tried changes it, which needs a degenerate feature list, the
    parent itself)."""
    for _ in range(MUTATION_TRIES):
        child, what = _edit(program, rng, features)
        if child != program:
            return child, what
    return program, "unchanged"


def _edit(
    program: RewardProgram, rng: random.Random, features: Sequence[str] | None
) -> tuple[RewardProgram, str]:
    terms = list(program.terms)
    i = rng.randrange(len(terms))
    t = terms[i]
    moves = ["weight", "param", "shape", "when", "add", "swap", "answer"]
    if len(terms) > 1:
        moves.append("drop")
    move = rng.choice(moves)
    if move == "weight":
        terms[i] = replace(t, weight=rng.choice([w for w in WEIGHTS if w != t.weight]))
        what = f"weight of {t.feature} {t.weight:+g} -> {terms[i].weight:+g}"
    elif move == "param":
        terms[i] = _retune(t, rng)
        what = f"threshold of {t.feature} {t.param:g} -> {terms[i].param:g}"
    elif move == "shape":
        shapes = [s for s in SHAPES_FOR_UNIT[feature_info(t.feature).unit] if s != t.shape]
        terms[i] = replace(t, shape=rng.choice(shapes)) if shapes else _retune(t, rng)
        what = f"shape of {t.feature} {t.shape} -> {terms[i].shape}"
    elif move == "when" and t.feature != ANSWER_CORRECT:
        taken = {x.key for j, x in enumerate(terms) if j != i}
        whens = [w for w in WHEN if w != t.when and (t.feature, w) not in taken]
        if not whens:
            return program, "no change"
        terms[i] = replace(t, when=rng.choice(whens))
        what = f"{t.feature} counts {terms[i].when or 'always'} (was {t.when or 'always'})"
    elif move == "add" and len(terms) < MAX_TERMS:
        new = random_term(rng, features)
        if new.key in {x.key for x in terms}:
            return program, "no change"
        terms.append(new)
        what = f"added {new.describe()}"
    elif move == "drop":
        terms.pop(i)
        what = f"dropped {t.describe()}"
    elif move == "swap":
        new = random_term(rng, features)
        new = replace(new, weight=t.weight, when=None if new.feature == ANSWER_CORRECT else t.when)
        if new.key in {x.key for j, x in enumerate(terms) if j != i}:
            return program, "no change"
        terms[i] = new
        what = f"{t.feature} -> {new.feature}"
    else:
        answer = mutate(program.answer, rng, sandboxed=True)
        return replace(program, answer=answer), f"answer check: {answer.describe()}"
    return replace(program, terms=tuple(terms)), what


def crossover_program(a: RewardProgram, b: RewardProgram, rng: random.Random) -> RewardProgram:
    """A child whose terms come from either parent (each distinct term with probability
    1/2, at least one, at most `MAX_TERMS`) and whose answer check is the shared
    `variation.crossover` of theirs."""
    pool: dict[tuple[str, str | None], Term] = {}
    for term in (*a.terms, *b.terms):
        if term.key not in pool and rng.random() < 0.5:
            pool[term.key] = term
    terms = list(pool.values()) or [rng.choice([*a.terms, *b.terms])]
    if len(terms) > MAX_TERMS:
        terms = rng.sample(terms, MAX_TERMS)
    return RewardProgram(
        tuple(terms),
        answer=crossover(a.answer, b.answer, rng),
        answer_in_tag=rng.choice([a.answer_in_tag, b.answer_in_tag]),
    )
