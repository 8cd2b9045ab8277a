"""A small OpenAI-compatible chat client with token accounting (vLLM, Ollama, llama.cpp
server, hosted APIs).

Configuration, first found wins: the arguments (the CLI's `--llm-url`, `--llm-model`,
`--llm-key`), then `REWARDSMITH_LLM_BASE_URL` / `REWARDSMITH_LLM_MODEL` /
`REWARDSMITH_LLM_API_KEY`, then the OpenAI SDK's usual `OPENAI_BASE_URL` / `OPENAI_API_KEY`.
Without a model name the client asks the server (`GET {base_url}/models`) on first use and
takes the first model it serves; a server without that endpoint gets "default" (llama.cpp's
server and others accept any name), with a warning.

Every call's prompt and completion tokens are added to `client.usage` (the server's `usage`
field; a rough 4-characters-per-token estimate, marked as such, when the server sends none),
because RLAR's cost claim is about tokens. Transient failures (connection errors, timeouts,
HTTP 408, 409, 429 and 5xx) are retried with exponential backoff; anything else raises
`LLMError` at once. HTTP goes through `httpx` (one connection pool per client).

An endpoint is not trusted to behave: `timeout` is the total time one call may take, retries,
backoff and reading the answer included (httpx's timeouts are per read, so a server that
drips one byte a second would hold a call for as long as it liked), and an answer larger
than `max_answer_bytes` (decoded) is refused as it arrives, never read whole. An answer that
is not JSON, or JSON nested past the parser's depth, is an `LLMError`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from rewardsmith.errors import ConfigError, LLMError

log = logging.getLogger(__name__)

BASE_URL_ENV = "REWARDSMITH_LLM_BASE_URL"
MODEL_ENV = "REWARDSMITH_LLM_MODEL"
API_KEY_ENV = "REWARDSMITH_LLM_API_KEY"
# The OpenAI SDK's variables, read after rewardsmith's own.
OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
OPENAI_API_KEY_ENV = "OPENAI_API_KEY"
# The model name sent when none is configured and the server lists none.
FALLBACK_MODEL = "default"

# Seconds one call may take in all (every attempt, backoff and the reading of the answer).
DEFAULT_TIMEOUT_S = 60.0
# Bytes of a decoded answer: a chat answer of a few hundred tokens is a few kilobytes.
MAX_ANSWER_BYTES = 1_000_000
DEFAULT_RETRIES = 2
# Backoff before retry k is BACKOFF_S * 2**k: 0.5 s, 1 s, 2 s...
BACKOFF_S = 0.5
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
# The server refuses the key: worth saying so, never worth retrying.
AUTH_STATUSES = frozenset({401, 403})
# Characters per token for the estimate used when a server reports no usage.
CHARS_PER_TOKEN = 4
# How much of an error body goes into an exception message (and is read at all).
ERROR_BODY_CHARS = 300
ERROR_BODY_BYTES = 4_096


def _first_set(*values: str | None) -> str | None:
    return next((v for v in values if v), None)


def configured_base_url(base_url: str | None = None) -> str | None:
    """The endpoint the arguments and environment name, or None (see the module docstring)."""
    return _first_set(base_url, os.environ.get(BASE_URL_ENV), os.environ.get(OPENAI_BASE_URL_ENV))


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
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        url = configured_base_url(base_url)
        if not url:
            raise ConfigError(
                f"no LLM endpoint: pass --llm-url or set {BASE_URL_ENV} or {OPENAI_BASE_URL_ENV} "
                "(e.g. http://127.0.0.1:8000/v1)"
            )
        self.base_url = url.rstrip("/")
        self._model = _first_set(model, os.environ.get(MODEL_ENV))
        self.api_key = (
            api_key
            if api_key is not None
            else _first_set(os.environ.get(API_KEY_ENV), os.environ.get(OPENAI_API_KEY_ENV))
        )
        if timeout <= 0 or max_answer_bytes <= 0:
            raise ConfigError("LLM client: timeout and max_answer_bytes must be positive")
        self.timeout = timeout
        self.retries = retries
        self.max_answer_bytes = max_answer_bytes
        self.usage = TokenUsage()
        self._lock = threading.Lock()
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self._http = httpx.Client(headers=headers, timeout=timeout)

    @property
    def model(self) -> str:
        """The model name sent with each request: the configured one, else the first model the
        server lists (asked once), else "default"."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._served_model()
        return self._model

    def _served_model(self) -> str:
        try:
            data = self._request("GET", "/models", None)
            models = [m["id"] for m in data.get("data", []) if isinstance(m.get("id"), str)]
        except LLMError as exc:
            if "cannot reach" in str(exc) or any(f"HTTP {c}" in str(exc) for c in AUTH_STATUSES):
                raise
            models = []
            log.debug("no model list from %s: %s", self.base_url, exc)
        except (AttributeError, TypeError, KeyError):
            models = []
        if not models:
            log.warning(
                "LLM: no model name given and %s/models lists none; sending %r (pass --llm-model "
                "or set %s)",
                self.base_url,
                FALLBACK_MODEL,
                MODEL_ENV,
            )
            return FALLBACK_MODEL
        return str(models[0])

    def check(self) -> str:
        """Raise `LLMError` unless the endpoint answers and accepts the key (`GET /models`;
        a server without that endpoint passes when it answers at all). Returns the model
        name requests will use."""
        try:
            self._request("GET", "/models", None)
        except LLMError as exc:
            if "cannot reach" in str(exc) or any(f"HTTP {c}" in str(exc) for c in AUTH_STATUSES):
                raise
        return self.model

    def close(self) -> None:
        """Close the connection pool (the client is unusable afterwards)."""
        self._http.close()

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
        if not isinstance(text, str):
            raise LLMError(f"{self.base_url}: choices[0].message.content is not a string")
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt_tokens = _count(usage.get("prompt_tokens"))
        completion_tokens = _count(usage.get("completion_tokens"))
        estimated = not usage
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
        return self._request("POST", path, body)

    def _request(self, method: str, path: str, body: Mapping[str, Any] | None) -> dict[str, Any]:
        url = self.base_url + path
        deadline = time.monotonic() + self.timeout
        last: LLMError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                pause = BACKOFF_S * 2 ** (attempt - 1)
                if time.monotonic() + pause >= deadline:
                    break
                time.sleep(pause)
            try:
                status, raw = _Exchange(self, method, url, body, deadline).run()
            except httpx.TransportError as exc:  # connect, read, timeouts, protocol
                last = LLMError(
                    f"{url}: cannot reach the LLM endpoint: {exc or type(exc).__name__}"
                )
            except _Deadline:
                break
            else:
                if 200 <= status < 300:
                    return _json_answer(url, raw)
                detail = raw[: ERROR_BODY_CHARS * 4].decode("utf-8", "replace")[:ERROR_BODY_CHARS]
                hint = (
                    " (the server refuses the API key: pass --llm-key or set "
                    f"{API_KEY_ENV} or {OPENAI_API_KEY_ENV})"
                    if status in AUTH_STATUSES
                    else ""
                )
                last = LLMError(f"{url}: HTTP {status}: {detail}{hint}")
                if status not in RETRY_STATUSES:
                    raise last
            log.debug("LLM call to %s failed (attempt %d): %s", url, attempt + 1, last)
        if time.monotonic() >= deadline or last is None:
            after = f" (last failure: {last})" if last is not None else ""
            raise LLMError(
                f"{url}: cannot reach the LLM endpoint with a complete answer within "
                f"{self.timeout:g} s, the deadline of one call (retries included){after}"
            )
        raise last


