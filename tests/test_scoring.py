"""`rewardsmith.score` and `Scorer`: tool per task, order kept, broken tools contained."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rewardsmith import Library, Reward, Sample, Scorer, score
from rewardsmith.errors import ConfigError, InputError, UnknownToolError
from rewardsmith.scoring import parse_task_map
from rewardsmith.types import RewardTool, ToolSpec
from support import EchoLengthTool


class ExplodingTool(RewardTool):
    spec = ToolSpec(name="exploding", provenance="user")

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        raise RuntimeError("boom")


class ShortTool(RewardTool):
    spec = ToolSpec(name="short", provenance="user")

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        return [Reward(1.0)]


def test_one_tool_scores_every_sample_in_order(library: Library) -> None:
    tool = EchoLengthTool()
    rewards = score(
        [{"completion": "abc"}, Sample(completion="abcdef"), {"completion": ""}],
        tool,
        library=library,
    )
    assert [r.score for r in rewards] == [0.3, 0.6, None]
    assert [r.status for r in rewards] == ["ok", "ok", "not_applicable"]
    assert tool.calls == 1  # batch first: one call for the whole batch


def test_task_map_routes_each_task_and_unmapped_tasks_are_not_applicable(library: Library) -> None:
    a, b = EchoLengthTool("a"), EchoLengthTool("b")
    scorer = Scorer(None, {}, library)
    scorer.by_task = {"ta": a, "tb": b}
    samples = [
        Sample("x", task="ta"),
        Sample("yy", task="tb"),
        Sample("zzz", task="ta"),
        Sample("w", task="other"),
    ]
    rewards = scorer.score(samples)
    assert [r.tool for r in rewards] == ["a@1", "b@1", "a@1", ""]
    assert rewards[3].status == "not_applicable" and "no tool for task 'other'" in rewards[3].reason
    assert (a.calls, b.calls) == (1, 1)
    assert len(scorer.last_seconds) == 4


def test_a_tool_that_raises_gives_error_rewards_not_an_exception(library: Library) -> None:
    rewards = score([{"completion": "a"}, {"completion": "b"}], ExplodingTool(), library=library)
    assert [(r.score, r.status) for r in rewards] == [(0.0, "error"), (0.0, "error")]
    assert "boom" in rewards[0].reason


def test_a_tool_returning_too_few_rewards_is_caught(library: Library) -> None:
    rewards = score([{"completion": "a"}, {"completion": "b"}], ShortTool(), library=library)
    assert all(r.status == "error" for r in rewards)
    assert "returned 1 rewards for 2 samples" in rewards[0].reason


def test_library_tools_by_name(library: Library) -> None:
    rewards = score(
        [{"completion": "<thinking>t</thinking><solution>4</solution>"}, {"completion": "4"}],
        "format_tags",
        library=library,
    )
    assert [r.score for r in rewards] == [1.0, 0.0]
    assert rewards[0].tool == "format_tags@1"


def test_unknown_tool_name_lists_known_tools(library: Library) -> None:
    with pytest.raises(UnknownToolError, match="known tools"):
        score([{"completion": "a"}], "nope", library=library)


def test_bad_sample_dicts_are_reported_with_their_index(library: Library) -> None:
    with pytest.raises(InputError, match="sample 1: missing required field 'completion'"):
        score([{"completion": "a"}, {"prompt": "p"}], EchoLengthTool(), library=library)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gsm8k=gsm8k", {"gsm8k": "gsm8k"}),  # one entry
        (" a=math , b=gsm8k ,", {"a": "math", "b": "gsm8k"}),  # spaces and a trailing comma
    ],
)
def test_parse_task_map(text: str, expected: dict[str, str]) -> None:
    assert parse_task_map(text) == expected


@pytest.mark.parametrize("text", ["gsm8k", "=math", "a="])
def test_parse_task_map_rejects_malformed_entries(text: str) -> None:
    with pytest.raises(ConfigError, match="TASK=TOOL"):
        parse_task_map(text)
