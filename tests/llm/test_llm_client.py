"""The OpenAI-compatible client: token accounting, retries, clear errors."""

from __future__ import annotations

import socket

import pytest

from fake_llm import chat_body, fake_llm
from rewardsmith.errors import ConfigError, LLMError
from rewardsmith.llm import client as client_mod
from rewardsmith.llm.client import LLMClient


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mod, "BACKOFF_S", 0.01)


def test_tokens_are_counted_per_call_and_in_total() -> None:
    usage = {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}
    with fake_llm([(200, chat_body("hello", usage))]) as fake:
        client = LLMClient(fake.url, "m", "secret")
        first = client.chat([{"role": "user", "content": "hi"}])
        client.chat([{"role": "user", "content": "again"}], response_format={"type": "json_object"})
    assert first.text == "hello" and first.prompt_tokens == 30 and first.completion_tokens == 5
    assert client.usage.to_dict() == {
        "calls": 2,
        "prompt_tokens": 60,
        "completion_tokens": 10,
        "total_tokens": 70,
        "estimated_calls": 0,
    }
    request = fake.requests[1]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer secret"
    assert request["body"]["model"] == "m" and request["body"]["response_format"] == {
        "type": "json_object"
    }


def test_a_server_without_usage_gets_an_estimate_marked_as_such() -> None:
    with fake_llm([(200, chat_body("x" * 40))]) as fake:
        client = LLMClient(fake.url)
        result = client.chat([{"role": "user", "content": "y" * 400}])
    assert result.estimated and result.prompt_tokens == 101 and result.completion_tokens == 11
    assert client.usage.estimated_calls == 1


def test_transient_errors_are_retried() -> None:
    with fake_llm([(503, "busy"), (429, "slow down"), (200, chat_body("ok"))]) as fake:
        result = LLMClient(fake.url, retries=2).chat([{"role": "user", "content": "hi"}])
    assert result.text == "ok" and len(fake.requests) == 3


def test_client_errors_are_not_retried_and_say_what_happened() -> None:
    with (
        fake_llm([(401, '{"error": "bad key"}')]) as fake,
        pytest.raises(LLMError, match="HTTP 401.*bad key"),
    ):
        LLMClient(fake.url, retries=3).chat([{"role": "user", "content": "hi"}])
    assert len(fake.requests) == 1


def test_unreachable_endpoint_raises_after_retries() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = LLMClient(f"http://127.0.0.1:{port}/v1", retries=1, timeout=2)
    with pytest.raises(LLMError, match="cannot reach"):
        client.chat([{"role": "user", "content": "hi"}])


def test_configuration_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REWARDSMITH_LLM_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="REWARDSMITH_LLM_BASE_URL"):
        LLMClient()
    monkeypatch.setenv("REWARDSMITH_LLM_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("REWARDSMITH_LLM_MODEL", "qwen")
    monkeypatch.setenv("REWARDSMITH_LLM_API_KEY", "k")
    client = LLMClient()
    assert (client.base_url, client.model, client.api_key) == ("http://127.0.0.1:9/v1", "qwen", "k")


def test_an_answer_that_is_not_json_is_an_llm_error() -> None:
    with (
        fake_llm([(200, "<html>proxy error</html>")]) as fake,
        pytest.raises(LLMError, match="not JSON"),
    ):
        LLMClient(fake.url).chat([{"role": "user", "content": "hi"}])
