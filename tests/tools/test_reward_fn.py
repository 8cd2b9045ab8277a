"""A generated reward function as a tool (`RewardFunctionTool`): batches far larger than one
sandbox run come back whole, every failure says what failed, and `tools add` takes
`"kind": "reward_function"`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.cli.main import app
from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import REWARD_FUNCTION_FACTORY
from rewardsmith.library.store import Library
from rewardsmith.tools.reward_fn import CHUNK_SIZE, RewardFunctionTool, reward_code_report
from rewardsmith.types import Sample, ToolSpec

CONTAINS = (
    "BOUNDS = (0.0, 1.0)\n"
    "def reward(completions, references, prompts):\n"
    "    return [1.0 if r is not None and r in c else 0.0 for c, r in zip(completions, references)]\n"
)

# Reward functions that pass the admission probe but fail on the completion "trigger":
# (source, status, words in the reason of every sample of the failing chunk). `reward` is
# called once per sample, so `completions` is the one completion being scored.
FAILING = [
    (
        "def reward(completions, **kw):\n"
        "    if 'trigger' in completions:\n"
        "        raise ValueError('boom')\n"
        "    return [0.5 for c in completions]\n",
        "error",
        "the reward function failed: ValueError: boom",
    ),
    (
        "def reward(completions, **kw):\n"
        "    if 'trigger' in completions:\n"
        "        return [0.5, 0.5]\n"
        "    return [0.5 for c in completions]\n",
        "error",
        "returned 2 scores for 1 completion",
    ),
    (
        "def reward(completions, **kw):\n"
        "    if 'trigger' in completions:\n"
        "        while True:\n"
        "            pass\n"
        "    return [0.5 for c in completions]\n",
        "timeout",
        "ended with status timeout: CPU time limit",
    ),
    (
        "def reward(completions, **kw):\n"
        "    if 'trigger' in completions:\n"
        "        x = ' ' * (2 * 1024**3)\n"
        "    return [0.5 for c in completions]\n",
        "error",
        "ended with status memory: memory limit of 256 MB",
    ),
]


@pytest.fixture(scope="module")
def contains() -> Iterator[RewardFunctionTool]:
    tool = RewardFunctionTool(ToolSpec(name="contains", kind="code"), source=CONTAINS, workers=2)
    yield tool
    tool.close()


def test_ten_thousand_samples_in_one_call(contains: RewardFunctionTool) -> None:
    # 157 sandbox runs of 64 samples each; every score comes back, none is an error.
    samples = [
        Sample(completion=f"the answer is {i}", reference=str(i if i % 3 else -1))
        for i in range(10_000)
    ]
    assert len(samples) > 100 * CHUNK_SIZE
    rewards = contains.score(samples)
    assert len(rewards) == 10_000
    assert [r.status for r in rewards if r.status != "ok"] == []
    assert [r.score for r in rewards] == [0.0 if i % 3 == 0 else 1.0 for i in range(10_000)]


@pytest.mark.parametrize(("source", "status", "words"), FAILING)
def test_every_failure_says_what_failed(source: str, status: str, words: str) -> None:
    # The CPU limit is what the endless loop must hit; a 1 s wall-clock limit could end a
    # run on a loaded machine before the function is even loaded (a right answer, another
    # reason).
    tool = RewardFunctionTool(
        ToolSpec(name="flaky", kind="code"), source=source, timeout=1.0, wall_seconds=30.0
    )
    assert tool.sandbox.limits.wall_seconds == 30.0
    first = ["fine", "trigger"] + ["fine"] * (CHUNK_SIZE - 2)
    samples = [Sample(completion=c, reference="x") for c in [*first, "fine", "fine"]]
    try:
        rewards = tool.score(samples)
    finally:
        tool.close()
    failed, healthy = rewards[:CHUNK_SIZE], rewards[CHUNK_SIZE:]
    # The chunk with the trigger fails as a whole, each reward saying why; the next is fine.
    assert all(r.status == status and r.score == 0.0 for r in failed), failed[0]
    assert all(words in r.reason for r in failed), failed[0].reason
    assert [(r.status, r.score) for r in healthy] == [("ok", 0.5)] * 2


def test_a_non_finite_score_fails_its_own_sample_only() -> None:
    source = (
        "def reward(completions, **kw):\n"
        "    return [float('inf') if c == 'trigger' else 0.5 for c in completions]\n"
    )
    tool = RewardFunctionTool(ToolSpec(name="inf", kind="code"), source=source)
    try:
        rewards = tool.score([Sample(completion=c) for c in ("fine", "trigger", "fine")])
    finally:
        tool.close()
    assert [(r.status, r.score) for r in rewards] == [("ok", 0.5), ("error", 0.0), ("ok", 0.5)]
    assert "non-finite score (inf)" in rewards[1].reason


def test_a_score_outside_the_bounds_is_clipped_and_says_so() -> None:
    source = (
        "BOUNDS = (0.0, 1.0)\n"
        "def reward(completions, **kw):\n"
        "    return [2.0 if c == 'high' else 0.5 for c in completions]\n"
    )
    tool = RewardFunctionTool(ToolSpec(name="clip", kind="code"), source=source)
    try:
        [high] = tool.score([Sample(completion="high", reference="x")])
    finally:
        tool.close()
    assert high.score == 1.0 and high.reason == "clipped 2.0 to bounds"


def test_tools_add_takes_kind_reward_function(tmp_path: Path) -> None:
    tool_file = tmp_path / "contains.json"
    tool_file.write_text(
        json.dumps(
            {
                "spec": {"name": "contains_fn", "kind": "reward_function", "provenance": "search"},
                "config": {"params": {"source": CONTAINS}},
            }
        )
    )
    library = str(tmp_path / "library.db")
    result = CliRunner().invoke(app, ["tools", "add", str(tool_file), "--library", library])
    assert result.exit_code == 0, result.output
    assert "added contains_fn@1" in result.output
    with Library(tmp_path / "library.db") as lib:
        record = lib.record("contains_fn")
        assert record.spec.kind == "code"
        assert record.config["factory"] == "rewardsmith.tools.reward_fn:RewardFunctionTool"
        [reward] = lib.get("contains_fn").score([Sample(completion="it is 42", reference="42")])
    assert reward.score == 1.0


def test_tools_add_refuses_reward_code_that_is_not_admitted(tmp_path: Path) -> None:
    tool_file = tmp_path / "bad.json"
    source = "import os\ndef reward(completions, **kw):\n    return [0.0 for c in completions]\n"
    tool_file.write_text(
        json.dumps(
            {"spec": {"name": "bad_fn", "kind": "reward_function"}, "config": {"source": source}}
        )
    )
    result = CliRunner().invoke(
        app, ["tools", "add", str(tool_file), "--library", str(tmp_path / "l.db")]
    )
    assert result.exit_code != 0
    message = str(result.exception)
    assert "stage 1 (static)" in message and "'os'" in message


# -- the 4-stage check runs once per source and run settings -------------------------------


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources the 4-stage check actually ran on, in order."""
    from rewardsmith.tools import reward_fn

    calls: list[str] = []
    real = reward_fn.check_reward_code

    def counting(source: str, **kw: object) -> object:
        calls.append(source)
        return real(source, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(reward_fn, "check_reward_code", counting)
    return calls


def test_rebuilding_a_source_reuses_its_check(checks: list[str]) -> None:
    source = CONTAINS + "# rebuilt\n"
    first = RewardFunctionTool(ToolSpec(name="a"), source)
    second = RewardFunctionTool(ToolSpec(name="b"), source)
    first.close()
    second.close()
    assert checks == [source]
    assert second.report is first.report


# What the check ran on is in its key: any of these runs it again.
RECHECKED = [
    ({}, "# one more character\n "),  # the source differs by a byte
    ({"timeout": 5.0}, ""),  # other CPU and wall limits
    ({"memory_mb": 128}, ""),
    ({"wall_seconds": 20.0}, ""),
    ({"bounds": (0.0, 2.0)}, ""),
    ({"workers": 2}, ""),
]


@pytest.mark.parametrize(("kwargs", "extra"), RECHECKED)
def test_other_code_or_settings_are_checked_again(
    checks: list[str], kwargs: dict[str, object], extra: str
) -> None:
    source = CONTAINS + f"# settings {sorted(kwargs)} {extra!r}\n"
    RewardFunctionTool(ToolSpec(name="a"), source).close()
    RewardFunctionTool(ToolSpec(name="a"), source + extra, **kwargs).close()  # type: ignore[arg-type]
    assert len(checks) == 2


def test_a_rejected_source_is_checked_again_when_built_again(checks: list[str]) -> None:
    # A rejection may come from the machine (a run timed out under load): never kept.
    source = "# rejected twice\nimport os\ndef reward(completions, **kw):\n    return [0.0] * 9\n"
    for _ in range(2):
        with pytest.raises(ConfigError, match="not admitted"):
            RewardFunctionTool(ToolSpec(name="bad"), source)
    assert checks == [source, source]


def test_the_library_validates_and_scores_with_one_check(checks: list[str], tmp_path: Path) -> None:
    source = CONTAINS + "# library\n"
    config = {"factory": REWARD_FUNCTION_FACTORY, "params": {"source": source}}
    with Library(tmp_path / "lib.db") as lib:
        lib.add(ToolSpec(name="contains", kind="code", provenance="user"), config)
        rewards = lib.get("contains").score([Sample("the answer is 42", reference="42")])
    assert [r.score for r in rewards] == [1.0]
    assert checks == [source]


def test_reward_code_report_is_the_check_the_tool_gets(checks: list[str]) -> None:
    source = CONTAINS + "# report first\n"
    report = reward_code_report(source, bounds=(0.0, 1.0))
    tool = RewardFunctionTool(ToolSpec(name="a"), source, bounds=(0.0, 1.0))
    tool.close()
    assert report.admitted and tool.report is report
    assert checks == [source]
