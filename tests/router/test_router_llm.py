"""The LLM routing backend: schema-constrained decisions with token counts, and the
fallback to the embedded backend (unreachable endpoint, malformed or impossible answers).
The last test runs against a real llama.cpp server (marker `llm_server`)."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from fake_llm import chat_body, fake_llm
from llama_server import llama_server as start_llama_server
from rewardsmith import Library, Sample
from rewardsmith.llm import client as client_mod
from rewardsmith.llm.client import LLMClient
from rewardsmith.router import Router
from support import EXPECTED_TOOL

pytestmark = pytest.mark.usefixtures("embedder")

GSM8K = Sample(
    completion="3 * 12 - 7 = 29\n#### 29",
    prompt="Tom has 3 boxes with 12 apples each and gives away 7. How many apples are left?",
    reference="29",
)
USAGE = {"prompt_tokens": 321, "completion_tokens": 17, "total_tokens": 338}


def answer(**kw: Any) -> str:
    base = {
        "action": "tool",
        "tool": "gsm8k",
        "confidence": 0.9,
        "synthesize_kind": "none",
        "reason": "word problem",
    }
    return json.dumps({**base, **kw})


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mod, "BACKOFF_S", 0.01)


def test_llm_decision_with_tokens_in_the_decision_and_the_event(library: Library) -> None:
    with (
        fake_llm([(200, chat_body(answer(), USAGE))]) as fake,
        Router(library, "llm", llm_client=LLMClient(fake.url, "m")) as router,
    ):
        (decision,) = router.route([GSM8K])
        usage = router.llm.usage.to_dict() if router.llm else {}
    assert decision.backend == "llm" and decision.label == "gsm8k"
    assert decision.tokens == {"prompt_tokens": 321, "completion_tokens": 17}
    assert usage["calls"] == 1 and usage["total_tokens"] == 338
    body = fake.requests[0]["body"]
    schema = body["response_format"]["json_schema"]["schema"]
    # only tools that can read a number reference are offered
    assert set(schema["properties"]["tool"]["enum"]) <= {"gsm8k", "math", "none"}
    (event,) = [e for e in library.history() if e.kind == "route"]
    assert event.detail["decision"]["tokens"]["prompt_tokens"] == 321
    (counts,) = [e for e in library.history() if e.kind == "route_counts"]
    assert counts.detail["llm_usage"]["total_tokens"] == 338


def test_a_server_that_refuses_json_schema_gets_json_object(library: Library) -> None:
    refusal = (
        500,
        '{"error": {"message": "response_format.type: Input should be \'text\' or \'json_object\'"}}',
    )
    with (
        fake_llm([refusal, refusal, refusal, (200, chat_body(answer(), USAGE))]) as fake,
        Router(library, "llm", llm_client=LLMClient(fake.url, retries=2)) as router,
    ):
        (decision,) = router.route([GSM8K])
    assert decision.backend == "llm"
    assert fake.requests[-1]["body"]["response_format"]["type"] == "json_object"
    assert "schema" in fake.requests[-1]["body"]["response_format"]


BAD_ANSWERS = [
    # not JSON at all
    "Sure! The best tool is gsm8k.",
    # JSON without a valid action
    json.dumps({"tool": "gsm8k", "confidence": 0.9}),
    # a tool that cannot read a number reference
    answer(tool="translation"),
    # a tool that does not exist
    answer(tool="magic"),
    # confidence that is not a number
    answer(confidence="high"),
]


@pytest.mark.parametrize("content", BAD_ANSWERS)
def test_malformed_answers_fall_back_to_embedded_with_a_warning(
    library: Library, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        fake_llm([(200, chat_body(content, USAGE))]) as fake,
        caplog.at_level(logging.WARNING),
        Router(library, "llm", llm_client=LLMClient(fake.url)) as router,
    ):
        (decision,) = router.route([GSM8K])
    assert decision.backend == "embedded" and decision.label == "gsm8k"
    assert "malformed" in decision.why and decision.tokens  # the failed call still cost tokens
    assert any("malformed LLM decision" in r.message for r in caplog.records)


def test_unreachable_endpoint_degrades_to_embedded_once(
    library: Library, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = LLMClient(f"http://127.0.0.1:{port}/v1", retries=0, timeout=2)
    other = Sample(
        completion="x", prompt="Translate to German: Good morning", reference="Guten Morgen"
    )
    with caplog.at_level(logging.WARNING), Router(library, "llm", llm_client=client) as router:
        decisions = router.route([GSM8K, other])
    assert [d.backend for d in decisions] == ["embedded", "embedded"]
    assert [d.label for d in decisions] == ["gsm8k", "translation"]
    warnings = [r for r in caplog.records if "LLM backend failed" in r.message]
    assert len(warnings) == 1  # the endpoint is marked down after the first failure


def test_no_endpoint_configured_uses_embedded(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REWARDSMITH_LLM_BASE_URL", raising=False)
    with Router(library, "llm") as router:
        assert router.route([GSM8K])[0].backend == "embedded"


# -- a real llama.cpp server --------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    with start_llama_server() as url:
        yield url


@pytest.mark.llm_server
def test_llm_backend_end_to_end_against_llama_cpp_server(
    llama_server: str, library: Library, mixed: list[dict[str, Any]]
) -> None:
    client = LLMClient(llama_server, "smollm2", timeout=120)
    # one sample of two tasks with different reference formats (CPU time: ~2 calls)
    picks = [next(r for r in mixed if r["task"] == t) for t in ("gsm8k", "translation")]
    with Router(library, "llm", llm_client=client) as router:
        decisions = router.route(picks)
        schema_style = router.llm.schema_style if router.llm else ""
    # the server spoke JSON in the schema; every call's tokens were counted
    assert schema_style == "json_object"
    assert client.usage.calls == 2 and client.usage.estimated_calls == 0
    assert all(
        d.tokens["prompt_tokens"] > 0 and d.tokens["completion_tokens"] > 0 for d in decisions
    )
    # a 135M model's choice may be poor, but never a tool that cannot read the reference:
    # it is either the LLM's valid decision or the embedded fallback's
    for record, d in zip(picks, decisions, strict=True):
        assert d.backend in ("llm", "embedded")
        assert d.label in (EXPECTED_TOOL[record["task"]], "synthesize"), d
    events = [e for e in library.history() if e.kind in ("route", "synthesize_request")]
    assert len(events) == 2
