"""The trainer adapters score through the server when REWARDSMITH_URL is set, with the same
values as in-process; the client's types and batching."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardsmith.client import RewardClient, reward_from_json, sample_json
from rewardsmith.types import Reward, Sample

PROMPTS = ["Natalia sold 48 clips in April and half as many in May. How many in total?"] * 3
COMPLETIONS = ["48 + 24 = 72. #### 72", "#### 70", "no idea"]
ANSWERS = ["72", "72", "72"]


def test_trl_reward_function_uses_the_server(
    server: str, server_library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardsmith.integrations.trl import RewardFunction

    local = RewardFunction("gsm8k", library=server_library)(PROMPTS, COMPLETIONS, answer=ANSWERS)
    monkeypatch.setenv("REWARDSMITH_URL", server)
    remote_func = RewardFunction("gsm8k", library="/nonexistent/never-opened.db")
    remote = remote_func(PROMPTS, COMPLETIONS, answer=ANSWERS)
    assert remote == local == [1.0, 0.0, 0.0]
    assert type(remote_func.scorer).__name__ == "RemoteScorer"


def test_verl_compute_score_uses_the_server(
    server: str, server_library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardsmith.integrations import verl

    monkeypatch.setenv("REWARDSMITH_HOME", str(server_library.parent))
    local = verl.compute_score_batch(["openai/gsm8k"] * 3, COMPLETIONS, ANSWERS)
    monkeypatch.setenv("REWARDSMITH_URL", server)
    remote = verl.compute_score_batch(["openai/gsm8k"] * 3, COMPLETIONS, ANSWERS)
    assert remote == local
    assert verl.compute_score("openai/gsm8k", COMPLETIONS[0], "72")["score"] == 1.0


def test_openrlhf_file_adapter_uses_the_server(
    server: str, server_library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardsmith.integrations.openrlhf import RewardFunc

    queries = [p + " " + c for p, c in zip(PROMPTS, COMPLETIONS, strict=True)]
    local = RewardFunc("gsm8k", library=server_library)(queries, PROMPTS, ANSWERS)
    monkeypatch.setenv("REWARDSMITH_URL", server)
    remote = RewardFunc("gsm8k")(queries, PROMPTS, ANSWERS)
    assert remote["rewards"].tolist() == local["rewards"].tolist() == [1.0, 0.0, 0.0]


def test_client_splits_large_batches_and_keeps_order(server: str) -> None:
    samples = [Sample(completion=f"#### {i}", reference=str(i % 7)) for i in range(50)]
    with RewardClient(server, batch_size=8) as client:
        rewards = client.score(samples)
    assert [r.score for r in rewards] == [float(i % 7 == i) for i in range(50)]
    assert all(isinstance(r, Reward) for r in rewards)


def test_samples_and_rewards_round_trip_through_json() -> None:
    sample = Sample(
        completion="c",
        prompt=[{"role": "user", "content": "p"}],
        reference="r",
        task="t",
        meta={"k": 1},
        id="7",
    )
    assert sample_json(sample) == {
        "completion": "c",
        "prompt": [{"role": "user", "content": "p"}],
        "reference": "r",
        "task": "t",
        "meta": {"k": 1},
        "id": "7",
    }
    reward = reward_from_json(
        {
            "score": 0.5,
            "status": "ok",
            "components": {"a": 1, "nan": None},
            "tool": "x@1",
            "reason": "why",
        }
    )
    assert reward == Reward(0.5, "ok", {"a": 1.0}, "x@1", "why")
