"""Synthesized verifiers say why: what was read, from which style, which comparison decided."""

from __future__ import annotations

import pytest

from rewardsmith.library.store import Library
from rewardsmith.synth.examples import Example
from rewardsmith.synth.pipeline import codeverify
from rewardsmith.synth.primitives import ANY_STYLE, Composition
from rewardsmith.synth.tools import explain
from rewardsmith.types import Sample

LOWERCASE = Composition((ANY_STYLE,), ("lowercase",), "same_text")


# (completion, score) -> the words the reason must hold
@pytest.mark.parametrize(
    ("completion", "score", "words"),
    [
        (
            "<answer>Olleh</answer>",
            1.0,
            ["'Olleh'", "answer_tags", "same text", "lower", "matches"],
        ),
        ("Reversed: olleh", 1.0, ["'olleh'", "label_colon", "matches"]),
        ("The answer is olleb.", 0.0, ["'olleb'", "answer_is", "does not match"]),
        ("", 0.0, ["no final answer"]),
        ("The answer is olleh or olleb.", 0.0, ["other answers"]),
    ],
)
def test_explain(completion: str, score: float, words: list[str]) -> None:
    reason = explain(LOWERCASE, Sample(completion, "Spell hello backward.", "olleh"), score)
    assert all(w in reason for w in words), reason


def test_a_synthesized_tools_rewards_carry_their_reasons(library: Library) -> None:
    words = ["river", "candle", "planet", "garden", "copper", "winter", "forest", "harbor"]
    lines = [
        Example(f"Spell {w} backward.", w[::-1], f"<answer>{w[::-1]}</answer>", 1)
        if i < 3
        else Example(f"Spell {w} backward.", w[::-1])
        for i, w in enumerate(words)
    ]
    lines.append(Example("Spell tunnel backward.", "lennut", "<answer>lennux</answer>", 0))
    outcome = codeverify(lines, "reverse", library)
    record = library.record(*outcome.stored_as.split("@")[:1])
    assert record.config["params"]["composition"]["extractors"] == [ANY_STYLE]
    from rewardsmith.library.registry import build_tool

    tool = build_tool(record.spec, record.config, resolve=library.get)
    right, wrong = tool.score(
        [Sample("Final answer: lennut", "p", "lennut"), Sample("\\boxed{lennux}", "p", "lennut")]
    )
    assert right.score == 1.0 and "final_answer" in right.reason and "matches" in right.reason
    assert wrong.score == 0.0 and "boxed" in wrong.reason and "does not match" in wrong.reason
