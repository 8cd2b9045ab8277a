"""FormatTagsTool and ThinkFormatTool: reference-free format rewards over the whole completion."""

from __future__ import annotations

from typing import Any

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.tools.format import FormatTagsTool, ThinkFormatTool
from rewardsmith.types import Reward, Sample, ToolSpec

SPEC = ToolSpec(name="format_tags", needs_reference=False)
GOOD = "<thinking>16 - 3 - 4 = 9 eggs, 9 * 2 = 18.</thinking>\n<solution>18</solution>"


def score_one(tool: Any, completion: str, reference: str | None = None) -> Reward:
    reward: Reward = tool.score([Sample(completion, reference=reference)])[0]
    return reward


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # one block per tag, in order, whitespace around and between
        (GOOD, 1.0),
        ("  \n<thinking>x</thinking><solution>y</solution>\n\n", 1.0),
        ("<thinking>\nmulti\nline\n</thinking>\n\n<solution>\n18\n</solution>", 1.0),
        # text outside the blocks
        ("Sure! " + GOOD, 0.0),
        (GOOD + " Hope this helps.", 0.0),
        ("<thinking>a</thinking> and then <solution>b</solution>", 0.0),
        # wrong order, nesting, or a block missing
        ("<solution>18</solution><thinking>x</thinking>", 0.0),
        ("<thinking>x<solution>18</solution></thinking>", 0.0),
        ("<thinking>x</thinking>", 0.0),
        ("<solution>18</solution>", 0.0),
        # a tag repeated
        (GOOD + "<solution>19</solution>", 0.0),
        ("<thinking>a</thinking><thinking>b</thinking><solution>c</solution>", 0.0),
        # empty contents
        ("<thinking>  </thinking><solution>18</solution>", 0.0),
        ("<thinking>x</thinking><solution>\n</solution>", 0.0),
        # unclosed, closing before opening, no tags at all
        ("<thinking>x<solution>18</solution>", 0.0),
        ("</thinking>x<thinking><solution>18</solution>", 0.0),
        ("18", 0.0),
        ("", 0.0),
    ],
)
def test_exact(completion: str, expected: float) -> None:
    reward = score_one(FormatTagsTool(spec=SPEC), completion)
    assert (reward.score, reward.status) == (expected, "ok"), reward.reason


@pytest.mark.parametrize(
    ("completion", "expected", "components"),
    [
        # every tag opened and closed once: full credit, a quarter per marker
        (GOOD, 1.0, {"thinking": 0.5, "solution": 0.5}),
        # approx ignores order and surrounding text
        (
            "Sure! <solution>18</solution> <thinking>x</thinking> bye",
            1.0,
            {"thinking": 0.5, "solution": 0.5},
        ),
        # a missing closing tag costs a quarter
        ("<thinking>x<solution>18</solution>", 0.75, {"thinking": 0.25, "solution": 0.5}),
        # a repeated tag earns nothing for that marker
        (
            "<thinking>a</thinking><thinking>b</thinking><solution>c</solution>",
            0.5,
            {"thinking": 0.0, "solution": 0.5},
        ),
        # nothing
        ("18", 0.0, {"thinking": 0.0, "solution": 0.0}),
    ],
)
def test_approx(completion: str, expected: float, components: dict[str, float]) -> None:
    reward = score_one(FormatTagsTool(spec=SPEC, mode="approx"), completion)
    assert reward.score == pytest.approx(expected)
    assert dict(reward.components) == pytest.approx(components)


@pytest.mark.parametrize(
    ("mode", "completion", "expected"),
    [
        # three configured tags, in order
        ("exact", "<plan>p</plan><code>c</code><answer>a</answer>", 1.0),
        ("exact", "<plan>p</plan><answer>a</answer><code>c</code>", 0.0),
        ("exact", GOOD, 0.0),
        # approx with three tags: 1/6 per marker
        ("approx", "<plan>p</plan><code>c", 0.5),
    ],
)
def test_configured_tags(mode: str, completion: str, expected: float) -> None:
    tool = FormatTagsTool(spec=SPEC, mode=mode, tags=["plan", "code", "answer"])
    assert score_one(tool, completion).score == pytest.approx(expected)


@pytest.mark.parametrize(
    "params",
    [
        # unknown mode
        {"mode": "strict"},
        # tags: empty, a bare string, repeated, not a tag name
        {"tags": []},
        {"tags": "thinking"},
        {"tags": ["a", "a"]},
        {"tags": ["has space"]},
        {"tags": ["<b>"]},
    ],
)
def test_bad_params_raise_config_error(params: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        FormatTagsTool(spec=SPEC, **params)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # TRL's own examples
        ("<think>\nThis is my reasoning.\n</think>\nThis is my answer.", 1.0),
        ("<think>\nThis is my reasoning.\nThis is my answer.", 0.0),
        # leading whitespace is allowed; an empty think block is allowed (as in TRL)
        ("\n<think>r</think>answer", 1.0),
        ("<think></think>answer", 1.0),
        # no answer after </think>
        ("<think>reasoning</think>", 0.0),
        ("<think>reasoning</think>\n  \n", 0.0),
        # not at the start, repeated tags
        ("Sure. <think>r</think>answer", 0.0),
        ("<think>a</think><think>b</think>answer", 0.0),
        ("<think>a</think>b</think>answer", 0.0),
        ("answer", 0.0),
        ("", 0.0),
    ],
)
def test_think_format(completion: str, expected: float) -> None:
    reward = score_one(ThinkFormatTool(spec=SPEC), completion)
    assert (reward.score, reward.status) == (expected, "ok"), reward.reason


@pytest.mark.parametrize("reference", [None, "", "18", "x" * 300_000])
def test_reference_is_ignored(reference: str | None) -> None:
    # the same completion scores the same whatever the reference, even an oversized one
    assert score_one(FormatTagsTool(spec=SPEC), GOOD, reference).score == 1.0
    assert score_one(ThinkFormatTool(spec=SPEC), "<think>r</think>a", reference).score == 1.0


def test_megabyte_completion_is_checked_whole() -> None:
    # the opening tag is a megabyte before the end: the tools must not read only the tail
    thinking = "step " * 210_000
    completion = f"<thinking>{thinking}</thinking><solution>18</solution>"
    assert len(completion) > 1_000_000
    assert score_one(FormatTagsTool(spec=SPEC), completion).score == 1.0
    assert score_one(ThinkFormatTool(spec=SPEC), f"<think>{thinking}</think>18").score == 1.0


@pytest.mark.parametrize("name", ["format_tags", "format_tags_approx", "think_format"])
def test_builtins_build_from_registry(name: str) -> None:
    (builtin,) = [b for b in BUILTINS if b.spec.name == name]
    tool = build_tool(builtin.spec, builtin.config())
    assert isinstance(tool, FormatTagsTool | ThinkFormatTool)
    completion = GOOD if name.startswith("format_tags") else "<think>r</think>18"
    assert tool.score([Sample(completion)])[0].score == 1.0
