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


def _clear_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "REWARDSMITH_LLM_BASE_URL",
        "REWARDSMITH_LLM_MODEL",
        "REWARDSMITH_LLM_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


def test_openai_variables_are_read_and_rewardsmith_ones_override(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clear_llm_env(monkeypatch)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai.example/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    client = LLMClient(model="m")
    assert (client.base_url, client.api_key) == ("http://openai.example/v1", "sk-openai")
    monkeypatch.setenv("REWARDSMITH_LLM_BASE_URL", "http://mine/v1")
    monkeypatch.setenv("REWARDSMITH_LLM_API_KEY", "sk-mine")
    client = LLMClient(model="m")
    assert (client.base_url, client.api_key) == ("http://mine/v1", "sk-mine")
    # arguments (the CLI's --llm-url / --llm-key) beat both
    client = LLMClient("http://flag/v1", "m", "sk-flag")
    assert (client.base_url, client.api_key) == ("http://flag/v1", "sk-flag")


def test_no_endpoint_names_the_flag_and_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_llm_env(monkeypatch)
    with pytest.raises(ConfigError, match="--llm-url.*REWARDSMITH_LLM_BASE_URL.*OPENAI_BASE_URL"):
        LLMClient()


def test_without_a_model_name_the_served_model_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_llm_env(monkeypatch)
    served = (200, {"object": "list", "data": [{"id": "qwen2.5-7b"}, {"id": "other"}]})
    with fake_llm([(200, chat_body("ok"))], models=served) as fake:
        client = LLMClient(fake.url)
        client.chat([{"role": "user", "content": "hi"}])
        client.chat([{"role": "user", "content": "hi"}])
    assert [r["body"]["model"] for r in fake.requests] == ["qwen2.5-7b", "qwen2.5-7b"]
    assert len(fake.gets) == 1  # asked once


def test_a_server_without_a_model_list_gets_default(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_llm_env(monkeypatch)
    with fake_llm([(200, chat_body("ok"))]) as fake:
        LLMClient(fake.url).chat([{"role": "user", "content": "hi"}])
    assert fake.requests[0]["body"]["model"] == "default"


def test_check_refuses_a_rejected_key_and_says_how_to_pass_one() -> None:
    with (
        fake_llm([(200, chat_body("ok"))], models=(401, '{"error": "bad key"}')) as fake,
        pytest.raises(LLMError, match="HTTP 401.*--llm-key"),
    ):
        LLMClient(fake.url, "m", "wrong").check()
    assert fake.gets[0]["headers"]["Authorization"] == "Bearer wrong"


def test_check_passes_a_server_that_answers() -> None:
    with fake_llm([(200, chat_body("ok"))], models=(200, {"data": [{"id": "x"}]})) as fake:
        assert LLMClient(fake.url).check() == "x"
