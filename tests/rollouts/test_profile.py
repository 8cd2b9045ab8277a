"""`profile`: GRPO groups whose rewards are all equal, pass rates, unscored counts, and the
prompts that give GRPO no signal."""

from __future__ import annotations

import pytest

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.rollout_log import Rollout
from rewardsmith.rollouts.profile import profile, select_part
from rewardsmith.types import Reward, Sample


def group(prompt: str, step: int, scores: list[float | None], task: str = "t") -> list[Rollout]:
    out = []
    for i, s in enumerate(scores):
        reward = Reward(s) if s is not None else Reward(None, "invalid_reference")
        record = {"step": step, "source": "grpo"}
        sample = Sample(f"c{i}", prompt=prompt, task=task)
        out.append(Rollout(i, record, sample, reward, f"{step}|{prompt}"))
    return out


def test_dead_groups_are_found_and_split_by_outcome() -> None:
    rollouts = [
        *group("easy", 1, [1.0, 1.0, 1.0, 1.0]),  # dead: all pass
        *group("hard", 1, [0.0, 0.0, 0.0, 0.0]),  # dead: all fail
        *group("fine", 1, [1.0, 0.0, 0.0, 1.0]),  # live
        *group("broken", 1, [None, None, None, None]),  # dead: nothing scored
        *group("half", 1, [0.5, 0.5], task="u"),  # dead: a constant below the threshold
        *group("alone", 1, [1.0], task="u"),  # one rollout: nothing to compare
    ]
    report = profile(rollouts)
    t = report["keys"]["t"]
    assert (t["groups"], t["dead_groups"], t["dead_share"]) == (4, 3, 0.75)
    assert (t["dead_all_pass"], t["dead_all_fail"], t["dead_other"]) == (1, 1, 1)
    assert t["not_scored"] == {"invalid_reference": 4}
    # pass rate, mean and variance over the 12 scored rewards of t
    assert t["scored"] == 12 and t["pass_rate"] == pytest.approx(6 / 12)
    assert t["mean"] == pytest.approx(0.5) and t["variance"] == pytest.approx(0.25)
    u = report["keys"]["u"]
    assert (u["groups"], u["dead_all_fail"], u["single_rollout_groups"]) == (1, 1, 1)
    assert report["overall"]["dead_groups"] == 4
    why = {f["prompt"]: f["why"] for f in report["flagged_prompts"]}
    assert why == {
        "easy": "all pass",
        "hard": "all fail",
        "broken": "not scored",
        "half": "all fail",
    }
    assert report["metrics"]["rewardsmith/t/none/not_scored_frac"] == pytest.approx(4 / 16)


def test_a_prompt_is_flagged_only_when_every_group_of_it_is_dead() -> None:
    rollouts = [
        *group("q", 1, [0.0, 0.0]),
        *group("q", 2, [1.0, 0.0]),  # the same prompt learned something at step 2
        *group("r", 1, [0.0, 0.0]),
        *group("r", 2, [1.0, 1.0]),  # dead both times, with different constants
    ]
    flagged = profile(rollouts)["flagged_prompts"]
    assert [(f["prompt"], f["groups"], f["rewards"], f["why"]) for f in flagged] == [
        ("r", 2, [0.0, 1.0], "mixed")
    ]


def test_by_step_orders_steps_as_numbers() -> None:
    rollouts = [r for step in (10, 2, 1) for r in group("q", step, [1.0, 0.0])]
    assert list(profile(rollouts, by="step")["keys"]) == ["1", "2", "10"]


def test_unscored_files_and_unknown_keys_are_refused() -> None:
    plain = [Rollout(1, {}, Sample("c", prompt="p"), None, "p")]
    with pytest.raises(InputError, match="no line has a reward"):
        profile(plain)
    with pytest.raises(ConfigError, match="--by must be one of"):
        profile(group("q", 1, [1.0, 0.0]), by="colour")


def test_one_part_of_a_weighted_reward_can_be_profiled() -> None:
    # a GRPO total of gsm8k + format_tags: 1.0 everywhere (format right, answer wrong) looks
    # like "all pass"; the gsm8k part says what it is
    rows = []
    for i, gsm8k in enumerate([0.0, 0.0, 0.0, 1.0]):
        reward = Reward(gsm8k + 1.0, components={"gsm8k": gsm8k, "format_tags": 1.0})
        rows.append(Rollout(i, {}, Sample(f"c{i}", prompt="q", task="t"), reward, "g"))
    total = profile(rows)["keys"]["t"]
    assert total["pass_rate"] == 1.0
    part = profile(select_part(rows, "gsm8k"))["keys"]["t"]
    assert part["pass_rate"] == 0.25 and part["mean"] == 0.25
    with pytest.raises(InputError, match="parts in the file: format_tags, gsm8k"):
        select_part(rows, "math")