def _count(value: object) -> int:
    """A token count the server reported (0 when it is not a plain non-negative number)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e12:
        return 0
    return int(value)


class _Deadline(Exception):
    """The call's total deadline passed."""


def _json_answer(url: str, raw: bytes) -> dict[str, Any]:
    try:
        result = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not JSON, or nested past the parser's depth
        raise LLMError(f"{url}: answer is not JSON: {str(exc)[:120]}") from None
    if not isinstance(result, dict):
        raise LLMError(f"{url}: answer is not a JSON object")
    return result


class _Exchange:
    """One HTTP request whose answer is read in a helper thread while the caller waits at
    most until the deadline: a read blocks for as long as the server waits between bytes, so
    only a watcher outside the reading thread can keep the deadline. The reader stops at its
    next chunk once the caller gave up (each read also times out by the deadline)."""

    def __init__(
        self,
        client: LLMClient,
        method: str,
        url: str,
        body: Mapping[str, Any] | None,
        deadline: float,
    ) -> None:
        self.client, self.method, self.url, self.body = client, method, url, body
        self.deadline = deadline
        self.done = threading.Event()
        self.abandoned = threading.Event()
        self.result: tuple[int, bytes] | None = None
        self.error: BaseException | None = None

    def run(self) -> tuple[int, bytes]:
        reader = threading.Thread(target=self._read, name="llm-answer", daemon=True)
        reader.start()
        if not self.done.wait(max(self.deadline - time.monotonic(), 0.0)):
            self.abandoned.set()
            raise _Deadline
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    def _read(self) -> None:
        try:
            self.result = self._stream()
        except BaseException as exc:  # handed to the waiting caller
            self.error = exc
        finally:
            self.done.set()

    def _stream(self) -> tuple[int, bytes]:
        left = max(self.deadline - time.monotonic(), 0.001)
        cap = self.client.max_answer_bytes
        with self.client._http.stream(
            self.method, self.url, json=self.body, timeout=httpx.Timeout(left)
        ) as response:
            ok = response.is_success
            limit = cap if ok else ERROR_BODY_BYTES
            declared = response.headers.get("content-length", "")
            if ok and declared.isdigit() and int(declared) > cap:
                raise _too_large(self.url, int(declared), cap)
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                if self.abandoned.is_set():
                    raise _Deadline
                size += len(chunk)
                chunks.append(chunk)
                if size > limit:
                    if ok:
                        raise _too_large(self.url, size, cap)
                    break  # an error's body: its head is all the message needs
            return response.status_code, b"".join(chunks)


def _too_large(url: str, size: int, cap: int) -> LLMError:
    return LLMError(
        f"{url}: the answer is larger than {cap:,} bytes ({size:,} or more); refused (a chat "
        "answer is a few kilobytes: check the endpoint, or raise max_answer_bytes)"
    )
