"""The embedded GRPO trainer on the tiny testbed: a step moves probability toward rewarded
completions, resume repeats the uninterrupted run exactly, metrics carry every component."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rewardsmith.models.checkpoints import METRICS_FILE, latest_checkpoint  # noqa: E402
from rewardsmith.rl.generation import token_logprobs  # noqa: E402
from rewardsmith.rl.grpo import COMPLETIONS_FILE, GRPOConfig, GRPOTrainer  # noqa: E402
from rewardsmith.rl.policies import Policy, load_pretrained  # noqa: E402
from rewardsmith.rl.prompts import PromptItem, load_items  # noqa: E402
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec  # noqa: E402


class DigitShareTool(RewardTool):
    """Score = share of digits among the completion's characters, with a component per part.

    The untrained tiny policy writes digits some of the time, so rewards vary within a group.
    """

    spec = ToolSpec(name="digit_share", provenance="user", needs_reference=False)

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        out = []
        for s in samples:
            text = s.completion or " "
            digits = sum(ch.isdigit() for ch in text) / len(text)
            out.append(
                Reward(
                    digits,
                    components={"digits": digits, "length": float(len(text))},
                    tool=self.spec.ref,
                )
            )
        return out


ITEMS = [
    PromptItem(f"Tom has {i} apples. How many apples does Tom have?", str(i), "counting")
    for i in range(8)
]


def _policy(path: Path) -> Policy:
    return load_pretrained(path)


def _trainer(path: Path, out: Path, library: Path, **changes: object) -> GRPOTrainer:
    base: dict[str, object] = {
        "steps": 3,
        "prompts_per_step": 2,
        "group_size": 4,
        "max_new_tokens": 12,
        "lr": 5e-3,
        "lora_rank": 0,
        "seed": 7,
    }
    base.update(changes)
    config = GRPOConfig(**base)  # type: ignore[arg-type]
    return GRPOTrainer(
        _policy(path), [DigitShareTool(), "format_tags"], ITEMS, config, out, library=library
    )


def test_a_step_moves_log_probs_of_high_reward_completions_up(
    tiny_testbed: Path, tmp_path: Path
) -> None:
    trainer = _trainer(tiny_testbed, tmp_path / "run", tmp_path / "lib.db", lr=2e-2)
    captured: dict[str, object] = {}
    update = trainer._update

    def spy(rollout, advantages):  # type: ignore[no-untyped-def]
        with torch.no_grad():
            captured["before"] = token_logprobs(
                trainer.model,
                rollout.prompt_ids,
                rollout.prompt_mask,
                rollout.completion_ids,
                rollout.completion_mask,
            ).sum(dim=1)
        captured["rollout"], captured["adv"] = rollout, advantages
        return update(rollout, advantages)

    trainer._update = spy  # type: ignore[method-assign]
    trainer.train_step()
    rollout, adv = captured["rollout"], captured["adv"]
    with torch.no_grad():
        after = token_logprobs(
            trainer.model,
            rollout.prompt_ids,  # type: ignore[attr-defined]
            rollout.prompt_mask,  # type: ignore[attr-defined]
            rollout.completion_ids,  # type: ignore[attr-defined]
            rollout.completion_mask,  # type: ignore[attr-defined]
        ).sum(dim=1)
    delta = after - captured["before"]  # type: ignore[operator]
    assert isinstance(adv, torch.Tensor) and adv.abs().sum() > 0  # rewards varied
    # completions with positive advantage gained log-probability relative to negative ones
    assert float(delta[adv > 0].mean()) > float(delta[adv < 0].mean())
    assert float((adv * delta).sum()) > 0


@pytest.mark.parametrize("lora_rank", [0, 4])
def test_resume_reproduces_the_next_steps_exactly(
    tiny_testbed: Path, tmp_path: Path, lora_rank: int
) -> None:
    if lora_rank:
        pytest.importorskip("peft")
    library = tmp_path / "lib.db"
    straight = _trainer(tiny_testbed, tmp_path / "a", library, lora_rank=lora_rank)
    straight.train(save_model=False)
    expected = [json.loads(x) for x in (tmp_path / "a" / METRICS_FILE).read_text().splitlines()]

    first = _trainer(tiny_testbed, tmp_path / "b", library, lora_rank=lora_rank, steps=1)
    first.train(save_model=False)
    assert latest_checkpoint(tmp_path / "b") is not None
    resumed = _trainer(tiny_testbed, tmp_path / "b", library, lora_rank=lora_rank, steps=3)
    resumed.train(resume=True, save_model=False)
    got = [json.loads(x) for x in (tmp_path / "b" / METRICS_FILE).read_text().splitlines()]

    assert [m["step"] for m in got] == [1, 2, 3]
    for a, b in zip(expected, got, strict=True):
        assert a["loss"] == b["loss"]  # bit-identical, not approximately equal
        assert a["reward"] == b["reward"]
        assert a["grad_norm"] == b["grad_norm"]
        assert a["collapse/agreement"] == b["collapse/agreement"]
    final_a, final_b = straight.trainable_state(), resumed.trainable_state()
    assert all(torch.equal(final_a[k], final_b[k]) for k in final_a)


def test_grad_accumulation_gives_the_same_update(tiny_testbed: Path, tmp_path: Path) -> None:
    library = tmp_path / "lib.db"
    one = _trainer(tiny_testbed, tmp_path / "one", library, steps=1)
    four = _trainer(tiny_testbed, tmp_path / "four", library, steps=1, grad_accum=4)
    m1, m4 = one.train_step(), four.train_step()
    assert m4["loss"] == pytest.approx(m1["loss"], abs=1e-6)
    # the gradient of the whole batch, not of the last micro-batch
    assert m4["grad_norm"] == pytest.approx(m1["grad_norm"], rel=1e-4)


def test_metrics_hold_components_accuracy_lengths_and_time_split(
    tiny_testbed: Path, tmp_path: Path
) -> None:
    trainer = _trainer(tiny_testbed, tmp_path / "run", tmp_path / "lib.db", steps=2, beta=0.05)
    result = trainer.train()
    lines = [json.loads(x) for x in (tmp_path / "run" / METRICS_FILE).read_text().splitlines()]
    assert [m["step"] for m in lines] == [1, 2]
    m = lines[-1]
    for key in (
        "reward/digit_share",
        "reward/digit_share/digits",
        "reward/digit_share/length",
        "reward/format_tags",
        "accuracy",
        "parseable",
        "completion_length",
        "truncated",
        "kl",
        "time/generate",
        "time/reward",
        "time/update",
        "reward_share",
        "collapse/agreement",
        "collapse/flag",
    ):
        assert key in m, key
    assert m["time/step"] == pytest.approx(
        m["time/generate"] + m["time/reward"] + m["time/update"], rel=1e-6
    )
    assert 0 <= m["accuracy"] <= m["parseable"] <= 1
    assert 0 <= m["collapse/agreement"] <= 1 and m["collapse/flag"] == 0.0  # too few steps
    assert m["completion_length_max"] <= 12
    # the saved policy loads as a plain model and keeps the testbed prompt style
    assert result.model_dir is not None
    reloaded = load_pretrained(result.model_dir)
    assert reloaded.style == "testbed"
    assert reloaded.prompt_for("q").startswith("Question: q")


def test_lora_leaves_the_base_weights_alone_and_merges_on_save(
    tiny_testbed: Path, tmp_path: Path
) -> None:
    pytest.importorskip("peft")
    trainer = _trainer(tiny_testbed, tmp_path / "run", tmp_path / "lib.db", lora_rank=4, steps=2)
    trainable = trainer.trainable_state()
    assert trainable and all("lora_" in name for name in trainable)
    result = trainer.train()
    assert result.model_dir is not None
    merged = load_pretrained(result.model_dir).model.state_dict()
    base = load_pretrained(tiny_testbed).model.state_dict()
    assert not any("lora" in k for k in merged)
    changed = [k for k in base if not torch.equal(base[k], merged[k])]
    assert changed  # the adapters were merged into the projections


def test_testbed_prompts_come_from_the_rl_split() -> None:
    items = load_items("testbed", 5)
    assert len(items) == 5 and all(i.reference.lstrip("-").isdigit() for i in items)
    assert load_items("testbed", 5) == items


def test_jsonl_prompts(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"question": "1+1?", "answer": "2"}\n\n{"prompt": "2+2?", "reference": "4"}\n')
    assert load_items(str(path)) == [PromptItem("1+1?", "2"), PromptItem("2+2?", "4")]


def test_the_router_can_be_the_reward(tmp_path: Path) -> None:
    from rewardsmith.rl.rewards import RewardSet

    rewards = RewardSet(["router:rules", "format_tags"], library=tmp_path / "lib.db")
    try:
        batch = rewards.score(
            ["Question: Tom has 3 apples and buys 4 more. How many?\\nAnswer: "] * 2,
            ["<thinking>3+4=7.</thinking><solution>7</solution>", "<solution>8</solution>"],
            ["7", "7"],
        )
    finally:
        rewards.close()
    assert batch.per_tool["router:rules"] == [1.0, 0.0]
    assert batch.total == [2.0, 0.0]


def test_a_failing_run_still_closes_the_reward_tools(tiny_testbed: Path, tmp_path: Path) -> None:
    import sqlite3

    trainer = _trainer(tiny_testbed, tmp_path / "run", tmp_path / "lib.db", steps=3)

    def crash(metrics: dict[str, object]) -> None:
        raise RuntimeError("trainer killed after the first step")

    with pytest.raises(RuntimeError, match="killed"):
        trainer.train(on_step=crash)
    # The library the reward set opened (and its tools) are closed, not leaked.
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        trainer.reward.library.records()


def test_the_trl_backend_closes_its_reward_functions_when_training_fails(
    tiny_testbed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl")
    from rewardsmith.rl import trl_backend

    closed: list[str] = []

    class Func:
        def __init__(self, name: str) -> None:
            self.__name__ = name

        def close(self) -> None:
            closed.append(self.__name__)

    class Broken:
        def __init__(self, **kwargs: object) -> None:
            raise RuntimeError("TRL failed to start")

    monkeypatch.setattr(trl_backend, "reward_funcs", lambda tools, **kw: [Func(t) for t in tools])
    monkeypatch.setattr(trl_backend, "TRLTrainer", Broken)
    config = GRPOConfig(steps=1, prompts_per_step=2, group_size=2, lora_rank=0)
    with pytest.raises(RuntimeError, match="failed to start"):
        trl_backend.train_trl(
            _policy(tiny_testbed), ["gsm8k", "format_tags"], ITEMS, config, tmp_path / "trl"
        )
    assert closed == ["gsm8k", "format_tags"]


def test_checkpoints_are_numbered_and_the_newest_by_step_is_resumed(
    tiny_testbed: Path, tmp_path: Path
) -> None:
    from rewardsmith.models.checkpoints import saved_checkpoints

    out = tmp_path / "run"
    trainer = _trainer(
        tiny_testbed, out, tmp_path / "lib.db", steps=3, save_every=1, keep_checkpoints=5
    )
    trainer.train(save_model=False)
    assert [(s, p.name) for s, p in saved_checkpoints(out)] == [
        (1, "step-1"),
        (2, "step-2"),
        (3, "step-3"),
    ]
    # A run of an older version wrote zero-padded names; a higher step still wins by number.
    (out / "checkpoints" / "step-3").rename(out / "checkpoints" / "step-000003")
    resumed = _trainer(tiny_testbed, out, tmp_path / "lib.db", steps=3)
    assert resumed.resume() == 3
    resumed.close()


def test_a_bad_prompts_line_is_named(tmp_path: Path) -> None:
    from rewardsmith.errors import InputError

    path = tmp_path / "p.jsonl"
    path.write_text('{"question": "1+1?", "answer": "2"}\n{"question": "2+2?", \n')
    with pytest.raises(InputError, match=r"p.jsonl:2: not valid JSON"):
        load_items(str(path))
    path.write_text('{"question": "1+1?", "answer": "2"}\n["2+2?", "4"]\n')
    with pytest.raises(InputError, match=r"p.jsonl:2: expected a JSON object"):
        load_items(str(path))


def test_completions_are_logged_every_n_steps_for_an_audit(
    tiny_testbed: Path, tmp_path: Path
) -> None:
    out, library = tmp_path / "run", tmp_path / "lib.db"
    first = _trainer(tiny_testbed, out, library, steps=2, log_completions_every=2)
    first.train(save_model=False)  # checkpoint at the last step
    resumed = _trainer(tiny_testbed, out, library, steps=4, log_completions_every=2)
    resumed.train(resume=True, save_model=False)
    rows = [json.loads(x) for x in (out / COMPLETIONS_FILE).read_text().splitlines()]
    assert [r["step"] for r in rows] == [2] * 8 + [4] * 8  # 2 prompts x G = 4, once each
    metrics = [json.loads(x) for x in (out / METRICS_FILE).read_text().splitlines()]
    for step in (2, 4):
        logged = [r for r in rows if r["step"] == step]
        # each row: its reward, every tool's part, and the verdict the accuracy metric used
        assert set(logged[0]["rewards"]) == {"digit_share", "format_tags"}
        mean = sum(r["reward"] for r in logged) / len(logged)
        assert mean == pytest.approx(metrics[step - 1]["reward"])
        accuracy = sum(r["correct"] for r in logged) / len(logged)
        assert accuracy == pytest.approx(metrics[step - 1]["accuracy"])
        # each row is a rollout line: the weighted reward's status and tools, its GRPO group
        assert {r["status"] for r in logged} == {"ok"}
        assert logged[0]["tool"] == "digit_share@1+format_tags@1"
        assert [r["group"] for r in logged] == [f"step-{step}/prompt-{i // 4}" for i in range(8)]
        assert {r["task"] for r in logged} == {"counting"} and logged[0]["source"] == "grpo"
        # per-task metrics, one naming scheme (rewardsmith.reward_metrics)
        digit_mean = sum(r["rewards"]["digit_share"] for r in logged) / len(logged)
        assert metrics[step - 1]["rewardsmith/counting/digit_share/mean"] == pytest.approx(
            digit_mean
        )
        assert metrics[step - 1]["rewardsmith/counting/format_tags/not_scored_frac"] == 0.0
    # rescore/compare/profile read the file as it is
    from rewardsmith.rollout_log import read_rollouts

    rollouts = read_rollouts(out / COMPLETIONS_FILE)
    assert len({r.group for r in rollouts}) == 4 and all(r.stored for r in rollouts)
    # a fresh run in the same folder starts a new log
    _trainer(tiny_testbed, out, library, steps=1, log_completions_every=1).train(save_model=False)
    assert {json.loads(x)["step"] for x in (out / COMPLETIONS_FILE).read_text().splitlines()} == {1}
