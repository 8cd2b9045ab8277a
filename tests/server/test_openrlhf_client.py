"""OpenRLHF's own reward request code against `rewardsmith serve`'s `/v1/openrlhf`.

The client is `openrlhf.utils.agent.SingleTurnAgentExecutor` from the `openrlhf` package
(0.11.2, installed with --no-deps by `make`; the module needs only aiohttp, torch and
transformers): `execute` generates with the engine it is given, decodes prompt + response,
posts `{"query", "prompts", "labels"}` to the remote RM URL with aiohttp and copies
`rewards`, `scores` and `extra_logs` from the answer into the rollout it returns, which is
what OpenRLHF's trainer turns into tensors. The engine and tokenizer here are minimal
stand-ins (a character tokenizer, a fixed completion); the HTTP exchange is OpenRLHF's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

agent = pytest.importorskip("openrlhf.utils.agent", reason="openrlhf is installed by make")


class CharTokenizer:
    """One token per character (what `execute` needs of a Hugging Face tokenizer)."""

    def __call__(self, text: str, add_special_tokens: bool, return_tensors: str) -> Any:
        import torch

        return {"input_ids": torch.tensor([[ord(c) for c in text]])}

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(chr(i) for i in ids)


@dataclass
class Output:
    token_ids: list[int]
    text: str
    finish_reason: str = "stop"
    logprobs: Any = None


@dataclass
class RequestOutput:
    outputs: list[Output]


@dataclass
class Engine:
    """Answers every prompt with `completion` (a vLLM engine's `generate`, async)."""

    completion: str

    async def generate(
        self, token_ids: list[int], params: Any, multi_modal_data: Any = None
    ) -> Any:
        return RequestOutput([Output([ord(c) for c in self.completion], self.completion)])


@dataclass
class SamplingParams:
    max_tokens: int | None = 64
    logprobs: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def rollout(url: str, prompt: str, completion: str, label: str) -> dict[str, Any]:
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=url)
    return asyncio.run(
        executor.execute(prompt, label, SamplingParams(), 512, CharTokenizer(), Engine(completion))
    )


PROMPT = "Q: Natalia sold 48 clips in April and half as many in May. How many in total?\nA:"


def test_openrlhf_gets_the_reward_of_a_right_answer(server: str) -> None:
    out = rollout(f"{server}/v1/openrlhf", PROMPT, " 48 + 24 = 72. #### 72", "72")
    assert out["reward"] == [1.0] and out["scores"] == [1.0]
    assert out["extra_logs"] == {"applicable": [1.0], "failed": [0.0]}


def test_openrlhf_gets_zero_for_a_wrong_answer_and_for_no_reference(server: str) -> None:
    wrong = rollout(f"{server}/v1/openrlhf", PROMPT, " #### 71", "72")
    assert wrong["reward"] == [0.0] and wrong["extra_logs"]["applicable"] == [1.0]
    # No label: the gsm8k tool cannot score it; reward 0.0, marked not applicable.
    unlabeled = rollout(f"{server}/v1/openrlhf", PROMPT, " #### 72", None)  # type: ignore[arg-type]
    assert unlabeled["reward"] == [0.0]
    assert unlabeled["extra_logs"] == {"applicable": [0.0], "failed": [0.0]}


def test_the_tool_can_be_chosen_in_the_url(server: str) -> None:
    url = f"{server}/v1/openrlhf?tool=misbehaving"
    out = rollout(url, PROMPT, "x" * 50, "ignored")
    assert out["reward"] == [0.5]


def test_same_values_as_the_python_adapter(server: str, server_library: Any) -> None:
    from rewardsmith.integrations.openrlhf import RewardFunc

    func = RewardFunc("gsm8k", library=server_library)
    cases = [(" #### 72", "72"), (" #### 70", "72"), (" no number", "72"), (" #### 72", "x")]
    for completion, label in cases:
        local = func([PROMPT + completion], [PROMPT], [label])
        remote = rollout(f"{server}/v1/openrlhf", PROMPT, completion, label)
        assert remote["reward"] == local["rewards"].tolist()
        assert remote["scores"] == local["scores"].tolist()
        assert remote["extra_logs"] == {k: v.tolist() for k, v in local["extra_logs"].items()}
