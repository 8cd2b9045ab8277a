"""CodeVerify, offline: the simplest composition of primitives that fits the examples.

`fit_composition(cases)` enumerates compositions of `rewardsmith.synth.primitives` from the
simplest up (no normalization, exact text) and returns the first that scores
every positive case 1 and every negative 0; when none does within the search budget, the one
with the best accuracy (then the simplest). Every composition reads the answer the same
way, `answer_in_any_style` (`rewardsmith.answers.read_final`: every common style, one
documented precedence, sentence punctuation stripped): a style the examples never show is
read like the ones they do, and only the *comparison* is learned. The `math` comparator is
tried only when a host evaluator provides it.

Strictness comes from the evidence, not from a default: a labeled wrong completion whose
answer differs from the reference only in case rules out `lowercase`; a labeled right one
that differs in case requires it; with no such evidence, nothing is normalized.

`synthesize_offline(examples)` is the whole offline path: split the examples, build cases
from the fit part (`rewardsmith.synth.cases`), fit, and render the program
(`CodeCandidate`); the gate then judges it on the held-out part.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.synth.cases import Case, build_cases, relation, styles_of
from rewardsmith.synth.catalogue import ANY_STYLE_AS_WRITTEN
from rewardsmith.synth.examples import Example, answer_of, split_examples
from rewardsmith.synth.primitives import (
    ANY_STYLE,
    COMPARATORS,
    EXTRACTORS,
    FAILED,
    NORMALIZERS,
    REFERENCE_EXTRACTORS,
    Composition,
    Evaluator,
    ProgramInfo,
    render,
    shared_evaluator,
)
from rewardsmith.synth.prompt_rules import prompt_cases
from rewardsmith.synth.variation import enumerate_compositions, extractor_cascades

# Search budget: compositions tried before settling for the most accurate one seen.
MAX_TRIED = 60_000
MAX_EXTRACTORS = 5
MAX_NORMALIZERS = 2


@dataclass(frozen=True)
class FitResult:
    """The composition chosen, its accuracy on the fit cases and what the search cost."""

    composition: Composition
    accuracy: float
    positives: int
    negatives: int
    misses: tuple[Case, ...]
    tried: int
    seconds: float

    @property
    def perfect(self) -> bool:
        return not self.misses

    def to_dict(self) -> dict[str, Any]:
        return {
            "composition": self.composition.to_dict(),
            "cost": self.composition.cost,
            "fit_accuracy": round(self.accuracy, 4),
            "fit_positives": self.positives,
            "fit_negatives": self.negatives,
            "fit_misses": len(self.misses),
            "tried": self.tried,
            "seconds": round(self.seconds, 3),
        }


def _fires(evaluator: Evaluator, name: str, text: str) -> bool:
    out = evaluator.apply(name, text)
    return out is not None and out is not FAILED


def fit_composition(
    cases: Sequence[Case],
    evaluator: Evaluator | None = None,
    *,
    max_tried: int = MAX_TRIED,
    any_style: bool = True,
) -> FitResult:
    """The simplest composition that scores every case as labeled (see module docstring).
    `any_style` (the default): every composition reads the answer with `ANY_STYLE`, and
    only the normalizers and the comparator are searched; False: the extractors too."""
    start = time.perf_counter()
    ev = evaluator or shared_evaluator()
    positives = [c for c in cases if c.label == 1]
    negatives = [c for c in cases if c.label == 0]
    if any_style:
        # Where the answer is is not learned: one reading of every style (issue 22).
        # A task that counts a sentence's period (a labeled example says so) keeps it.
        cascades: list[tuple[str, ...]] = [(ANY_STYLE,), (ANY_STYLE_AS_WRITTEN,)]
    else:
        firing = {name: [_fires(ev, name, c.completion) for c in positives] for name in EXTRACTORS}
        extractors = [name for name, hits in firing.items() if any(hits)] or ["whole_text"]
        # Cascades that find some answer in every positive; if none does, all of them.
        cascades = extractor_cascades(extractors, MAX_EXTRACTORS)
        covering = [
            cascade
            for cascade in cascades
            if all(any(firing[name][i] for name in cascade) for i in range(len(positives)))
        ]
        cascades = covering or cascades
    reference_extractors: list[str | None] = [None]
    reference_extractors += [
        name
        for name in REFERENCE_EXTRACTORS
        if any(_fires(ev, name, c.reference) for c in cases)
        and any(answer_of(c.reference) != c.reference.strip() for c in cases)
    ]
    comparators = [
        name for name, p in COMPARATORS.items() if not p.host or name in ev.host_functions
    ]
    best: tuple[int, Composition] | None = None  # (cases scored wrong, composition)
    tried = 0
    # Positives are checked first: most compositions fail on one of them at once.
    ordered = positives + negatives
    for comp in enumerate_compositions(
        cascades=cascades,
        normalizers=tuple(NORMALIZERS),
        max_normalizers=MAX_NORMALIZERS,
        comparators=comparators,
        reference_extractors=reference_extractors,
    ):
        tried += 1
        wrong = 0
        for case in ordered:
            if ev.score(comp, case.completion, case.reference) != case.label:
                wrong += 1
                if best is not None and wrong >= best[0]:
                    break
        if best is None or wrong < best[0]:
            best = (wrong, comp)
        if wrong == 0 or tried >= max_tried:
            break
    assert best is not None
    chosen = best[1]
    misses = tuple(c for c in ordered if ev.score(chosen, c.completion, c.reference) != c.label)
    total = max(len(ordered), 1)
    return FitResult(
        chosen,
        1.0 - len(misses) / total,
        len(positives),
        len(negatives),
        misses,
        tried,
        time.perf_counter() - start,
    )


@dataclass(frozen=True)
class CodeCandidate:
    """A synthesized verifier before the gate: its source, how it was made, and the split."""

    source: str
    method: str  # "codeverify-offline" or "codeverify-llm"
    fit: list[Example]
    held_out: list[Example]
    details: dict[str, Any] = field(default_factory=dict)
    composition: Composition | None = None


def split_for_synthesis(examples: Sequence[Example]) -> tuple[list[Example], list[Example]]:
    """`split_examples` stratified by label and by how the completion's answer relates to
    the reference (exact, form only, content), so form evidence reaches the fit first."""
    return split_examples(examples, lambda e: (e.label, relation(e)))


def fit_cases(fit: Sequence[Example], all_examples: Sequence[Example], seed: int = 0) -> list[Case]:
    """The cases a verifier is fit on: `fit`'s lines in the styles of every completion (styles
    are presentation, not labels, so all examples show them), wrong answers drawn from every
    line's answer, and right answers the prompts' own words accept (`prompt_rules`)."""
    styles = styles_of([e.completion for e in all_examples if e.completion])
    pool = [answer_of(e.reference) for e in all_examples]
    # what the prompts say the task accepts ("in any order") is evidence too
    return build_cases(fit, styles, pool, seed) + prompt_cases(fit, styles)


def synthesize_offline(
    examples: Sequence[Example],
    title: str = "a synthesized verifier",
    evaluator: Evaluator | None = None,
) -> CodeCandidate:
    """Split, fit and render: the offline CodeVerify candidate for `examples`."""
    fit, held = split_for_synthesis(examples)
    cases = fit_cases(fit, examples)
    result = fit_composition(cases, evaluator)
    notes = (
        f"Written by rewardsmith CodeVerify (offline) from {len(fit)} of {len(examples)} "
        f"examples ({sum(e.labeled for e in fit)} with labeled completions); "
        f"{len(held)} were held out to judge it.",
    )
    source = render(result.composition, ProgramInfo(title, notes))
    return CodeCandidate(
        source=source,
        method="codeverify-offline",
        fit=fit,
        held_out=held,
        details={"fit_cases": len(cases), **result.to_dict()},
        composition=result.composition,
    )
