"""A reward's one JSON form (`Reward.to_dict` / `from_dict`): what every writer sends reads
back to the same reward, in both public layouts; anything else is refused by name."""

from __future__ import annotations

import json
import math

import pytest

from rewardsmith.types import Reward

REWARDS = [
    # scored, not scored, failed
    Reward(1.0, "ok", {"a": 0.5, "b": 1.0}, "t@1", "answer 3 equals the reference"),
    Reward(None, "not_applicable", tool="t@2", reason="no reference"),
    Reward(None, "invalid_reference", reason="cannot parse"),
    Reward(0.0, "timeout", reason="step over 10 s"),
    Reward(-0.25, "error", {"x": -1.0}),
]


@pytest.mark.parametrize("layout", ["line", "api"])
@pytest.mark.parametrize("reward", REWARDS)
def test_a_reward_reads_back_from_its_json(reward: Reward, layout: str) -> None:
    text = json.dumps(reward.to_dict(layout))
    assert Reward.from_dict(json.loads(text), layout) == reward


def test_the_two_layouts_keep_their_public_names_and_order() -> None:
    reward = REWARDS[0]
    # an output line (`rewardsmith score`, rollout files) and an item of the HTTP `rewards`
    assert list(reward.to_dict()) == ["reward", "status", "tool", "components", "reason"]
    assert list(reward.to_dict("api")) == ["score", "status", "components", "tool", "reason"]
    assert reward.to_dict()["reward"] == reward.to_dict("api")["score"] == 1.0


def test_a_component_that_is_not_finite_is_null_and_is_left_out_when_read() -> None:
    reward = Reward(1.0, components={"ok": 1, "nan": math.nan, "inf": math.inf})
    data = reward.to_dict()
    assert data["components"] == {"ok": 1.0, "nan": None, "inf": None}
    assert json.loads(json.dumps(data, allow_nan=False)) == data  # valid JSON
    assert Reward.from_dict(data).components == {"ok": 1.0}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([1.0], "object"),
        ({"reward": "1", "status": "ok"}, "'reward'"),
        ({"reward": True, "status": "ok"}, "'reward'"),
        ({"reward": 1.0}, "'status'"),
        ({"reward": 1.0, "status": "great"}, "'status'"),
        ({"reward": 1.0, "status": "ok", "components": [1]}, "'components'"),
        ({"reward": 1.0, "status": "ok", "components": {"a": "1"}}, "'components'"),
        ({"reward": 1.0, "status": "ok", "tool": 3}, "'tool'"),
    ],
)
def test_what_is_not_a_reward_is_refused_naming_the_field(data: object, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Reward.from_dict(data)
