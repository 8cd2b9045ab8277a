"""The gate's `styles` check: each held-out right answer rewritten in every common style.

A verifier fit on a dozen examples sees two or three answer styles; training produces all
of them. So the gate writes each held-out line's right answer in every style of the exploit
corpus's right-answer variants (`rewardsmith.exploits.variants.style_variants`: `<answer>`
tags, `\\boxed{}`, `#### X`, "Final answer: X", "The answer is X.", "**Answer:** X", a
fenced block, X alone on the last line), and, for a synthesized verifier (provenance
`synth`), two more that every one reads: a JSON `answer` field and a label and colon
("Result: X"); a built-in tool is held to the common styles of `rewardsmith.answers`. A multi-line answer is written
only in the styles that can hold one (tags, a fenced block, JSON).

A style *is refused* when a rewrite of a line whose plain right answer the tool pays
scores below the threshold; any refused style rejects the tool (`checks["styles"]` says
which styles, how many lines, and one example).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from rewardsmith.exploits.variants import style_variants
from rewardsmith.synth.examples import Example, answer_of

# Styles beyond `rewardsmith.answers.STYLES` that every synthesized verifier reads.
EXTRA_STYLES: tuple[tuple[str, str], ...] = (
    ("json_answer", "{json}"),
    ("label_colon", "Result: {answer}"),
)
MULTILINE_STYLES = ("answer_tags", "fenced", "json_answer")
QUOTED = 160


def style_rewrites(
    lines: Sequence[Example], seed: int = 0, extra: bool = True
) -> list[tuple[int, str, str]]:
    """(line index, style, completion): each line's right answer in every common style;
    `extra`: in `EXTRA_STYLES` too (for synthesized verifiers, which read them)."""
    rng = random.Random(f"styles:{seed}")
    out: list[tuple[int, str, str]] = []
    for i, line in enumerate(lines):
        gold = answer_of(line.reference)
        if not gold.strip():
            continue
        written = list(style_variants(gold, None, rng))
        for style, template in EXTRA_STYLES if extra else ():
            text = template.replace("{json}", json.dumps({"answer": gold}))
            written.append((style, text.replace("{answer}", gold)))
        multiline = "\n" in gold.strip()
        out += [
            (i, style, text)
            for style, text in written
            if not multiline or style in MULTILINE_STYLES
        ]
    return out


def judge_styles(
    rewrites: Sequence[tuple[int, str, str]],
    scores: Sequence[float],
    right_scores: Sequence[float],
    threshold: float,
) -> tuple[dict[str, Any], str]:
    """(the check's record, a rejection reason or "") for the rewrites' `scores`, given each
    line's plain right answer's score (`right_scores`)."""
    by_style: dict[str, dict[str, Any]] = {}
    for (line, style, text), score in zip(rewrites, scores, strict=True):
        entry = by_style.setdefault(style, {"rewrites": 0, "refused": 0})
        if right_scores[line] < threshold:
            continue  # the plain right answer is not paid either: held_out's business
        entry["rewrites"] += 1
        if score < threshold:
            entry["refused"] += 1
            entry.setdefault("example", f"{text[:QUOTED]!r} scored {score:.2f}")
    refused = {s: e for s, e in by_style.items() if e["refused"]}
    record = {"styles": by_style, "refused_styles": sorted(refused)}
    if not refused:
        return record, ""
    names = ", ".join(f"{s} {e['refused']}/{e['rewrites']}" for s, e in refused.items())
    first = next(iter(refused.values()))["example"]
    return record, f"right answers refused in these styles: {names}; e.g. {first}"
