"""Offline CodeVerify: the simplest composition that fits, strictness learned from labeled
evidence (never assumed), every answer style the completions use, and agreement with
reasoning-gym's own scorers on fresh samples of families no built-in verifier covers."""

from __future__ import annotations

import pytest

from rewardsmith.bench.codeverify_data import examples_for, fresh_samples
from rewardsmith.library.store import Library
from rewardsmith.synth.codeverify import fit_cases, fit_composition, synthesize_offline
from rewardsmith.synth.examples import Example, parse_example
from rewardsmith.synth.pipeline import codeverify
from rewardsmith.synth.primitives import ANY_STYLE, compile_program
from rewardsmith.types import Sample

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def weekday_examples(form_label: int | None) -> list[Example]:
    """Weekday answers in <answer> tags; with `form_label`, a completion answering in lower
    case, labeled right (1) or wrong (0)."""
    lines = [
        Example(f"What day follows {WEEKDAYS[i - 1]}?", day, f"<answer>{day}</answer>", 1)
        for i, day in enumerate(WEEKDAYS[:4], start=1)
    ]
    lines.append(Example("Day after Sunday?", "Monday", "<answer>Tuesday</answer>", 0))
    lines += [Example(f"Day {i}?", d) for i, d in enumerate(WEEKDAYS[4:])]
    if form_label is not None:
        lines.append(
            Example("Which day is day five?", "Friday", "<answer>friday</answer>", form_label)
        )
        lines.append(Example("Day six?", "Saturday", "<answer>saturday</answer>", form_label))
    return lines


def test_with_no_evidence_nothing_is_normalized() -> None:
    lines = weekday_examples(None)
    fit = fit_composition(fit_cases(lines, lines))
    assert fit.perfect and fit.composition.normalizers == ()
    assert fit.composition.comparator == "same_text"


def test_a_right_answer_in_another_case_teaches_the_task_is_lenient() -> None:
    lines = weekday_examples(1)
    fit = fit_composition(fit_cases(lines, lines))
    assert fit.perfect and fit.composition.normalizers == ("lowercase",)


def test_a_wrong_answer_differing_only_in_case_teaches_the_task_is_strict() -> None:
    lines = weekday_examples(0)
    fit = fit_composition(fit_cases(lines, lines))
    assert fit.perfect and "lowercase" not in fit.composition.normalizers
    program = compile_program(synthesize_offline(lines).source)
    assert program["reward"](
        ["<answer>Friday</answer>", "<answer>FRIDAY</answer>"], ["Friday"] * 2
    ) == [1.0, 0.0]


def test_every_common_style_is_read_even_ones_no_example_shows() -> None:
    styles = [
        "<think>...</think><answer>{}</answer>",
        "Working.\nThe answer is: {}",
        "So \\boxed{{{}}}",
        "Reasoning here.\n\n{}",
    ]
    lines = [
        Example(f"Reverse word {i}", w[::-1], styles[i % 4].format(w[::-1]), 1)
        for i, w in enumerate(["alpha", "gamma", "delta", "omega", "sigma", "kappa"])
    ] + [Example(f"Reverse {w}", w[::-1]) for w in ["theta", "lambda", "iota"]]
    candidate = synthesize_offline(lines)
    # where the answer is is never learned: one reading of every style
    assert candidate.composition.extractors == (ANY_STYLE,)  # type: ignore[union-attr]
    program = compile_program(candidate.source)
    unseen = [
        "Final answer: {}",
        "The answer is {}.",  # the sentence's period is not part of the answer
        '{{"answer": "{}"}}',
        "Reversed: {}",  # a label and colon
        "Done.\n```\n{}\n```",
        "**Answer:** {}",
        "#### {}",
    ]
    every = styles + unseen
    completions = [s.format("atad") for s in every] + [s.format("atab") for s in every]
    assert program["reward"](completions, ["atad"] * len(completions)) == [1.0] * len(every) + [
        0.0
    ] * len(every)


# Three families with different graders: case-insensitive words, comma lists read item by
# item, JSON groups in any order. The bench (bench/bench_codeverify.py) runs all fifteen.
FAST_FAMILIES = ("spell_backward", "word_sorting", "group_anagrams")


@pytest.mark.parametrize("family", FAST_FAMILIES)
def test_agrees_with_reasoning_gym_on_fresh_samples(family: str, library: Library) -> None:
    examples = [parse_example(x, f"{family}:{i}") for i, x in enumerate(examples_for(family), 1)]
    outcome = codeverify(examples, family, library)
    assert outcome.admitted, outcome.reason
    fresh = fresh_samples(family, 80)
    tool = library.get(family)
    rewards = tool.score([Sample(s["completion"], s["prompt"], s["reference"]) for s in fresh])
    assert all(r.status == "ok" for r in rewards)
    agree = sum(
        ((r.score or 0.0) >= 0.5) == bool(s["label"]) for r, s in zip(rewards, fresh, strict=True)
    )
    assert agree / len(fresh) >= 0.95


def test_equivalent_number_forms_are_learned_through_the_math_tool(library: Library) -> None:
    fractions = [(1, 2), (3, 4), (1, 5), (2, 5), (7, 8), (5, 8), (1, 4), (3, 5), (9, 10)]
    lines = []
    for i, (a, b) in enumerate(fractions):
        ref = f"\\frac{{{a}}}{{{b}}}"
        if i < 6:
            right = i % 2 == 0
            given = str(a / b) if right else str(round(a / b + 0.05, 3))
            lines.append(
                Example(f"Simplify {a * 3}/{b * 3}.", ref, f"So \\boxed{{{given}}}.", int(right))
            )
        else:
            lines.append(Example(f"Simplify {a * 2}/{b * 2}.", ref))
    outcome = codeverify(lines, "fractions", library)
    assert outcome.details["composition"]["comparator"] == "math_equivalent"
    assert outcome.admitted, outcome.reason
    tool = library.get("fractions")
    rewards = tool.score(
        [
            Sample("So \\boxed{0.25}.", "p", "\\frac{1}{4}"),
            Sample("\\boxed{0.3}", "p", "\\frac{1}{4}"),
        ]
    )
    assert [r.score for r in rewards] == [1.0, 0.0]
    assert "math_equivalent" in library.record("fractions").config["params"]["source"]
