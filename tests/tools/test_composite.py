"""CompositeTool: weighted sums and gates over stub tools resolved by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from rewardsmith.errors import ConfigError, UnknownToolError
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.tools.base import make_reward
from rewardsmith.tools.composite import CompositeTool
from rewardsmith.types import Reward, RewardTool, Sample, Status, ToolSpec

SPEC = ToolSpec(name="combo", kind="composite")


class TableTool(RewardTool):
    """A stub part: scores a completion by looking it up in a table.

    Table values are a score, or (status, score) for anything but `ok`. Counts its calls so
    tests can check that parts are scored batch-first.
    """

    def __init__(self, name: str, table: dict[str, Any], components: bool = False) -> None:
        self.spec = ToolSpec(name=name)
        self.table = table
        self.components = components
        self.calls: list[int] = []

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        self.calls.append(len(samples))
        out = []
        for sample in samples:
            value = self.table[sample.completion]
            status: Status = "ok"
            if isinstance(value, tuple):
                status, value = value
            comps = {"raw": value, "len": float(len(sample.completion))} if self.components else {}
            out.append(make_reward(self.spec, value, status, f"{self.spec.name} says", comps))
        return out


class BrokenTool(RewardTool):
    """A stub part with a bug: raises on every batch."""

    spec = ToolSpec(name="broken")

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        raise RuntimeError("part exploded")


def resolver(*tools: RewardTool):
    known = {t.spec.name: t for t in tools}

    def resolve(name: str) -> RewardTool:
        if name not in known:
            raise UnknownToolError(name, list(known))
        return known[name]

    return resolve


def batch(*completions: str) -> list[Sample]:
    return [Sample(c, reference="ref") for c in completions]


def fmt_tool() -> TableTool:
    # format check: "good" is well formed, "half" gets partial credit, "bad" is not
    return TableTool(
        "format",
        {"good": 1.0, "half": 0.5, "bad": 0.0, "na": ("not_applicable", None), "slow": 1.0},
    )


def answer_tool() -> TableTool:
    return TableTool(
        "answer",
        {
            "good": 1.0,
            "half": 1.0,
            "bad": 1.0,
            "na": 1.0,
            "slow": ("timeout", 0.0),
        },
        components=True,
    )


GATE_PARTS = [{"tool": "format", "gate": True}, {"tool": "answer"}]


def gate_tool(**kw: Any) -> CompositeTool:
    return CompositeTool(
        spec=SPEC, mode="gate", parts=GATE_PARTS, resolve=resolver(fmt_tool(), answer_tool()), **kw
    )


def test_weighted_sum() -> None:
    parts = [{"tool": "format", "weight": 0.2}, {"tool": "answer", "weight": 0.8}]
    tool = CompositeTool(spec=SPEC, parts=parts, resolve=resolver(fmt_tool(), answer_tool()))
    rewards = tool.score(batch("good", "half", "bad"))
    assert [r.score for r in rewards] == pytest.approx([1.0, 0.9, 0.8])
    assert all(r.status == "ok" and r.tool == "combo@1" for r in rewards)


def test_default_weight_is_one_and_negative_weights_subtract() -> None:
    parts = [{"tool": "answer"}, {"tool": "format", "weight": -0.5}]
    tool = CompositeTool(spec=SPEC, parts=parts, resolve=resolver(fmt_tool(), answer_tool()))
    assert [r.score for r in tool.score(batch("good", "bad"))] == [0.5, 1.0]


# (completion, expected gate score): the gate is hard, partial format credit blocks
GATE_CASES = [
    ("good", 1.0),  # format passes: the answer's score counts
    ("half", 0.0),  # format 0.5 < threshold 1.0: blocked, not halved
    ("bad", 0.0),  # format fails: a correct answer counts for nothing
]


@pytest.mark.parametrize(("completion", "expected"), GATE_CASES)
def test_gate(completion, expected) -> None:
    reward = gate_tool().score(batch(completion))[0]
    assert (reward.score, reward.status) == (expected, "ok")
    assert ("gate passed" if expected else "gate failed") in reward.reason


def test_gate_threshold_is_configurable() -> None:
    assert gate_tool(gate_threshold=0.5).score(batch("half"))[0].score == 1.0


def test_components_keep_every_part_and_flatten_theirs() -> None:
    reward = gate_tool().score(batch("bad"))[0]
    assert reward.components == {
        "format": 0.0,
        "answer": 1.0,
        "answer.raw": 1.0,
        "answer.len": 3.0,
    }
    assert "format=0" in reward.reason and "answer=1" in reward.reason


def test_parts_are_scored_once_per_batch() -> None:
    fmt, ans = fmt_tool(), answer_tool()
    tool = CompositeTool(spec=SPEC, mode="gate", parts=GATE_PARTS, resolve=resolver(fmt, ans))
    rewards = tool.score(batch("good", "bad", "half", "good"))
    assert (fmt.calls, ans.calls) == ([4], [4])
    assert [r.score for r in rewards] == [1.0, 0.0, 0.0, 1.0]


# How a part's status reaches the composite: (part statuses, composite status, score)
STATUS_CASES = [
    # a timed-out part counts as 0 and the composite reports the timeout
    ({"a": ("timeout", 0.0), "b": 1.0}, "timeout", 0.5),
    # error is worse than timeout
    ({"a": ("timeout", 0.0), "b": ("error", 0.0)}, "error", 0.0),
    # a part that does not apply is left out; the other still scores
    ({"a": ("not_applicable", None), "b": 1.0}, "ok", 0.5),
    # nothing applies: the composite does not apply either
    ({"a": ("not_applicable", None), "b": ("not_applicable", None)}, "not_applicable", None),
    # a part cannot read the reference: no made-up score, even if another part failed
    ({"a": ("invalid_reference", None), "b": ("error", 0.0)}, "invalid_reference", None),
]


@pytest.mark.parametrize(("table", "status", "score"), STATUS_CASES)
def test_sum_statuses(table, status, score) -> None:
    a = TableTool("a", {"x": table["a"]})
    b = TableTool("b", {"x": table["b"]})
    parts = [{"tool": "a", "weight": 0.5}, {"tool": "b", "weight": 0.5}]
    reward = CompositeTool(spec=SPEC, parts=parts, resolve=resolver(a, b)).score(batch("x"))[0]
    assert (reward.status, reward.score) == (status, score)


def test_gate_statuses() -> None:
    rewards = gate_tool().score(batch("na", "slow"))
    # a gate that does not apply does not block
    assert (rewards[0].status, rewards[0].score) == ("ok", 1.0)
    # the scored part timed out: 0 with status timeout, gate still reported
    assert (rewards[1].status, rewards[1].score) == ("timeout", 0.0)
    assert "answer timeout" in rewards[1].reason


def test_failing_gate_blocks() -> None:
    gate = TableTool("format", {"x": ("error", 0.0)})
    parts = [{"tool": "format", "gate": True}, {"tool": "answer"}]
    tool = CompositeTool(
        spec=SPEC, mode="gate", parts=parts, resolve=resolver(gate, TableTool("answer", {"x": 1.0}))
    )
    reward = tool.score(batch("x"))[0]
    assert (reward.status, reward.score) == ("error", 0.0)


def test_part_that_raises_becomes_error_for_every_sample() -> None:
    parts = [{"tool": "broken"}, {"tool": "answer"}]
    tool = CompositeTool(spec=SPEC, parts=parts, resolve=resolver(BrokenTool(), answer_tool()))
    rewards = tool.score(batch("good", "bad"))
    assert [(r.status, r.score) for r in rewards] == [("error", 1.0), ("error", 1.0)]
    assert "part exploded" in rewards[0].reason
    assert rewards[0].components["broken"] == 0.0


def test_empty_batch() -> None:
    assert gate_tool().score([]) == []


# Bad configs: (constructor kwargs, words the error must contain)
BAD_CONFIGS = [
    ({"mode": "product", "parts": GATE_PARTS}, "unknown mode"),
    ({"parts": []}, "non-empty"),
    ({"parts": "format"}, "non-empty"),
    ({"parts": [{"tool": "answer", "weight": "1"}]}, "finite number"),
    ({"parts": [{"tool": "answer", "weight": True}]}, "finite number"),
    ({"parts": [{"tool": "answer", "weight": float("nan")}]}, "finite number"),
    ({"parts": [{"tool": "answer", "wieght": 2}]}, "unknown keys"),
    ({"parts": [{"weight": 2}]}, "'tool'"),
    ({"parts": ["answer"]}, "expected an object"),
    ({"parts": [{"tool": "answer"}, {"tool": "answer"}]}, "twice"),
    ({"parts": [{"tool": "nope"}]}, "cannot resolve"),
    ({"parts": [{"tool": "answer", "gate": "yes"}]}, "true or false"),
    ({"parts": GATE_PARTS}, "need mode 'gate'"),
    ({"mode": "gate", "parts": [{"tool": "answer"}]}, "at least one part with gate"),
    ({"mode": "gate", "parts": [{"tool": "format", "gate": True}]}, "non-gate part"),
    ({"mode": "gate", "parts": GATE_PARTS, "gate_threshold": "high"}, "gate_threshold"),
]


@pytest.mark.parametrize(("kwargs", "words"), BAD_CONFIGS)
def test_bad_config_is_config_error(kwargs, words) -> None:
    with pytest.raises(ConfigError, match=words):
        CompositeTool(spec=SPEC, resolve=resolver(fmt_tool(), answer_tool()), **kwargs)


def test_builtin_gsm8k_with_format_config_is_valid() -> None:
    # The registry's composite builds through build_tool, which passes `resolve`.
    builtin = next(b for b in BUILTINS if b.spec.name == "gsm8k_with_format")
    stubs = resolver(TableTool("format_tags", {"x": 1.0}), TableTool("gsm8k", {"x": 1.0}))
    tool = build_tool(builtin.spec, builtin.config(), resolve=stubs)
    assert isinstance(tool, CompositeTool)
    assert tool.score(batch("x"))[0].score == 1.0
