"""The gate's `styles` check: a verifier that refuses a common answer style training will
produce is rejected, one that reads every style passes; synthesized verifiers are also held
to a JSON `answer` field and a label and colon."""

from __future__ import annotations

import pytest

from rewardsmith.library.registry import REWARD_FUNCTION_FACTORY
from rewardsmith.library.store import Library
from rewardsmith.synth.examples import Example
from rewardsmith.synth.gate import gate_tool
from rewardsmith.synth.style_check import judge_styles, style_rewrites
from rewardsmith.types import ToolSpec

# Reads a completion that is only <think> and one <answer> tag: no probe fools it, but a
# right answer in any other style (even tags after a line of reasoning) gets 0.
TAGS_ONLY = """
import re
def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        m = re.fullmatch(r"\\s*(?:<think>[^<]*</think>)?\\s*<answer>([^<]*)</answer>\\s*", c)
        out.append(1.0 if m is not None and m.group(1).strip() == r else 0.0)
    return out
"""

WORDS = ["river", "candle", "planet", "garden", "copper", "winter", "forest", "harbor"]


def tagged_examples() -> list[Example]:
    lines = []
    for i, w in enumerate(WORDS + ["meadow", "rocket", "tunnel", "violin"]):
        prompt, answer = f"Spell {w} backward.", w[::-1]
        if i < 6:
            given = answer if i % 2 == 0 else answer[:-1] + "x"
            completion = f"<think>letters reversed</think>\n<answer>{given}</answer>"
            lines.append(Example(prompt, answer, completion, int(i % 2 == 0)))
        else:
            lines.append(Example(prompt, answer))
    return lines


def test_a_verifier_that_reads_only_tags_is_rejected_for_the_styles_it_refuses(
    library: Library,
) -> None:
    config = {"factory": REWARD_FUNCTION_FACTORY, "params": {"source": TAGS_ONLY}}
    library.add(ToolSpec(name="tags_only", kind="code", provenance="user"), config)
    report = gate_tool(library.get("tags_only"), tagged_examples(), library=library)
    assert not report.admitted and report.failed_check == "styles"
    refused = report.checks["styles"]["refused_styles"]
    assert {"boxed", "answer_is", "final_answer", "last_line"} <= set(refused)
    assert report.checks["probes"] and all(k["wins"] == 0 for k in report.checks["probes"].values())
    assert "boxed" in report.reason


# (styles written for one line): every common style; the synthesized extras on request;
# a multi-line answer only where it fits
@pytest.mark.parametrize(
    ("reference", "extra", "expected"),
    [
        (
            "olleh",
            False,
            {
                "answer_tags",
                "boxed",
                "hashes",
                "final_answer",
                "answer_is",
                "label",
                "fenced",
                "last_line",
            },
        ),
        (
            "olleh",
            True,
            {
                "answer_tags",
                "boxed",
                "hashes",
                "final_answer",
                "answer_is",
                "label",
                "fenced",
                "last_line",
                "json_answer",
                "label_colon",
            },
        ),
        ("1 2\n3 4", True, {"answer_tags", "fenced", "json_answer"}),
    ],
)
def test_style_rewrites(reference: str, extra: bool, expected: set[str]) -> None:
    rewrites = style_rewrites([Example("p", reference)], seed=1, extra=extra)
    assert {style for _, style, _ in rewrites} == expected
    assert all(reference.split("\n")[0] in text for _, _, text in rewrites)


def test_a_style_counts_as_refused_only_where_the_plain_right_answer_is_paid() -> None:
    rewrites = [(0, "boxed", "a"), (1, "boxed", "b"), (0, "fenced", "c"), (1, "fenced", "d")]
    # line 1's plain answer is not paid: its rewrites say nothing about styles
    record, reason = judge_styles(rewrites, [0.0, 0.0, 1.0, 0.0], [1.0, 0.0], 0.5)
    assert record["refused_styles"] == ["boxed"]
    assert record["styles"]["fenced"] == {"rewrites": 1, "refused": 0}
    assert reason.startswith("right answers refused in these styles: boxed 1/1")
    assert judge_styles(rewrites, [1.0, 0.0, 1.0, 0.0], [1.0, 0.0], 0.5)[1] == ""
