"""Reward-program primitives and the readable programs composed from them.

One module of primitives, used by every generator of reward code: CodeVerify
(`rewardsmith.synth.codeverify` searches for the simplest composition that fits labeled
examples) and the reward-function search (whose evolutionary generator mutates and crosses
compositions with `mutate` and `crossover`).

A `Composition` reads an answer and compares it with the reference:

1. *extractors*, tried in order, the first that finds something wins (`<answer>` tags,
   `\\boxed{}`, "the answer is", a JSON field, `#### N`, a code block, the last line, the last
   number, the whole text);
2. *normalizers*, applied to both sides in a fixed order (case, whitespace, punctuation,
   number formats, list syntax, order of list items);
3. one *comparator* (exact text, numeric value, sequence, multiset, JSON value, or math
   equivalence through the `math` tool).

`render(composition)` writes it as a Python program `def reward(completions, references,
prompts) -> list[float]` that reads like a person wrote it: one small named helper per
primitive, a docstring that says what it accepts. Every primitive's source uses only the
imports of the sandbox's allowlist, so the program passes `check_reward_code` and runs in the
sandbox; the one exception is the `math_equivalent` comparator (`host=True`), which calls the
`math` tool and is served by `rewardsmith.synth.tools.MathComposedTool` instead.

Costs order compositions from simple to elaborate: CodeVerify takes the cheapest one that fits,
so nothing is normalized unless the examples demand it. The primitives' sources and costs
live in `rewardsmith.synth.catalogue`; this module is the API over them.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.answers import embeddable_source
from rewardsmith.sandbox.confine import restricted_globals
from rewardsmith.synth.catalogue import (
    ANY_STYLE,
    COMPARATORS,
    EXTRACTORS,
    HELPERS,
    NORMALIZER_ORDER,
    NORMALIZERS,
    PRIMITIVES,
    REFERENCE_EXTRACTORS,
    Primitive,
)
from rewardsmith.synth.features import FEATURE_HELPERS, FEATURES

__all__ = [
    "ANY_STYLE",
    "COMPARATORS",
    "EXTRACTORS",
    "FAILED",
    "FEATURES",
    "HELPERS",
    "NORMALIZERS",
    "NORMALIZER_ORDER",
    "PRIMITIVES",
    "REFERENCE_EXTRACTORS",
    "Composition",
    "Evaluator",
    "Primitive",
    "ProgramInfo",
    "compile_program",
    "primitive_source",
    "render",
    "render_check",
    "shared_evaluator",
]

# Completions are clipped before any regex runs: answers sit at the end, and regexes on
# megabyte strings take seconds (the same reason as config.MAX_COMPLETION_CHARS).
MAX_COMPLETION_CHARS = 20_000


@dataclass(frozen=True)
class Composition:
    """Extractors (tried in order) -> normalizers (applied in `NORMALIZER_ORDER`) ->
    comparator; optionally an extractor for the reference too. Frozen and hashable, so
    searches can cache by it."""

    extractors: tuple[str, ...] = ("whole_text",)
    normalizers: tuple[str, ...] = ()
    comparator: str = "same_text"
    reference_extractor: str | None = None

    def __post_init__(self) -> None:
        if not self.extractors:
            raise ValueError("a composition needs at least one extractor")
        for name in self.extractors:
            _check(name, EXTRACTORS, "extractor")
        for name in self.normalizers:
            _check(name, NORMALIZERS, "normalizer")
        _check(self.comparator, COMPARATORS, "comparator")
        if self.reference_extractor is not None:
            _check(self.reference_extractor, EXTRACTORS, "reference extractor")
        if len(set(self.extractors)) != len(self.extractors):
            raise ValueError(f"an extractor is listed twice: {self.extractors}")
        ordered = tuple(n for n in NORMALIZER_ORDER if n in self.normalizers)
        object.__setattr__(self, "normalizers", ordered)

    @property
    def cost(self) -> int:
        """Simplicity order: each extra extractor, each normalizer, a richer comparator and a
        reference extractor make a composition more elaborate."""
        return (
            sum(EXTRACTORS[e].cost for e in self.extractors)
            + len(self.extractors)
            - 1
            + sum(NORMALIZERS[n].cost for n in self.normalizers)
            + COMPARATORS[self.comparator].cost
            + (1 if self.reference_extractor else 0)
        )

    @property
    def host(self) -> bool:
        """True when it needs the host's math tool (it cannot run in the sandbox alone)."""
        return COMPARATORS[self.comparator].host

    @property
    def primitives(self) -> list[str]:
        """Every primitive it calls: the extractors (the reference's too), the normalizers,
        the comparator."""
        names = [*self.extractors]
        if self.reference_extractor and self.reference_extractor not in names:
            names.append(self.reference_extractor)
        return [*names, *self.normalizers, self.comparator]

    def describe(self) -> str:
        """One sentence: how the answer is read and compared."""
        read = "; else ".join(EXTRACTORS[e].summary for e in self.extractors)
        norm = ", ".join(NORMALIZERS[n].summary for n in self.normalizers)
        how = COMPARATORS[self.comparator].summary
        text = f"reads {read}; "
        if self.reference_extractor:
            text += f"reads the reference's {EXTRACTORS[self.reference_extractor].summary}; "
        text += f"after {norm}, " if norm else "with no normalization, "
        return text + f"requires {how} as the reference"

    def to_dict(self) -> dict[str, Any]:
        return {
            "extractors": list(self.extractors),
            "normalizers": list(self.normalizers),
            "comparator": self.comparator,
            "reference_extractor": self.reference_extractor,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Composition:
        return cls(
            extractors=tuple(data.get("extractors", ("whole_text",))),
            normalizers=tuple(data.get("normalizers", ())),
            comparator=str(data.get("comparator", "same_text")),
            reference_extractor=data.get("reference_extractor"),
        )


def _check(name: str, table: Mapping[str, Primitive], what: str) -> None:
    if name not in table:
        raise ValueError(f"unknown {what} {name!r}; known: {', '.join(table)}")


# -- rendering -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProgramInfo:
    """What the program's docstring says beyond the composition itself."""

    title: str = "a synthesized verifier"
    notes: tuple[str, ...] = field(default_factory=tuple)


def _closure(names: Sequence[str]) -> list[Primitive]:
    """The primitives named, with the helpers they need first, each once."""
    out: list[Primitive] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        prim = PRIMITIVES.get(name) or HELPERS.get(name) or FEATURES.get(name)
        prim = prim or FEATURE_HELPERS[name]
        for need in prim.needs:
            visit(need)
        out.append(prim)

    for name in names:
        visit(name)
    return out


def _import_lines(prims: Sequence[Primitive]) -> list[str]:
    modules = sorted({i for p in prims for i in p.imports if "." not in i})
    froms = sorted({i for p in prims for i in p.imports if "." in i})
    lines = [f"import {m}" for m in modules]
    lines += [f"from {i.rpartition('.')[0]} import {i.rpartition('.')[2]}" for i in froms]
    return lines


def render(composition: Composition, info: ProgramInfo | None = None) -> str:
    """The composition as a Python program defining `reward(completions, references,
    prompts=None, **kwargs) -> list[float]` (1.0 right, 0.0 wrong), with `BOUNDS = (0.0, 1.0)`.
    """
    info = info or ProgramInfo()
    c = composition
    prims = _closure(c.primitives)
    doc = [f"Reward for {info.title}: 1.0 when the completion's answer matches the reference."]
    doc.append("")
    doc += textwrap.wrap(f"How: {c.describe()}.", 88)
    for note in info.notes:
        doc += ["", *textwrap.wrap(note, 88)]
    parts = ['"""' + "\n".join(doc) + '\n"""']
    imports = _import_lines(prims)
    if imports:
        parts.append("\n".join(imports))
    parts.append(
        "BOUNDS = (0.0, 1.0)\n"
        "# Answers are at the end; regexes on megabyte completions would take seconds.\n"
        f"MAX_COMPLETION_CHARS = {MAX_COMPLETION_CHARS}"
    )
    header = "\n\n".join(parts)
    parts = [header, *(p.source.rstrip("\n") for p in prims)]
    find, readers = _answer_readers(c)
    parts += readers
    ref_line, compared = _comparison(c)
    parts += [HEDGE_SECTION, HEDGE_CHECK, _answer_is_right(compared, ANY_STYLE in c.extractors)]
    parts.append(
        "def score_one(completion, reference):\n"
        '    """1.0 when the answer in the completion matches the reference and the\n'
        '    completion offers no other answer, else 0.0."""\n'
        "    if reference is None:\n"
        "        return 0.0\n"
        f"{ref_line}"
        "    text = completion[-MAX_COMPLETION_CHARS:]\n"
        f"    answer = {find}(text)\n"
        f"    if answer is None{' or reference is None' if c.reference_extractor else ''}:\n"
        "        return 0.0\n"
        "    if hedges(text, reference, answer_is_right, answer):\n"
        "        return 0.0\n"
        "    return 1.0 if answer_is_right(answer, reference) else 0.0"
    )
    parts.append(
        "def reward(completions, references, prompts=None, **kwargs):\n"
        '    """One score per completion; a completion that breaks a helper scores 0.0."""\n'
        "    scores = []\n"
        "    for completion, reference in zip(completions, references):\n"
        "        try:\n"
        '            scores.append(score_one(completion or "", reference))\n'
        "        except Exception:\n"
        "            scores.append(0.0)\n"
        "    return scores"
    )
    return "\n\n\n".join(parts) + "\n"


# Every rendered program reads hedges as the built-in tools do: `rewardsmith.answers`,
# pasted in whole (plain functions over `re`, sandbox-safe), and one check over it.
HEDGE_SECTION = (
    "# -- the final answer in every common style, and hedges (rewardsmith.answers) --\n\n"
    + embeddable_source().strip()
)
HEDGE_CHECK = textwrap.dedent(
    '''
    def hedges(text, reference, is_right, answer=None):
        """Whether the completion hedges: it offers several answers (rewardsmith.answers)
        and not every one is right, or only answers it negates. Answers are split into
        alternatives as the reference allows (`split_for`: a list only at hedging words,
        a sentence not at all)."""
        split = split_for(reference)
        offered, _style, negated_count = read_answers(text, split)
        if not offered:
            return negated_count > 0
        if len(offered) <= 1 or all(is_right(item, reference) for item in offered):
            return False
        # a reference that itself reads as several ("this work or any other work"), and
        # every value offered inside the one answer read: its own words split it
        inside = answer is not None and all(item in answer for item in offered)
        return not (inside and len(read_answers(reference, split)[0]) >= len(offered))
    '''
).strip()


def _answer_is_right(compared: str, sentence_end: bool = False) -> str:
    """`answer_is_right`; `sentence_end`: see `rewardsmith.answers.same_after_sentence_end`."""
    if not sentence_end:
        return (
            "def answer_is_right(answer, reference):\n"
            '    """Whether one answer matches the reference."""\n'
            f"    return bool({compared})"
        )
    return (
        "def same_answer(answer, reference):\n"
        '    """Whether one answer matches the reference as written."""\n'
        f"    return bool({compared})\n\n\n"
        "def answer_is_right(answer, reference):\n"
        '    """Whether one answer matches the reference, or the reference without the\n'
        '    punctuation that ends its sentence."""\n'
        "    return same_after_sentence_end(answer, reference, same_answer)"
    )


def _comparison(c: Composition) -> tuple[str, str]:
    """The line reading the reference (or "") and the comparison expression, shared by
    `render`'s `score_one` and `render_check`'s `answer_matches`."""
    ref_line = (
        f"    reference = {c.reference_extractor}(reference)\n" if c.reference_extractor else ""
    )
    if c.normalizers:
        return ref_line, f"{c.comparator}(normalize(answer), normalize(reference))"
    return ref_line, f"{c.comparator}(answer, reference)"


def _answer_readers(c: Composition) -> tuple[str, list[str]]:
    """The name of the function that finds the answer, and the sources of `find_answer`
    (several extractors) and `normalize` (any normalizer) where the composition needs them."""
    parts = []
    find = c.extractors[0]
    if len(c.extractors) > 1:
        parts.append(
            "def find_answer(text):\n"
            '    """The answer found by the first extractor that finds one, or None."""\n'
            f"    for extract in ({', '.join(c.extractors)}):\n"
            "        answer = extract(text)\n"
            "        if answer is not None:\n"
            "            return answer\n"
            "    return None"
        )
        find = "find_answer"
    if c.normalizers:
        body = "text"
        for n in c.normalizers:
            body = f"{n}({body})"
        parts.append(
            "def normalize(text):\n"
            f'    """{"; ".join(NORMALIZERS[n].summary for n in c.normalizers).capitalize()}."""\n'
            f"    return {body}"
        )
    return find, parts


def primitive_source(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The import lines and the sources (helpers first, each once) of the named primitives:
    extractors, normalizers, comparators and features (`rewardsmith.synth.features`)."""
    prims = _closure(names)
    return _import_lines(prims), [p.source.rstrip("\n") for p in prims]


def render_check(composition: Composition) -> tuple[list[str], list[str]]:
    """The composition as part of a larger program: import lines, and sources ending in
    `def answer_matches(text, reference) -> bool` (the same reading and comparison as
    `render`'s `score_one`). The program must define `MAX_COMPLETION_CHARS`."""
    c = composition
    imports, sources = primitive_source(c.primitives)
    find, readers = _answer_readers(c)
    ref_line, compared = _comparison(c)
    check = (
        "def answer_matches(text, reference):\n"
        f'    """Whether the answer matches, and no other answer is offered: {c.describe()}."""\n'
        "    if reference is None:\n"
        "        return False\n"
        f"{ref_line}"
        "    text = text[-MAX_COMPLETION_CHARS:]\n"
        f"    answer = {find}(text)\n"
        "    if answer is None or reference is None:\n"
        "        return False\n"
        "    if hedges(text, reference, answer_is_right, answer):\n"
        "        return False\n"
        "    return answer_is_right(answer, reference)"
    )
    extra = [HEDGE_SECTION, HEDGE_CHECK, _answer_is_right(compared, ANY_STYLE in c.extractors)]
    return imports, [*sources, *readers, *extra, check]


def compile_program(source: str, host: Mapping[str, Callable[..., Any]] | None = None) -> Any:
    """Execute *trusted* program source (rendered here from the primitives) in the sandbox's
    restricted namespace, in this process, and return that namespace: searches call its
    functions directly instead of paying a sandbox run per candidate. Never use it on code an
    LLM or a user wrote: that runs only in the sandbox (`check_reward_code`).
    `host` replaces host primitives (`math_equivalent`) by real functions."""
    namespace = restricted_globals()
    exec(compile(source, "<composition>", "exec"), namespace)  # noqa: S102 - trusted templates
    namespace.update(host or {})
    return namespace


# -- evaluation in this process (for searches) ---------------------------------------------


# Primitive outputs an `Evaluator` keeps; a long-lived one starts over past this.
EVALUATOR_CACHE_SIZE = 500_000


class _Failed:
    """A primitive raised: the rendered program scores that completion 0.0."""


FAILED = _Failed()


class Evaluator:
    """Scores compositions on (completion, reference) pairs in this process, exactly as
    `render(composition)`'s `reward` would (a primitive that raises means 0.0), caching each
    primitive's output per text: a search tries thousands of compositions on one set of
    cases. Host comparators need `host` (see `compile_program`)."""

    def __init__(self, host: Mapping[str, Callable[..., Any]] | None = None) -> None:
        prims = _closure([*PRIMITIVES, *HELPERS])
        source = "\n\n".join([HEDGE_SECTION, HEDGE_CHECK, *(p.source for p in prims)])
        self._ns = compile_program("\n".join(_import_lines(prims)) + "\n\n" + source, host)
        self.host_functions: dict[str, Callable[..., Any]] = dict(host or {})
        self._cache: dict[tuple[str, str, str], Any] = {}

    def apply(self, name: str, text: str, other: str = "") -> Any:
        """One primitive on a text (a comparator on `text` and `other`), cached; `FAILED`
        when it raises."""
        key = (name, text, other)
        if key not in self._cache:
            if len(self._cache) >= EVALUATOR_CACHE_SIZE:
                self._cache.clear()
            fn = self._ns[name]
            try:
                self._cache[key] = fn(text, other) if name in COMPARATORS else fn(text)
            except Exception:
                self._cache[key] = FAILED
        return self._cache[key]

    def extract(self, composition: Composition, completion: str) -> Any:
        """The answer (str), None when no extractor finds one, or `FAILED`."""
        text = (completion or "")[-MAX_COMPLETION_CHARS:]
        for name in composition.extractors:
            answer = self.apply(name, text)
            if answer is not None:
                return answer
        return None

    def score(self, composition: Composition, completion: str, reference: str | None) -> float:
        """1.0 or 0.0, exactly what `render(composition)`'s `reward` returns."""
        if reference is None:
            return 0.0
        ref: Any = reference
        if composition.reference_extractor:
            ref = self.apply(composition.reference_extractor, reference)
        answer = self.extract(composition, completion)
        if answer is None or ref is None or answer is FAILED or ref is FAILED:
            return 0.0
        if self.hedges(composition, (completion or "")[-MAX_COMPLETION_CHARS:], ref, answer):
            return 0.0
        return 1.0 if self._right(composition, answer, ref) else 0.0

    def _right(self, composition: Composition, answer: str, ref: str) -> bool:
        """The rendered `answer_is_right` (a reference's sentence end aside, any-style)."""
        if ANY_STYLE in composition.extractors:
            return bool(
                self._ns["same_after_sentence_end"](
                    answer, ref, lambda a, r: self._same(composition, a, r)
                )
            )
        return self._same(composition, answer, ref)

    def _same(self, composition: Composition, answer: str, ref: str) -> bool:
        """Normalize both sides, compare."""
        for name in composition.normalizers:
            answer, ref = self.apply(name, answer), self.apply(name, ref)
            if answer is FAILED or ref is FAILED:
                return False
        same = self.apply(composition.comparator, answer, ref)
        return same is not FAILED and bool(same)

    def hedges(self, composition: Composition, text: str, ref: str, answer: Any = None) -> bool:
        """The rendered `hedges`: several answers offered and not every one right, or only
        negated ones (`rewardsmith.answers`); cached per text like a primitive."""
        offered, _, negated = self._reading(text, ref)
        if not offered:
            return bool(negated)
        if len(offered) <= 1 or all(self._right(composition, o, ref) for o in offered):
            return False
        inside = answer is not None and all(item in answer for item in offered)
        return not (inside and len(self._reading(ref, ref)[0]) >= len(offered))

    def _reading(self, text: str, ref: str) -> Any:
        """`read_answers(text, split_for(ref))`, cached per text like a primitive."""
        key = ("hedge-reading", text, ref)
        if key not in self._cache:
            try:
                self._cache[key] = self._ns["read_answers"](text, self._ns["split_for"](ref))
            except Exception:
                self._cache[key] = ([], "", 0)
        return self._cache[key]


@functools.lru_cache(maxsize=1)
def shared_evaluator() -> Evaluator:
    """One evaluator (without host primitives) per process: compiling the catalogue once."""
    return Evaluator()
