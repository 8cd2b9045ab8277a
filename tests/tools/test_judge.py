"""The LLM judge tool against a scripted OpenAI-compatible endpoint: YES/NO become 1/0, other
words score 0 with the model's words as the reason, a failing endpoint is `error`, a repeated
question is asked once, and every call's tokens are counted."""

from __future__ import annotations

import pytest

from fake_llm import chat_body, fake_llm
from rewardsmith.tools.judge import LLMJudgeTool
from rewardsmith.types import Sample, ToolSpec

SPEC = ToolSpec(name="llm_judge", kind="judge", provenance="user")
USAGE = {"prompt_tokens": 90, "completion_tokens": 1}


def _sample(completion: str, reference: str | None = "12:25") -> Sample:
    return Sample(completion, "When does the train arrive?", reference, "clock")


VERDICTS = [
    # the model's words -> score, status, reason contains
    ("YES", 1.0, "ok", "YES"),
    ("no.", 0.0, "ok", "NO"),
    ("Yes, it matches.", 1.0, "ok", "YES"),
    ("Maybe", 0.0, "ok", "neither"),
]


@pytest.mark.parametrize(("words", "score", "status", "reason"), VERDICTS)
def test_verdicts(words: str, score: float, status: str, reason: str) -> None:
    with fake_llm([(200, chat_body(words, USAGE))]) as fake:
        judge = LLMJudgeTool(SPEC, base_url=fake.url, model="m")
        reward = judge.score([_sample("Final answer: 12:25")])[0]
        judge.close()
    assert (reward.score, reward.status) == (score, status)
    assert reason in reward.reason and reward.tool == "llm_judge@1"


def test_the_judge_sees_question_reference_and_response_once_per_distinct_sample() -> None:
    with fake_llm([(200, chat_body("YES", USAGE))]) as fake:
        judge = LLMJudgeTool(SPEC, base_url=fake.url, model="m")
        rewards = judge.score([_sample("Final answer: 12:25")] * 3 + [_sample("12:35")])
        usage = judge.usage.to_dict()
        judge.close()
    assert [r.score for r in rewards] == [1.0] * 4
    assert len(fake.requests) == 2  # one call per distinct (prompt, response, reference)
    text = fake.requests[0]["body"]["messages"][1]["content"]
    assert "When does the train arrive?" in text and "12:25" in text
    assert usage["calls"] == 2 and usage["prompt_tokens"] == 180


def test_no_reference_and_a_failing_endpoint() -> None:
    with fake_llm([(500, "boom")]) as fake:
        judge = LLMJudgeTool(SPEC, base_url=fake.url, model="m", timeout=5)
        judge.client.retries = 0
        missing, failed = judge.score([_sample("x", None), _sample("x")])
        judge.close()
    assert missing.status == "invalid_reference" and missing.score is None
    assert failed.status == "error" and failed.score == 0.0
