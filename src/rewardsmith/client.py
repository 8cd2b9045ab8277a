"""A client for `rewardsmith serve`: `RewardClient` (sync) and `AsyncRewardClient` (asyncio),
both on httpx.

    from rewardsmith.client import RewardClient
    with RewardClient("http://127.0.0.1:8000", token=None) as client:
        rewards = client.score([{"completion": "... #### 72", "reference": "72"}], tool="gsm8k")
        rewards[0].score, rewards[0].status                      # 1.0, 'ok'

Results are `rewardsmith.Reward`s, one per sample, in order. A 503 (the server is full or
starting) and connection errors are retried with exponential backoff, waiting at least the
server's `Retry-After`, up to `retries` times; other errors raise `ServiceError` with the
server's message (a 422 names the bad field). A sample given as a dict is read by the
server's own reader before it is sent: one the server would refuse raises `InputError`
(`sample N: ...`, naming the field) without a request. Batches larger than `batch_size` are sent in
parts and joined.

The trainer adapters (`rewardsmith.integrations.trl`, `.verl`, `.openrlhf`) score through
this client when `$REWARDSMITH_URL` is set (token: `$REWARDSMITH_TOKEN`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rewardsmith.errors import MissingDependencyError, ServiceError
from rewardsmith.samples import as_samples, sample_from_dict, sample_to_dict
from rewardsmith.types import Reward, Sample

URL_ENV = "REWARDSMITH_URL"
TOKEN_ENV = "REWARDSMITH_TOKEN"

# Seconds for one request: the server answers within its deadline (60 s by default).
DEFAULT_TIMEOUT_SECONDS = 300.0
DEFAULT_RETRIES = 8
# Backoff: BASE * 2**attempt seconds with full jitter, at most MAX (and at least Retry-After).
BACKOFF_BASE_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 30.0
# Samples per request (the server's default limit is 10,000).
DEFAULT_BATCH_SIZE = 2048

SampleLike = Sample | Mapping[str, Any]


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise MissingDependencyError("httpx", "server") from exc
    return httpx


def sample_json(sample: SampleLike) -> dict[str, Any]:
    """A sample as the JSON `/v1/score` reads (a JSONL line). A dict is read first by the
    server's own reader (`samples.sample_from_dict`): one it would refuse raises
    `InputError` here, naming the field, before anything is sent."""
    return sample_to_dict(sample if isinstance(sample, Sample) else sample_from_dict(sample))


def reward_from_json(data: Any) -> Reward:
    """A `Reward` from one item of the server's `rewards` list (`Reward.from_dict`, the
    HTTP API's layout); one that is not a reward raises `ServiceError`."""
    try:
        return Reward.from_dict(data, "api")
    except ValueError as exc:
        raise ServiceError(f"the server answered a reward that is not one: {exc}") from None


def _score_body(
    samples: Sequence[SampleLike], tool: str | None, task_map: Mapping[str, str] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"samples": [sample_to_dict(s) for s in as_samples(samples)]}
    if tool is not None:
        body["tool"] = tool
    if task_map is not None:
        body["task_map"] = dict(task_map)
    return body


def _error(response: Any) -> ServiceError:
    try:
        message = response.json().get("error") or response.text
    except ValueError:
        message = response.text
    return ServiceError(f"{response.request.url}: HTTP {response.status_code}: {message}")


def _wait_seconds(attempt: int, response: Any | None) -> float:
    """Exponential backoff with full jitter, never shorter than the server's Retry-After."""
    wait = random.uniform(0, min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2**attempt))
    if response is not None:
        with contextlib.suppress(ValueError):
            wait = max(wait, float(response.headers.get("retry-after", 0)))
    return wait


def _parse_rewards(response: Any, expected: int) -> list[Reward]:
    rewards = [reward_from_json(r) for r in response.json()["rewards"]]
    if len(rewards) != expected:
        raise ServiceError(f"the server answered {len(rewards)} rewards for {expected} samples")
    return rewards


class _Base:
    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retries: int = DEFAULT_RETRIES,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        url = url or os.environ.get(URL_ENV)
        if not url:
            raise ServiceError(f"no server URL: pass one or set ${URL_ENV}")
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self.timeout = timeout
        self.retries = retries
        self.batch_size = batch_size
        self.headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _retryable(self, attempt: int, response: Any | None, exc: Exception | None) -> bool:
        if attempt >= self.retries:
            return False
        return exc is not None or (response is not None and response.status_code == 503)


