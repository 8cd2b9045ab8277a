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
    # the reason names the task and the map, so a user sees why (and that a map was passed)
    assert rewards[3].status == "not_applicable"
    assert "task 'other' is not in the task map (ta, tb)" in rewards[3].reason
    assert (a.calls, b.calls) == (1, 1)
    assert len(rewards.seconds) == 4 and rewards.decisions == [None] * 4


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


class FixedRouter:
    """A router stand-in that gives every sample the same decision."""

    def __init__(self, decision: object) -> None:
        self.decision = decision

    def route(self, samples: Sequence[Sample]) -> list[object]:
        return [self.decision] * len(samples)

    def close(self) -> None:
        pass


def test_a_multi_tool_decision_is_scored_by_a_composite_with_the_common_rule(
    library: Library,
) -> None:
    from rewardsmith.router.decision import Decision, ToolWeight

    decision = Decision(
        "tool", 0.95, "embedded", (ToolWeight("gsm8k@1", 0.8), ToolWeight("format_tags@1", 0.2))
    )
    scorer = Scorer(None, None, library, router=FixedRouter(decision))  # type: ignore[arg-type]
    result = scorer.score(
        [
            Sample("<thinking>6*7</thinking><solution>42</solution>", reference="42"),
            Sample("<thinking>6*7</thinking><solution>41</solution>", reference="42"),
            # gsm8k cannot read this reference: the whole sum is unscored, format or not
            Sample("<thinking>x</thinking><solution>1</solution>", reference="no number"),
        ]
    )
    assert [r.score for r in result] == [pytest.approx(1.0), pytest.approx(0.2), None]
    assert [r.status for r in result] == ["ok", "ok", "invalid_reference"]
    assert {r.tool for r in result} == {"gsm8k@1+format_tags@1"}
    assert result.decisions == [decision] * 3
    assert result[0].components["gsm8k@1"] == 1.0


def test_score_reports_progress_per_chunk_and_logs_a_summary(
    library: Library, caplog: pytest.LogCaptureFixture
) -> None:
    # 600 samples: progress after each PROGRESS_CHUNK (256) and at the end, in order.
    samples = [Sample(completion=f"#### {i % 3}", reference="1") for i in range(600)]
    calls: list[tuple[int, int]] = []
    with caplog.at_level("INFO", logger="rewardsmith.scoring"):
        rewards = score(
            samples, "gsm8k", library=library, progress=lambda d, t: calls.append((d, t))
        )
    assert calls == [(256, 600), (512, 600), (600, 600)]
    assert [r.score for r in rewards[:3]] == [0.0, 1.0, 0.0]
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("scored ")]
    assert line.startswith("scored 600 samples in ")
    assert "mean reward 0.333" in line and "ok 600" in line


def test_score_on_no_samples_reports_0_of_0(library: Library) -> None:
    calls: list[tuple[int, int]] = []
    assert score([], "gsm8k", library=library, progress=lambda d, t: calls.append((d, t))) == []
    assert calls == [(0, 0)]
