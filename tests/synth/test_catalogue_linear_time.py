"""The catalogue's tag readers run inside generated programs on model output: many opening
tags without a closer cost time linear in the text (the sandbox's deadline would end a
square, but every sample would pay it)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable

from rewardsmith.synth.catalogue import EXTRACTORS
from rewardsmith.synth.features import FEATURES
from test_linear_time import MAX_RATIO, growth


def _function(source: str, name: str, **names: str) -> Callable[[str], object]:
    namespace: dict[str, object] = {"re": re, **names}
    exec(textwrap.dedent(source), namespace)  # our own catalogue's source, not model output
    return namespace[name]  # type: ignore[return-value]


def test_answer_tags_reader_is_linear_and_reads_the_last_block() -> None:
    read = _function(EXTRACTORS["answer_in_tags"].source, "answer_in_tags")
    assert read("a <answer>1</answer> b <answer>2</answer>") == "2"
    assert read("<answer>a<answer>b</answer>") == "b"
    assert growth(read, "<answer>x ") < MAX_RATIO


def test_text_outside_tags_is_linear_and_counts_what_is_outside() -> None:
    count = _function(
        FEATURES["text_outside_tags"].source,
        "text_outside_tags",
        THINK_TAG="think",
        ANSWER_TAG="answer",
    )
    assert count("<think>ab</think> xy <answer>1</answer>") == 2.0
    assert growth(count, "<think>x ") < MAX_RATIO