class RewardClient(_Base):
    """Synchronous client; see the module docstring. Use as a context manager or `close()`."""

    def __init__(self, url: str | None = None, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(url, token, **kwargs)
        httpx = _httpx()
        self._http = httpx.Client(base_url=self.url, headers=self.headers, timeout=self.timeout)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One API call with the retries; returns the httpx response (2xx) or raises."""
        httpx = _httpx()
        for attempt in range(self.retries + 1):
            response, error = None, None
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                error = exc
            if response is not None and response.status_code < 400:
                return response
            if not self._retryable(attempt, response, error):
                if response is None:
                    raise ServiceError(f"{self.url}{path}: cannot reach the server: {error}")
                raise _error(response)
            time.sleep(_wait_seconds(attempt, response))
        raise AssertionError("unreachable")

    def score(
        self,
        samples: Iterable[SampleLike],
        tool: str | None = None,
        task_map: Mapping[str, str] | None = None,
    ) -> list[Reward]:
        """One `Reward` per sample, in order (`tool` / `task_map`: this call's choice)."""
        batch = list(samples)
        out: list[Reward] = []
        for start in range(0, len(batch), self.batch_size):
            part = batch[start : start + self.batch_size]
            response = self.request("POST", "/v1/score", json=_score_body(part, tool, task_map))
            out += _parse_rewards(response, len(part))
        return out

    def tools(self) -> list[dict[str, Any]]:
        """The server's library: one spec dict per tool."""
        return list(self.request("GET", "/v1/tools").json()["tools"])

    def health(self) -> bool:
        """True when the server answers 200 on /health (no retries)."""
        try:
            return bool(self._http.get("/health").status_code == 200)
        except _httpx().TransportError:
            return False

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        # Picklable into trainer worker processes: the copy opens its own connections.
        state = self.__dict__.copy()
        state.pop("_http")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._http = _httpx().Client(base_url=self.url, headers=self.headers, timeout=self.timeout)


class AsyncRewardClient(_Base):
    """Asyncio client with the same methods as `RewardClient`, awaitable."""

    def __init__(self, url: str | None = None, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(url, token, **kwargs)
        httpx = _httpx()
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
        self._http = httpx.AsyncClient(
            base_url=self.url, headers=self.headers, timeout=self.timeout, limits=limits
        )

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        httpx = _httpx()
        for attempt in range(self.retries + 1):
            response, error = None, None
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                error = exc
            if response is not None and response.status_code < 400:
                return response
            if not self._retryable(attempt, response, error):
                if response is None:
                    raise ServiceError(f"{self.url}{path}: cannot reach the server: {error}")
                raise _error(response)
            await asyncio.sleep(_wait_seconds(attempt, response))
        raise AssertionError("unreachable")

    async def score(
        self,
        samples: Iterable[SampleLike],
        tool: str | None = None,
        task_map: Mapping[str, str] | None = None,
    ) -> list[Reward]:
        batch = list(samples)
        out: list[Reward] = []
        for start in range(0, len(batch), self.batch_size):
            part = batch[start : start + self.batch_size]
            body = _score_body(part, tool, task_map)
            out += _parse_rewards(await self.request("POST", "/v1/score", json=body), len(part))
        return out

    async def tools(self) -> list[dict[str, Any]]:
        return list((await self.request("GET", "/v1/tools")).json()["tools"])

    async def health(self) -> bool:
        try:
            return bool((await self._http.get("/health")).status_code == 200)
        except _httpx().TransportError:
            return False

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRewardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class RemoteScorer:
    """What the trainer adapters need of a `Scorer` (`score(samples) -> rewards`), answered
    by a server: the adapters use it when `$REWARDSMITH_URL` is set."""

    def __init__(
        self,
        tool: str | None,
        task_map: Mapping[str, str] | None = None,
        client: RewardClient | None = None,
    ) -> None:
        self.tool = tool
        self.task_map = dict(task_map) if task_map else None
        self.client = client or RewardClient()

    def score(self, samples: Iterable[SampleLike]) -> list[Reward]:
        return self.client.score(samples, tool=self.tool, task_map=self.task_map)

    def close(self) -> None:
        self.client.close()


def remote_url() -> str | None:
    """`$REWARDSMITH_URL`, when the adapters should score through a server."""
    return os.environ.get(URL_ENV, "").strip() or None


__all__ = [
    "AsyncRewardClient",
    "RemoteScorer",
    "RewardClient",
    "ServiceError",
    "remote_url",
    "reward_from_json",
    "sample_json",
]
