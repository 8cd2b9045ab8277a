"""A small OpenAI-compatible chat client with token accounting (vLLM, Ollama, llama.cpp
server, hosted APIs).

Configured from `REWARDSMITH_LLM_BASE_URL` (e.g. `http://127.0.0.1:8000/v1`),
`REWARDSMITH_LLM_MODEL` and `REWARDSMITH_LLM_API_KEY` (DESIGN.md), or arguments. Every call's
prompt and completion tokens are added to `client.usage` (the server's `usage` field; a
rough 4-characters-per-token estimate, marked as such, when the server sends none), because
RLAR's cost claim is about tokens. Transient failures (connection errors, timeouts, HTTP 408,
409, 429 and 5xx) are retried with exponential backoff; anything else raises `LLMError` at
once. Only the standard library is used.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardsmith.errors import ConfigError, LLMError

log = logging.getLogger(__name__)

BASE_URL_ENV = "REWARDSMITH_LLM_BASE_URL"
MODEL_ENV = "REWARDSMITH_LLM_MODEL"
API_KEY_ENV = "REWARDSMITH_LLM_API_KEY"

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRIES = 2
# Backoff before retry k is BACKOFF_S * 2**k: 0.5 s, 1 s, 2 s...
BACKOFF_S = 0.5
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
# Characters per token for the estimate used when a server reports no usage.
CHARS_PER_TOKEN = 4
# How much of an error body goes into an exception message.
ERROR_BODY_CHARS = 300


@dataclass
class TokenUsage:
    """Tokens spent so far (all calls of one client)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_calls: int = 0  # calls whose counts were estimated (the server sent no usage)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "estimated_calls": self.estimated_calls,
        }


@dataclass(frozen=True)
class ChatResult:
    """One chat completion: its text and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    model: str
    estimated: bool = False


class LLMClient:
    """`chat(messages) -> ChatResult` against `{base_url}/chat/completions`."""

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        url = base_url or os.environ.get(BASE_URL_ENV)
        if not url:
            raise ConfigError(
                f"no LLM endpoint: set {BASE_URL_ENV} (e.g. http://127.0.0.1:8000/v1) or pass "
                "base_url"
            )
        self.base_url = url.rstrip("/")
        self.model = model or os.environ.get(MODEL_ENV) or "default"
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self.timeout = timeout
        self.retries = retries
        self.usage = TokenUsage()
        self._lock = threading.Lock()

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        response_format: Mapping[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        extra: Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion; retries transient failures, raises `LLMError` otherwise."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if response_format is not None:
            body["response_format"] = dict(response_format)
        body.update(extra or {})
        start = time.perf_counter()
        data = self._post("/chat/completions", body)
        seconds = time.perf_counter() - start
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.base_url}: answer without choices[0].message.content") from exc
        usage = data.get("usage") or {}
        estimated = not usage
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        if estimated:
            prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
            prompt_tokens = prompt_chars // CHARS_PER_TOKEN + 1
            completion_tokens = len(text) // CHARS_PER_TOKEN + 1
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += prompt_tokens
            self.usage.completion_tokens += completion_tokens
            self.usage.estimated_calls += int(estimated)
        return ChatResult(
            text,
            prompt_tokens,
            completion_tokens,
            seconds,
            str(data.get("model", self.model)),
            estimated,
        )

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        payload = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = self.base_url + path
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(BACKOFF_S * 2 ** (attempt - 1))
            request = urllib.request.Request(url, payload, headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    result: dict[str, Any] = json.loads(response.read().decode("utf-8"))
                    return result
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:ERROR_BODY_CHARS].decode("utf-8", "replace")
                last = LLMError(f"{url}: HTTP {exc.code}: {detail}")
                if exc.code not in RETRY_STATUSES:
                    raise last from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last = LLMError(f"{url}: cannot reach the LLM endpoint: {reason}")
            except ValueError as exc:  # the body was not JSON
                raise LLMError(f"{url}: answer is not JSON: {exc}") from None
            log.debug("LLM call to %s failed (attempt %d): %s", url, attempt + 1, last)
        assert last is not None
        raise last
